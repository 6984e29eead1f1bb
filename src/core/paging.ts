/**
 * The ordered lists the simulator keeps of what it stores (generations in creation order, their
 * latest changes, the order they resolved in, stored answers): any item can leave at once, and a
 * list is paged from a cursor.
 */

/**
 * How many lists a cursor can tell apart. A cursor (`GET /_sim/generations`' `cursor`, passed back
 * as `changed_since`) is a key of a keyed list times this, plus the list's tag (0 to this less 1),
 * so that a cursor given to another list than the one that answered it is recognised and refused,
 * not read as a place in a list it never came from. 0 is the start of every list. Keys up to
 * 2^37 (137 billion changes) stay exact integers.
 */
export const CURSOR_TAGS = 65536;

/** The cursor of the place after `key` in the list of `tag` (0 when no key: the start, of any list). */
export function cursorOf(key: number, tag: number): number {
  return key <= 0 ? 0 : key * CURSOR_TAGS + tag;
}

/** The key a cursor names in the list of `tag`, or null when the cursor is another list's. */
export function keyOfCursor(cursor: number, tag: number): number | null {
  if (cursor === 0) return 0;
  return cursor % CURSOR_TAGS === tag ? Math.floor(cursor / CURSOR_TAGS) : null;
}

/** Where an item records its slot in one list (-1: in none). */
export interface SlotField<T> {
  get(item: T): number;
  set(item: T, slot: number): void;
}

/** Empty slots fewer than this are never dropped in a batch. */
const COMPACT_MIN = 1024;

/**
 * Items in an order; in a keyed list, each with a number that rises along it (its key, for
 * cursors). An item that leaves empties its slot at once, so the list no longer keeps it; empty
 * slots are dropped in batches once they outnumber the items (so the list stays within twice its
 * items, and 1,024), and each item's slot, which it records itself (`SlotField`), is rewritten then.
 * Adding, removing and taking the first item cost the same at any length.
 */
export class SlotList<T> {
  /** The keys, slot for slot (a list without keys keeps none). */
  private keys: number[] | null;
  private items: (T | undefined)[] = [];
  /** Every slot before it is empty. */
  private head = 0;
  private count = 0;

  constructor(
    private readonly slot: SlotField<T>,
    { keyed = false }: { keyed?: boolean } = {},
  ) {
    this.keys = keyed ? [] : null;
  }

  get size(): number {
    return this.count;
  }

  /** Adds an item at the end; in a keyed list, `key` must not be below the last one's. */
  push(item: T, key = 0): void {
    this.slot.set(item, this.items.length);
    this.items.push(item);
    this.keys?.push(key);
    this.count++;
  }

  /** Removes an item (one not in the list is ignored). */
  remove(item: T): void {
    const i = this.slot.get(item);
    if (i < 0 || this.items[i] !== item) return;
    this.items[i] = undefined;
    this.slot.set(item, -1);
    this.count--;
    while (this.head < this.items.length && this.items[this.head] === undefined) this.head++;
    if (this.items.length - this.count > Math.max(COMPACT_MIN, this.count)) this.compact();
  }

  /** The first item, if any. */
  first(): T | undefined {
    return this.items[this.head];
  }

  /** The last item, if any. */
  last(): T | undefined {
    for (let i = this.items.length - 1; i >= this.head; i--) {
      const item = this.items[i];
      if (item !== undefined) return item;
    }
    return undefined;
  }

  /** The slot just after an item of the list (where a page after it starts). */
  after(item: T): number {
    return this.slot.get(item) + 1;
  }

  /** In a keyed list, the first slot whose key is above `key`. */
  afterKey(key: number): number {
    const keys = this.keys ?? [];
    let lo = this.head;
    let hi = keys.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if ((keys[mid] as number) <= key) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /**
   * Up to `limit` items from slot `start` on that `keep` accepts; `hasMore` says whether another
   * one follows; `lastKey` is the key of the last item taken (-1 when none or the list has no keys).
   */
  page(start: number, limit: number, keep: (item: T) => boolean): { data: T[]; hasMore: boolean; lastKey: number } {
    const data: T[] = [];
    let lastKey = -1;
    for (let i = Math.max(start, this.head); i < this.items.length; i++) {
      const item = this.items[i];
      if (item === undefined || !keep(item)) continue;
      if (data.length === limit) return { data, hasMore: true, lastKey };
      data.push(item);
      lastKey = this.keys?.[i] ?? -1;
    }
    return { data, hasMore: false, lastKey };
  }

  /** Every item, in order. */
  values(): T[] {
    const out: T[] = [];
    for (let i = this.head; i < this.items.length; i++) {
      const item = this.items[i];
      if (item !== undefined) out.push(item);
    }
    return out;
  }

  /**
   * Drops the empty slots in place: moving the items down needs no new array (a list of a hundred
   * thousand items is a large object, which a copy would leave behind until the next full
   * collection), and the array's unused end is given back when its length drops.
   */
  private compact(): void {
    const { items, keys } = this;
    let to = 0;
    for (let from = this.head; from < items.length; from++) {
      const item = items[from];
      if (item === undefined) continue;
      this.slot.set(item, to);
      items[to] = item;
      if (keys) keys[to] = keys[from] as number;
      to++;
    }
    items.length = to;
    if (keys) keys.length = to;
    this.head = 0;
  }
}
