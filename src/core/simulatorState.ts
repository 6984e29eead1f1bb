/**
 * Everything a global reset drops, in one object made anew by each reset (so no field can be
 * forgotten), and its snapshot as plain data. The scenario, the seed and the clock's start, mode
 * and speed are the run's, kept beside it by the simulator.
 */
import { Account, type AccountState } from './account.js';
import { Accounts } from './accounts.js';
import type { VirtualClock } from './clock.js';
import { FaultQueue, type QueuedFault } from './faults.js';
import { IdempotencyLedger } from './idempotency.js';
import { Journal, type JournalRecord } from './journal.js';
import * as lifecycle from './lifecycle.js';
import type { Scenario } from './scenario.js';
import { GenerationStore, type StoreState } from './store.js';

/**
 * Everything a global reset drops, as plain data (see `SimulatorState.toState`): the state a snapshot
 * holds. The scenario, the seed and the clock's start, mode and speed are the run's, kept beside it.
 */
export interface CoreState {
  /** What every clock advance added to the global clock. */
  clock_advanced_ms: number;
  /** Global request ids given out (`req_0000000012`: 12). */
  requests: number;
  /** In order of last use, the least recently used first. */
  accounts: AccountState[];
  evicted_accounts: number;
  store: StoreState;
  /** The journal's records shown, oldest first. */
  journal: JournalRecord[];
  faults: QueuedFault[];
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

  constructor(
    readonly clock: VirtualClock,
    limits: Scenario['limits'],
  ) {
    this.faults = new FaultQueue(limits.max_queued_faults);
    this.accounts = new Accounts(limits.max_accounts);
    this.store = new GenerationStore(limits.max_stored_generations);
    this.journal = new Journal(limits.journal_size);
    this.idempotencyKeys = new IdempotencyLedger(limits.max_idempotency_keys);
  }

  /** Drops an account and everything of it: a per-account reset, or the account dropped for the limit. */
  forgetAccount(key: string): void {
    this.accounts.peek(key)?.idempotency.clear();
    this.accounts.delete(key);
    this.store.forgetAccount(key);
    this.journal.forget(key);
    this.faults.forget(key);
  }

  toState(): CoreState {
    const ranks = this.idempotencyKeys.ranks();
    return {
      clock_advanced_ms: this.clock.advancedMs,
      requests: this.requestCount,
      accounts: [...this.accounts.values()].map((account) => account.toState(ranks)),
      evicted_accounts: this.accounts.evicted,
      store: this.store.toState(),
      journal: this.journal.toState(),
      faults: this.faults.toState(),
    };
  }

  /** The state `toState` gave, on `clock` (moved by the state's advances), each account's transitions scheduled again. */
  static fromState(data: CoreState, clock: VirtualClock, scenario: Scenario, seed: number, storedText?: (body: string) => string): SimulatorState {
    const state = new SimulatorState(clock, scenario.limits);
    clock.advancedMs = data.clock_advanced_ms;
    state.requestCount = data.requests;
    const accounts = data.accounts.map((a) => Account.fromState(a, scenario, seed, state.idempotencyKeys, storedText));
    state.accounts.restore(accounts, data.evicted_accounts);
    state.idempotencyKeys.restore(accounts.map((account) => account.idempotency));
    state.store.fromState(data.store);
    data.accounts.forEach((a, i) => {
      for (const id of a.scheduled) {
        const g = state.store.get(id);
        if (g) lifecycle.scheduleAgain(accounts[i] as Account, g);
      }
    });
    state.journal.fromState(data.journal);
    state.faults.fromState(data.faults);
    return state;
  }
}
