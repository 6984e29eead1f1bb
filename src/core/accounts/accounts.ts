/**
 * The accounts held, in order of last use, and the global limit on them
 * (`limits.max_accounts`): past it, the least recently used account is dropped whole, as a
 * per-account reset drops it, and its key starts afresh when it is used again.
 */
import { Account } from './account.js';

export class Accounts {
  /** In order of last use: the first is the least recently used. */
  private readonly byKey = new Map<string, Account>();
  /** The key of the last account used (the last of `byKey`, unless it was dropped since). */
  private lastUsedKey: string | undefined;
  /** Accounts dropped for the limit. */
  evicted = 0;

  constructor(private readonly maxAccounts: number) {}

  get size(): number {
    return this.byKey.size;
  }

  /** An account, without making it the most recently used (a media file or a control view is no use of it). */
  peek(key: string): Account | undefined {
    return this.byKey.get(key);
  }

  /** The account of a key, if held; this use makes it the most recently used. */
  use(key: string): Account | undefined {
    const account = this.byKey.get(key);
    // A Map keeps insertion order: moved to the end, it is the most recently used.
    if (account && this.lastUsedKey !== key) {
      this.byKey.delete(key);
      this.byKey.set(key, account);
      this.lastUsedKey = key;
    }
    return account;
  }

  /** Holds a new account, the most recently used. Returns the least recently used key to drop when the limit is passed. */
  add(account: Account): string | undefined {
    this.byKey.set(account.key, account);
    this.lastUsedKey = account.key;
    if (this.byKey.size <= this.maxAccounts) return undefined;
    this.evicted++;
    return this.byKey.keys().next().value;
  }

  delete(key: string): void {
    this.byKey.delete(key);
  }

  /** Puts back accounts in order of last use (the first the least recently used) and the eviction count. */
  restore(accounts: readonly Account[], evicted: number): void {
    this.byKey.clear();
    for (const account of accounts) this.byKey.set(account.key, account);
    this.lastUsedKey = accounts[accounts.length - 1]?.key;
    this.evicted = evicted;
  }

  /** In order of last use, the least recently used first. */
  values(): IterableIterator<Account> {
    return this.byKey.values();
  }
}
