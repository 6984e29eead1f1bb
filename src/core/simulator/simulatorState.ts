/**
 * Everything a global reset drops, in one object made anew by each reset (so no field can be
 * forgotten), and its snapshot as plain data. The scenario, the seed and the clock's start, mode
 * and speed are the run's, kept beside it by the simulator.
 *
 * A snapshot is a head (the counters) and a sequence of rows, one per item of the state (an
 * account's control request count, an account, a stored answer, a generation, an account's change
 * count, an image, a journal record, a queued fault), so that a
 * state of any size is written and read a row at a time. `capture` takes it at once, in time
 * linear in the number of items but without copying what cannot change any more (resolved
 * generations, stored answers, images), and makes its rows as they are read; `loader` puts a state
 * back from its rows as they come.
 */
import { Account, type AccountRow, type AccountState } from '../accounts/account.js';
import { Accounts } from '../accounts/accounts.js';
import type { VirtualClock } from '../time/clock.js';
import { FaultQueue, type QueuedFault } from '../faults/faults.js';
import { generationFromState, generationToState, type Generation, type GenerationState } from '../generations/generation.js';
import { IdempotencyLedger, type AnswersCapture, type IdempotencyEntryState } from '../requests/idempotency.js';
import { Journal, type JournalRecord } from '../journal/journal.js';
import * as lifecycle from '../generations/lifecycle.js';
import type { Scenario } from '../scenario/scenario.js';
import { GenerationStore, type ImageState, type StoreCounters, type StoreState } from '../generations/generationStore.js';

/**
 * Everything a global reset drops, as plain data (see `SimulatorState.toState`): the state a snapshot
 * holds. The scenario, the seed and the clock's start, mode and speed are the run's, kept beside it.
 */
export interface CoreState {
  /** What every clock advance added to the global clock. */
  clock_advanced_ms: number;
  /** Global request ids given out (`req_0000000012`: 12). */
  requests: number;
  /** Request ids given out to control requests that named an account, by API key (absent: none). */
  control_requests?: Record<string, number>;
  /** In order of last use, the least recently used first (each with its requests the journal dropped, when any). */
  accounts: (AccountState & { journal_dropped?: number })[];
  evicted_accounts: number;
  store: StoreState;
  /** The journal's records shown, oldest first. */
  journal: JournalRecord[];
  /** The journal's last `seq` and what it dropped (absent in a state kept before: see `JournalHead`). */
  journal_head?: JournalHead;
  faults: QueuedFault[];
}

/**
 * What a snapshot keeps of the journal beside its records: the `seq` it numbers on from, and the
 * records it dropped for its capacity (of every account; each account's are on its account row,
 * `journal_dropped`). A state kept before had none: its records are numbered as they come, and it
 * dropped nothing.
 */
export interface JournalHead {
  seq: number;
  dropped: number;
}

/** A snapshot's head: the counters of the state, which its rows do not hold. */
export interface StateHead {
  clock_advanced_ms: number;
  requests: number;
  evicted_accounts: number;
  store: StoreCounters;
  /** Absent in a snapshot taken before the journal numbered its records. */
  journal?: JournalHead;
}

/** An account as a snapshot's row holds it: with the count of its requests the journal dropped, when any. */
type AccountStateRow = AccountRow & { journal_dropped?: number };

/** A stored answer as a snapshot's row holds it: its account's key beside it. */
type IdempotencyRow = IdempotencyEntryState & { account: string };

/**
 * One item of the state as plain data, in the order a snapshot gives them: the control request
 * counts of the keys that control requests named (least recently counted first), each account (in
 * order of last use) followed by its stored answers (in expiry order), the stored generations (in
 * creation order), the accounts' change counts that their stored generations do not show, the
 * stored images (in the order they were stored), the journal's records (oldest first) and the
 * queued faults (in the order they match). An account's scheduled transitions are no row: they
 * follow from its in-flight generations (see `loader`).
 */
export type StateRow =
  | { control_requests: { key: string; count: number } }
  | { account: AccountStateRow }
  | { idempotency: IdempotencyRow }
  | { generation: GenerationState }
  | { account_changes: { account: string; changes: number } }
  | { image: ImageState }
  | { journal: JournalRecord }
  | { fault: QueuedFault };

/** The state as it was when captured: its head, and its rows, made as they are read. */
export interface StateCapture {
  readonly head: StateHead;
  /** How many rows `rows` gives. */
  readonly count: number;
  /**
   * The rows; what changed in the state since the capture does not show in them. With `release`,
   * the capture lets go of each item once its row is made, and its rows can be read only once: a
   * compaction, which writes them over many turns of the event loop, then holds what it has still
   * to write, not what the state has dropped since it began.
   */
  rows(release?: boolean): Generator<StateRow, void, undefined>;
}

/** Puts a state back from its rows: `add` each as it comes, then `finish`. */
export interface StateLoader {
  add(row: StateRow): void;
  finish(): SimulatorState;
}

export class SimulatorState {
  readonly faults: FaultQueue;
  readonly accounts: Accounts;
  readonly store: GenerationStore;
  readonly journal: Journal;
  /** Every account's answers stored under an Idempotency-Key, bounded together. */
  readonly idempotencyKeys: IdempotencyLedger;
  /** Requests answered without an account: the global request ids count them. */
  requestCount = 0;
  /**
   * Control requests that named an account (`?api_key=`), by key, least recently counted first:
   * their request ids count them, apart from the account's `/v1` requests. Kept whether or not the
   * account exists (a control call creates none), dropped with the account, and bounded like the
   * accounts (`limits.max_accounts`).
   */
  readonly controlRequests = new Map<string, number>();

  private readonly maxControlKeys: number;

  constructor(
    readonly clock: VirtualClock,
    limits: Scenario['limits'],
  ) {
    this.maxControlKeys = limits.max_accounts;
    this.faults = new FaultQueue(limits.max_queued_faults);
    this.accounts = new Accounts(limits.max_accounts);
    this.store = new GenerationStore(limits.max_stored_generations);
    this.journal = new Journal(limits.journal_size);
    this.idempotencyKeys = new IdempotencyLedger(limits.max_idempotency_keys);
  }

  /**
   * The account of a key, made on first use (on `scenario` with `seed`, its clock at the global
   * time now); this use makes it the most recently used. Past `limits.max_accounts`, the least
   * recently used account is dropped whole (see `accounts.ts`).
   */
  account(key: string, scenario: Scenario, seed: number): Account {
    const held = this.accounts.use(key);
    if (held) return held;
    const account = new Account(key, scenario, seed, this.clock.now(), this.idempotencyKeys);
    const dropped = this.accounts.add(account);
    if (dropped !== undefined) this.forgetAccount(dropped);
    return account;
  }

  /** Drops an account and everything of it: a per-account reset, or the account dropped for the limit. */
  forgetAccount(key: string): void {
    this.accounts.peek(key)?.idempotency.clear();
    this.accounts.delete(key);
    this.controlRequests.delete(key);
    this.store.forgetAccount(key);
    this.journal.forget(key);
    this.faults.forget(key);
  }

  /** The next count of control requests that named `key` (see `controlRequests`). */
  nextControlRequest(key: string): number {
    const count = (this.controlRequests.get(key) ?? 0) + 1;
    this.controlRequests.delete(key);
    this.controlRequests.set(key, count);
    if (this.controlRequests.size > this.maxControlKeys) this.controlRequests.delete(this.controlRequests.keys().next().value as string);
    return count;
  }

  toState(): CoreState {
    const ranks = this.idempotencyKeys.ranks();
    return {
      clock_advanced_ms: this.clock.advancedMs,
      requests: this.requestCount,
      ...(this.controlRequests.size > 0 && { control_requests: Object.fromEntries(this.controlRequests) }),
      accounts: [...this.accounts.values()].map((account) => ({ ...account.toState(ranks), ...this.journalDropped(account.key) })),
      evicted_accounts: this.accounts.evicted,
      store: this.store.toState(),
      journal: this.journal.toState(),
      journal_head: this.journalHead(),
      faults: this.faults.toState(),
    };
  }

  /**
   * The state now, as a snapshot's head and rows. What can still change is copied now (accounts'
   * counters, in-flight generations' own fields, the lists of stored answers, generations, images,
   * journal records and queued faults); what cannot (a resolved generation never changes again; a
   * fate, a request, a stored answer or an image is replaced, never changed) is kept by reference
   * and written out as its row is read. Linear in the number of items, with little allocation.
   */
  capture(): StateCapture {
    const controlRequests = [...this.controlRequests];
    // A loop, not a closure: nothing the rows are made from refers to `ranks`, which holds every stored answer.
    const ranks = this.idempotencyKeys.ranks();
    const accounts: { row: AccountStateRow; answers: AnswersCapture }[] = [];
    for (const account of this.accounts.values()) {
      accounts.push({ row: { ...account.toRow(), ...this.journalDropped(account.key) }, answers: account.idempotency.capture(ranks) });
    }
    const { counters, generations, images, accountChanges } = this.store.capture();
    // An in-flight generation as it is now: its own fields copied (what they hold is replaced, never changed).
    const held = generations.map((g) => (g.completedAt === null ? { ...g } : g));
    const journal = this.journal.capture();
    const faults = this.faults.toState();
    const head: StateHead = {
      clock_advanced_ms: this.clock.advancedMs,
      requests: this.requestCount,
      evicted_accounts: this.accounts.evicted,
      store: counters,
      journal: this.journalHead(),
    };
    const answers = accounts.reduce((sum, a) => sum + a.answers.count, 0);
    return {
      head,
      count: controlRequests.length + accounts.length + answers + held.length + accountChanges.length + images.length + journal.count + faults.length,
      *rows(release = false) {
        for (const [key, count] of itemsOf(controlRequests, release)) yield { control_requests: { key, count } };
        for (const { row, answers: stored } of itemsOf(accounts, release)) {
          yield { account: row };
          for (const entry of stored.entries(release)) yield { idempotency: { account: row.key, ...entry } };
        }
        for (const g of itemsOf(held, release)) yield { generation: generationToState(g) };
        for (const [account, changes] of itemsOf(accountChanges, release)) yield { account_changes: { account, changes } };
        for (const image of itemsOf(images, release)) yield { image };
        for (const record of journal.records(release)) yield { journal: record };
        for (const fault of itemsOf(faults, release)) yield { fault };
      },
    };
  }

  /** The journal's head for a snapshot (see `JournalHead`). */
  private journalHead(): JournalHead {
    return { seq: this.journal.seq, dropped: this.journal.dropped() };
  }

  /** What an account's row holds of the journal: its requests the journal dropped, when there are any. */
  private journalDropped(key: string): { journal_dropped?: number } {
    const dropped = this.journal.dropped(key);
    return dropped > 0 ? { journal_dropped: dropped } : {};
  }

  /**
   * Puts back a state from its head and its rows, on `clock` (moved by the state's advances). Each
   * account's in-flight generations are scheduled again in the order their current stages end,
   * ties in the order of their latest change: a generation's stage end is scheduled with the change
   * that enters the stage, so that is the order they were scheduled in. A row that is not what the
   * state holds throws as it is added.
   */
  static loader(head: StateHead, clock: VirtualClock, scenario: Scenario, seed: number): StateLoader {
    const controlRequests: [string, number][] = [];
    const accounts: Account[] = [];
    const journalDropped: [string, number][] = [];
    const answers = new Map<string, IdempotencyEntryState[]>();
    const generations: Generation[] = [];
    const accountChanges: [string, number][] = [];
    const images: ImageState[] = [];
    const journal: JournalRecord[] = [];
    const faults: QueuedFault[] = [];
    // The ledger of the state being loaded: its accounts' stored answers go in it as they come.
    const state = new SimulatorState(clock, scenario.limits);
    const ledger = state.idempotencyKeys;
    return {
      add(row) {
        if ('control_requests' in row) controlRequests.push([row.control_requests.key, row.control_requests.count]);
        else if ('account' in row) {
          accounts.push(Account.fromRow(row.account, scenario, seed, ledger));
          answers.set(row.account.key, []);
          if (typeof row.account.journal_dropped === 'number') journalDropped.push([row.account.key, row.account.journal_dropped]);
        } else if ('idempotency' in row) {
          const { account, ...entry } = row.idempotency;
          const list = answers.get(account);
          if (list === undefined) throw new Error(`a stored answer of account ${JSON.stringify(account)}, which no account row before it names`);
          list.push(entry);
        } else if ('generation' in row) generations.push(generationFromState(row.generation));
        else if ('account_changes' in row) accountChanges.push([row.account_changes.account, row.account_changes.changes]);
        else if ('image' in row) images.push(row.image);
        else if ('journal' in row) journal.push(row.journal);
        else if ('fault' in row) faults.push(row.fault);
        else throw new Error(`a row of no known kind (${Object.keys(row).join(', ') || 'empty'})`);
      },
      finish() {
        clock.advancedMs = head.clock_advanced_ms;
        state.requestCount = head.requests;
        for (const [key, count] of controlRequests) state.controlRequests.set(key, count);
        for (const account of accounts) account.idempotency.fromState(answers.get(account.key) ?? []);
        state.accounts.restore(accounts, head.evicted_accounts);
        state.idempotencyKeys.restore(accounts.map((account) => account.idempotency));
        state.store.restore(head.store, generations, images, accountChanges);
        const scheduled = new Map<string, { g: Generation; due: number }[]>();
        for (const g of generations) {
          if (g.completedAt !== null) continue;
          const list = scheduled.get(g.account) ?? [];
          list.push({ g, due: lifecycle.currentStageEnd(g) });
          scheduled.set(g.account, list);
        }
        for (const account of accounts) {
          const list = scheduled.get(account.key);
          if (!list) continue;
          list.sort((a, b) => a.due - b.due || a.g.changeSeq - b.g.changeSeq);
          for (const { g } of list) lifecycle.scheduleAgain(account, g);
        }
        state.journal.fromState(journal);
        if (head.journal !== undefined) {
          state.journal.continueFrom(head.journal.seq);
          state.journal.restoreDropped(head.journal.dropped, journalDropped);
        }
        state.faults.fromState(faults);
        return state;
      },
    };
  }

  /** The state `toState` gave, on `clock` (see `loader`). */
  static fromState(data: CoreState, clock: VirtualClock, scenario: Scenario, seed: number): SimulatorState {
    const loader = SimulatorState.loader(
      {
        clock_advanced_ms: data.clock_advanced_ms,
        requests: data.requests,
        evicted_accounts: data.evicted_accounts,
        store: { next_seq: data.store.next_seq, change_seq: data.store.change_seq, evicted_generations: data.store.evicted_generations },
        ...(data.journal_head && { journal: data.journal_head }),
      },
      clock,
      scenario,
      seed,
    );
    for (const [key, count] of Object.entries(data.control_requests ?? {})) loader.add({ control_requests: { key, count } });
    for (const { idempotency, scheduled: _scheduled, ...account } of data.accounts) {
      loader.add({ account });
      for (const entry of idempotency) loader.add({ idempotency: { account: account.key, ...entry } });
    }
    for (const generation of data.store.generations) loader.add({ generation });
    for (const [account, changes] of Object.entries(data.store.account_changes ?? {})) loader.add({ account_changes: { account, changes } });
    for (const image of data.store.images) loader.add({ image });
    for (const record of data.journal) loader.add({ journal: record });
    for (const fault of data.faults) loader.add({ fault });
    return loader.finish();
  }
}

/** The items of `list` in order; with `release`, each is taken out of the list as it is given (the list is then read once). */
function* itemsOf<T>(list: T[], release: boolean): Generator<T, void, undefined> {
  for (let i = 0; i < list.length; i++) {
    const item = list[i] as T;
    if (release) list[i] = undefined as T;
    yield item;
  }
}
