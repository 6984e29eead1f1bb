/**
 * The global limits of a scenario's `limits`: what is stored is counted across accounts, and past a
 * bound the oldest goes first. This module holds the queue that finds "the oldest"; the rules are
 * applied by the store (`store.ts`: generations and images) and the accounts (`accounts.ts`).
 */

/** What `GET /_sim/health` shows of the limits. */
export interface LimitsHealth {
  /** Accounts held now. */
  accounts: number;
  /** Generations held now, in-flight ones included. */
  stored_generations: number;
  /** Accounts dropped for `max_accounts` since the last global reset. */
  evicted_accounts: number;
  /** Resolved generations dropped for `max_stored_generations` since the last global reset. */
  evicted_generations: number;
}

/**
 * A first-in, first-out queue whose entries may also leave by other ways (an account reset or
 * dropped, a video's keyframe leaving with it): those are skipped when reached, and removed in
 * batches once they outnumber the entries still stored, so the queue stays within twice the
 * stored count (and 1,024).
 */
export class OldestFirst<T> {
  private items: T[] = [];
  private head = 0;

  constructor(private readonly isStored: (item: T) => boolean) {}

  push(item: T): void {
    this.items.push(item);
  }

  /** The entries still stored, oldest first, without taking them. */
  peekAll(): T[] {
    return this.items.slice(this.head).filter(this.isStored);
  }

  /** Removes and returns the oldest entry still stored; undefined when there is none. */
  take(): T | undefined {
    while (this.head < this.items.length) {
      const item = this.items[this.head++] as T;
      if (this.isStored(item)) return item;
    }
    return undefined;
  }

  /** Releases the entries taken or gone, in batches; `stored`: how many entries are still stored. */
  prune(stored: number): void {
    const queued = this.items.length - this.head;
    if (queued > 2 * stored + 1024) {
      this.items = this.items.slice(this.head).filter(this.isStored);
      this.head = 0;
    } else if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
  }
}
