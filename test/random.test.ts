import seedrandom from 'seedrandom';
import { describe, expect, it } from 'vitest';
import { createStream } from '../src/core/random.js';

describe('a random stream', () => {
  it("draws, number for number, the sequence of seedrandom's alea seeded with its seed and purpose", () => {
    const purposes: (string | number)[][] = [
      ['sk_test_bench', 'video', 0],
      ['sk_test_bench', 'image', 123_456],
      ['requests'],
      ['sk_live_' + 'x'.repeat(255), 'claim_linking', 'a lighthouse on a cliff at dawn, waves crashing below.', ''],
      ['日本語のプロンプト 🙂', 'video', 7],
      ['', '', ''],
    ];
    for (const seed of [0, 1, 42, 7919, 2 ** 31 - 1, 4_294_967_295]) {
      for (const purpose of purposes) {
        const ours = createStream(seed, ...purpose);
        const theirs = seedrandom.alea(`${seed}\u0000${purpose.join('\u0000')}`);
        const drawn = Array.from({ length: 200 }, () => ours.next());
        expect(drawn).toEqual(Array.from({ length: 200 }, () => theirs()));
        expect(ours.drawn()).toBe(200);
      }
    }
  });

  it('keeps its helpers on the same draws: ids, integers, chances, weights and normal deviates', () => {
    const a = createStream(42, 'sk_test_x', 'video', 3);
    const b = seedrandom.alea('42\u0000sk_test_x\u0000video\u00003');
    const alphabet = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
    const id = `vid_${Array.from({ length: 24 }, () => alphabet[Math.floor(b() * 62)]).join('')}`;
    expect(a.token(24, 'vid_')).toBe(id);
    expect(a.int(10)).toBe(Math.floor(b() * 10));
    expect(a.chance(0.5)).toBe(b() < 0.5);
    expect(a.chance(0)).toBe(false);
    expect(a.weighted(['x', 'y', 'z'], (s) => (s === 'y' ? 2 : 1))).toBe(((x) => (x < 1 ? 'x' : x < 3 ? 'y' : 'z'))(b() * 4));
    const u = 1 - b();
    const v = b();
    expect(a.normal()).toBe(Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v));
    a.skip(5);
    for (let i = 0; i < 5; i++) b();
    expect(a.next()).toBe(b());
    expect(a.drawn()).toBe(24 + 1 + 1 + 1 + 2 + 5 + 1);
  });
});
