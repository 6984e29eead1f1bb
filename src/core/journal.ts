/**
 * The request journal: /v1 requests in arrival order, bounded to the scenario's journal size (the
 * oldest entries go first).
 */

export interface JournalEntry {
  method: string;
  /** Path with its query string. */
  path: string;
  status: number;
  /** The API key of the account, null when no key was accepted. */
  account: string | null;
  /** ISO 8601, on the account's clock (global clock when no account). */
  at: string;
  request_id: string;
  /** Only on creates: the merged negative prompt the render used (request plus account default). */
  negative_prompt_effective?: string | null;
  /** Set when the simulator itself decided the answer (a queued or scenario fault). */
  fault?: string;
}

export class Journal {
  private entries: JournalEntry[] = [];
  private start = 0;

  constructor(private readonly capacity: number) {}

  record(entry: JournalEntry): void {
    this.entries.push(entry);
    if (this.entries.length - this.start > this.capacity) this.start++;
    if (this.start > 1024 && this.start * 2 > this.entries.length) {
      this.entries = this.entries.slice(this.start);
      this.start = 0;
    }
  }

  /** The most recent `limit` entries (of one account, when given), oldest first. */
  recent(limit: number, account?: string): { data: JournalEntry[]; has_more: boolean } {
    const out: JournalEntry[] = [];
    let more = false;
    for (let i = this.entries.length - 1; i >= this.start; i--) {
      const e = this.entries[i] as JournalEntry;
      if (account !== undefined && e.account !== account) continue;
      if (out.length === limit) {
        more = true;
        break;
      }
      out.push(e);
    }
    return { data: out.reverse(), has_more: more };
  }

  /** Drops one account's entries (a per-account reset). */
  forget(account: string): void {
    this.entries = this.entries.slice(this.start).filter((e) => e.account !== account);
    this.start = 0;
  }
}
