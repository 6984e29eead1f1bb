/**
 * V8's heap policy for the server: the store keeps every generation live, so the room V8 leaves
 * for growth is resident memory held for nothing. Two settings (bench/README.md, "Memory: V8's
 * heap policy"):
 *
 * - The old generation may grow 30% past what is live before a full collection (`--heap-growing-percent`).
 *   V8's own adaptive policy (0) lets it grow to up to four times what is live; 30% keeps resident
 *   memory per stored generation about a quarter lower at about the same throughput, where 10%
 *   collects a large heap so often that creates and polls slow down. With the default percent, the
 *   heap's limit also stops at a ceiling (`HEAP_CEILING_BYTES`, 576 MB): past it the old generation
 *   grows 5% of what is live. Every limit of the default scenario filled with the largest values a
 *   client may send holds about 550 MB live (docs/limits.md), where 30% would add 165 MB of room
 *   to the resident memory; a heap of a few hundred thousand short generations (the request-path
 *   benchmarks) stays below the ceiling and keeps its 30%.
 * - The young generation stops growing at 8 MB (two 4 MB semi-spaces) instead of V8's 32 MB. The
 *   simulator's short-lived objects (a request, its answer, a transcript line) fit in it: measured,
 *   a loaded server holds about 25 MB less and its resident memory varies far less between runs,
 *   for about a tenth of the poll rate (still several times plain Express's).
 *
 * A process started with node's own flags for either (on its command line or in NODE_OPTIONS) keeps
 * them; for the old generation, unless `--heap-growing-percent` or its variable is given. A percent
 * given (flag, variable or node's own) is kept as given, without the ceiling.
 */
import { constants, PerformanceObserver, type PerformanceEntry } from 'node:perf_hooks';
import { getHeapSpaceStatistics, getHeapStatistics, setFlagsFromString } from 'node:v8';
import { every, systemClock } from '../hostClock.js';

export const DEFAULT_HEAP_GROWING_PERCENT = 30;

/** With the default percent, the old generation's size past which it grows `CEILING_GROWING_PERCENT` only. */
const HEAP_CEILING_BYTES = 576 * 1024 * 1024;

/** How far the old generation grows past what is live, at least, once it would otherwise pass the ceiling. */
const CEILING_GROWING_PERCENT = 5;

/**
 * Collections are observed for the ceiling while the heap holds more than `WATCH_ABOVE_BYTES`,
 * until it holds less than `WATCH_BELOW_BYTES`, checked every `WATCH_CHECK_MS`: well below the
 * ceiling, where the default percent cannot bring the heap's limit near it (past about 340 MB live).
 */
const WATCH_ABOVE_BYTES = 256 * 1024 * 1024;
const WATCH_BELOW_BYTES = 192 * 1024 * 1024;
const WATCH_CHECK_MS = 1000;

/** The young generation's size (both semi-spaces) at which it stops growing. */
const YOUNG_GENERATION_CAP_BYTES = 8 * 1024 * 1024;

/** `percent`: the old generation's growth (0: V8's own policy); `fromDefault`: not asked for on the command line. */
export function applyHeapPolicy(percent: number, fromDefault: boolean): void {
  if (!(fromDefault && nodeSets(/--heap[-_]growing[-_]percent/))) {
    setFlagsFromString(`--heap-growing-percent=${percent}`);
    if (fromDefault) keepUnderCeiling(percent);
  }
  if (!nodeSets(/--(max|min)[-_]semi[-_]space[-_]size|--semi[-_]space[-_]growth[-_]factor/)) capYoungGeneration(YOUNG_GENERATION_CAP_BYTES);
}

/**
 * After each full collection, the percent the next one grows the heap by: `percent`, unless the
 * heap could then pass `HEAP_CEILING_BYTES`, and `CEILING_GROWING_PERCENT` at least. V8 reads the
 * percent when a full collection sets the heap's next limit, and the collection observed here has
 * set its own already: so the percent is chosen one collection ahead, for a heap that has grown to
 * its current limit with all of it live (as a store filling up does).
 *
 * An observer of collections costs every collection, the young generation's too (measured, a
 * fraction of a millisecond each): so collections are observed only while the heap is large, as a
 * check every `WATCH_CHECK_MS` finds it (past `WATCH_ABOVE_BYTES`, until it is back under
 * `WATCH_BELOW_BYTES`); a heap that small keeps the default percent anyway.
 */
function keepUnderCeiling(percent: number): void {
  let current = percent;
  let collections: PerformanceObserver | undefined;
  const use = (next: number): void => {
    if (next === current) return;
    current = next;
    setFlagsFromString(`--heap-growing-percent=${next}`);
  };
  const check = every(systemClock, WATCH_CHECK_MS, () => {
    const used = getHeapStatistics().used_heap_size;
    if (collections === undefined && used >= WATCH_ABOVE_BYTES) {
      collections = new PerformanceObserver((list) => {
        if (list.getEntries().some(isFullCollection)) use(nextGrowingPercent(percent, current, oldGenerationBytes()));
      });
      collections.observe({ entryTypes: ['gc'] });
    } else if (collections !== undefined && used < WATCH_BELOW_BYTES) {
      collections.disconnect();
      collections = undefined;
      use(percent);
    }
  });
  check.unref?.();
}

/**
 * The percent for the next full collection (see `keepUnderCeiling`): `percent` (the default), or
 * less when a heap of `liveBytes` grown by `current` percent would leave less room under the
 * ceiling, and `CEILING_GROWING_PERCENT` at least.
 */
export function nextGrowingPercent(percent: number, current: number, liveBytes: number): number {
  const limit = Math.max(liveBytes, 1) * (1 + current / 100);
  return Math.max(CEILING_GROWING_PERCENT, Math.min(percent, Math.floor((100 * (HEAP_CEILING_BYTES - limit)) / limit)));
}

function isFullCollection(entry: PerformanceEntry): boolean {
  return (entry as { detail?: { kind?: number } }).detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR;
}

/** The bytes of the old generation's objects, just after a full collection what is live: every space but the young generation's. */
function oldGenerationBytes(): number {
  let bytes = 0;
  for (const space of getHeapSpaceStatistics()) if (!space.space_name.startsWith('new_')) bytes += space.space_used_size;
  return bytes;
}

/**
 * V8 reads the young generation's size limit only when it starts, but its growth factor whenever it
 * grows the young generation (always in a collection, by a factor of 2): so after each collection
 * until the cap is reached, the size is read, and at the cap the factor becomes 1.
 */
function capYoungGeneration(capBytes: number): void {
  const reached = (): boolean => (getHeapSpaceStatistics().find((s) => s.space_name === 'new_space')?.space_size ?? 0) >= capBytes;
  if (reached()) return setFlagsFromString('--semi-space-growth-factor=1');
  const collections = new PerformanceObserver(() => {
    if (!reached()) return;
    setFlagsFromString('--semi-space-growth-factor=1');
    collections.disconnect();
  });
  collections.observe({ entryTypes: ['gc'] });
}

function nodeSets(flag: RegExp): boolean {
  return [...process.execArgv, process.env.NODE_OPTIONS ?? ''].some((arg) => flag.test(arg));
}
