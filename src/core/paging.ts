/**
 * Cursor paging over lists kept in ascending order (generations by creation, changes by sequence
 * number): a binary search for where a page starts, and the scan that fills it.
 */

/** Index of the first item whose key is above `key`, in a list ascending by `keyOf`. */
export function firstAfter<T>(list: readonly T[], key: number, keyOf: (item: T) => number): number {
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (keyOf(list[mid] as T) <= key) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * Up to `limit` items from `start` on that `keep` accepts; `hasMore` says whether another one
 * follows; `last` is the index of the last item taken (-1 when none).
 */
export function takePage<T>(
  list: readonly T[],
  start: number,
  limit: number,
  keep: (item: T, index: number) => boolean,
): { data: T[]; hasMore: boolean; last: number } {
  const data: T[] = [];
  let last = -1;
  for (let i = start; i < list.length; i++) {
    const item = list[i] as T;
    if (!keep(item, i)) continue;
    if (data.length === limit) return { data, hasMore: true, last };
    data.push(item);
    last = i;
  }
  return { data, hasMore: false, last };
}
