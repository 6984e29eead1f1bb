/**
 * The CLI's heap policy (src/commands/heapPolicy.ts): with the default percent, the old
 * generation grows 30% past what is live until its limit would pass the ceiling (576 MB), then 5%.
 * The percent is chosen one full collection ahead, so a heap filling up with live data never gets
 * a limit past the ceiling by more than its last 5%.
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_HEAP_GROWING_PERCENT, nextGrowingPercent } from '../src/commands/heapPolicy.js';

const MB = 1024 * 1024;
const CEILING = 576 * MB;

describe('the heap policy', () => {
  it('keeps the default percent for a heap well under the ceiling (the request-path benchmarks hold a few hundred MB at most)', () => {
    for (const live of [1, 20 * MB, 100 * MB, 300 * MB, 340 * MB]) expect(nextGrowingPercent(DEFAULT_HEAP_GROWING_PERCENT, 30, live)).toBe(30);
  });

  it('grows the heap less as its limit nears the ceiling, and 5% past it', () => {
    expect(nextGrowingPercent(30, 30, 400 * MB)).toBe(10);
    expect(nextGrowingPercent(30, 30, 545 * MB)).toBe(5);
    expect(nextGrowingPercent(30, 5, 545 * MB)).toBe(5);
    expect(nextGrowingPercent(30, 5, 2000 * MB)).toBe(5);
  });

  it('gives the default back once the heap is small again (a reset)', () => {
    expect(nextGrowingPercent(30, 5, 50 * MB)).toBe(30);
  });

  it('never lets a heap that fills up with live data get a limit past the ceiling, but for 5% of what is live', () => {
    for (const growth of [1.01, 1.1, 1.3]) {
      let live = 10 * MB;
      let percent = 30;
      for (let collections = 0; collections < 200; collections++) {
        expect(live * (1 + percent / 100)).toBeLessThanOrEqual(Math.max(CEILING, live * 1.05) + 1);
        // The next collection finds the heap grown (at most to its limit), all of it live.
        const next = Math.min(live * growth, live * (1 + percent / 100));
        percent = nextGrowingPercent(30, percent, live);
        live = next;
      }
    }
  });
});
