/**
 * writeAtEndOfTurn (src/http/turnWrites.ts): the answers of one event-loop turn are written
 * together once its I/O is handled, in the order they were made.
 */
import { describe, expect, it } from 'vitest';
import { writeAtEndOfTurn } from '../src/http/turnWrites.js';

const turnEnds = (): Promise<void> => new Promise((resolve) => writeAtEndOfTurn(resolve));

describe('writeAtEndOfTurn', () => {
  it('runs nothing at once; then every write of the turn, in the order asked for', async () => {
    const written: string[] = [];
    writeAtEndOfTurn(() => written.push('a'));
    writeAtEndOfTurn(() => written.push('b'));
    await Promise.resolve();
    expect(written).toEqual([]);
    writeAtEndOfTurn(() => written.push('c'));
    await turnEnds();
    expect(written).toEqual(['a', 'b', 'c']);
  });

  it('a write asked for while the turn’s writes run is written with the next turn’s', async () => {
    const written: string[] = [];
    writeAtEndOfTurn(() => {
      written.push('first');
      writeAtEndOfTurn(() => written.push('later'));
      expect(written).toEqual(['first']);
    });
    await turnEnds();
    expect(written).toEqual(['first']);
    await turnEnds();
    expect(written).toEqual(['first', 'later']);
  });

  it('a write that throws does not keep the others of its turn from running', async () => {
    const written: string[] = [];
    const thrown = new Promise<unknown>((resolve) => process.once('uncaughtException', resolve));
    writeAtEndOfTurn(() => {
      throw new Error('a bug');
    });
    writeAtEndOfTurn(() => written.push('after it'));
    expect(((await thrown) as Error).message).toBe('a bug');
    expect(written).toEqual(['after it']);
  });
});
