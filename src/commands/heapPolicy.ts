/**
 * V8's heap policy for the server: the store keeps every generation live, so the room V8 leaves
 * for growth is resident memory held for nothing. Two settings (bench/README.md, "Memory: V8's
 * heap policy"):
 *
 * - The old generation may grow 30% past what is live before a full collection (`--heap-growing-percent`).
 *   V8's own adaptive policy (0) lets it grow to up to four times what is live; 30% keeps resident
 *   memory per stored generation about a quarter lower at about the same throughput, where 10%
 *   collects a large heap so often that creates and polls slow down.
 * - The young generation stops growing at 8 MB (two 4 MB semi-spaces) instead of V8's 32 MB. The
 *   simulator's short-lived objects (a request, its answer, a transcript line) fit in it: measured,
 *   a loaded server holds about 25 MB less and its resident memory varies far less between runs,
 *   for about a tenth of the poll rate (still several times plain Express's).
 *
 * A process started with node's own flags for either (on its command line or in NODE_OPTIONS) keeps
 * them; for the old generation, unless `--heap-growing-percent` or its variable is given.
 */
import { PerformanceObserver } from 'node:perf_hooks';
import { getHeapSpaceStatistics, setFlagsFromString } from 'node:v8';

export const DEFAULT_HEAP_GROWING_PERCENT = 30;

/** The young generation's size (both semi-spaces) at which it stops growing. */
const YOUNG_GENERATION_CAP_BYTES = 8 * 1024 * 1024;

/** `percent`: the old generation's growth (0: V8's own policy); `fromDefault`: not asked for on the command line. */
export function applyHeapPolicy(percent: number, fromDefault: boolean): void {
  if (!(fromDefault && nodeSets(/--heap[-_]growing[-_]percent/))) setFlagsFromString(`--heap-growing-percent=${percent}`);
  if (!nodeSets(/--(max|min)[-_]semi[-_]space[-_]size|--semi[-_]space[-_]growth[-_]factor/)) capYoungGeneration(YOUNG_GENERATION_CAP_BYTES);
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
