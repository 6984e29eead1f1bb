/**
 * The scheduler of due transitions: a binary min-heap ordered by due time, ties broken by an
 * ever-increasing sequence number so that the order is total and runs are reproducible (the design
 * of @sinonjs/fake-timers). Cancelling is O(1): the entry is marked and skipped when it surfaces.
 */

export interface ScheduledEntry<T> {
  readonly due: number;
  readonly seq: number;
  readonly payload: T;
  cancelled: boolean;
}

export class Scheduler<T> {
  private heap: ScheduledEntry<T>[] = [];
  private nextSeq = 0;
  private live = 0;

  /**
   * @param maxChain how many entries one entry may lead to in a run, itself included (a generation
   * walks at most one entry per stage). A run that goes past that for the entries it started with
   * fails loudly, instead of spinning, when entries keep scheduling entries.
   */
  constructor(private readonly maxChain = 1000) {}

  /** Number of scheduled entries not yet run or cancelled. */
  get size(): number {
    return this.live;
  }

  schedule(due: number, payload: T): ScheduledEntry<T> {
    const entry: ScheduledEntry<T> = { due, seq: this.nextSeq++, payload, cancelled: false };
    this.heap.push(entry);
    this.siftUp(this.heap.length - 1);
    this.live++;
    return entry;
  }

  cancel(entry: ScheduledEntry<T>): void {
    if (!entry.cancelled) {
      entry.cancelled = true;
      this.live--;
    }
  }

  /**
   * The payloads of the live entries in the order they would run (due time, then the order they
   * were scheduled in): a snapshot keeps this order, and scheduling them again in it gives back
   * the same runs.
   */
  pending(): T[] {
    return this.heap
      .filter((e) => !e.cancelled)
      .sort((a, b) => (this.less(a, b) ? -1 : 1))
      .map((e) => e.payload);
  }

  /** Due time of the earliest live entry, or undefined when none is scheduled. */
  peekDue(): number | undefined {
    this.dropCancelled();
    return this.heap[0]?.due;
  }

  /**
   * Runs, in (due, seq) order, every entry due at or before `until`, including entries that `run`
   * schedules while this call is running. Returns how many ran.
   */
  runUntil(until: number, run: (payload: T, due: number) => void): number {
    let count = 0;
    const limit = (this.live + 1) * this.maxChain;
    for (;;) {
      this.dropCancelled();
      const top = this.heap[0];
      if (top === undefined || top.due > until) return count;
      this.pop();
      top.cancelled = true;
      this.live--;
      run(top.payload, top.due);
      if (++count > limit) {
        throw new Error(
          `Scheduler: ${count} entries ran in one run that started with ${this.live} live; each may lead to at most ${this.maxChain}. An entry keeps rescheduling itself.`,
        );
      }
    }
  }

  private dropCancelled(): void {
    while (this.heap.length > 0 && (this.heap[0] as ScheduledEntry<T>).cancelled) this.pop();
  }

  private pop(): void {
    const last = this.heap.pop() as ScheduledEntry<T>;
    if (this.heap.length > 0) {
      this.heap[0] = last;
      this.siftDown(0);
    }
  }

  private less(a: ScheduledEntry<T>, b: ScheduledEntry<T>): boolean {
    return a.due < b.due || (a.due === b.due && a.seq < b.seq);
  }

  private siftUp(i: number): void {
    const heap = this.heap;
    const item = heap[i] as ScheduledEntry<T>;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      const p = heap[parent] as ScheduledEntry<T>;
      if (!this.less(item, p)) break;
      heap[i] = p;
      i = parent;
    }
    heap[i] = item;
  }

  private siftDown(i: number): void {
    const heap = this.heap;
    const n = heap.length;
    const item = heap[i] as ScheduledEntry<T>;
    for (;;) {
      const left = 2 * i + 1;
      if (left >= n) break;
      const right = left + 1;
      const child =
        right < n && this.less(heap[right] as ScheduledEntry<T>, heap[left] as ScheduledEntry<T>) ? right : left;
      if (!this.less(heap[child] as ScheduledEntry<T>, item)) break;
      heap[i] = heap[child] as ScheduledEntry<T>;
      i = child;
    }
    heap[i] = item;
  }
}
