/**
 * Everything a global reset drops, in one object made anew by each reset (so no field can be
 * forgotten), and its snapshot as plain data. The scenario, the seed and the clock's start, mode
 * and speed are the run's, kept beside it by the simulator.
 */
import { Account, type AccountState } from './account.js';
import { Accounts } from './accounts.js';
import type { VirtualClock } from './clock.js';
import { FaultQueue, type QueuedFault } from './faults.js';
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
  /** Request ids given out to control requests that named an account, by API key (absent: none). */
  control_requests?: Record<string, number>;
  /** In order of last use, the least recently used first. */
  accounts: AccountState[];
  evicted_accounts: number;
  store: StoreState;
  /** The journal's records shown, oldest first. */
  journal: JournalRecord[];
  faults: QueuedFault[];
}

export class SimulatorState {
  readonly faults = new FaultQueue();
  readonly accounts: Accounts;
  readonly store: GenerationStore;
  readonly journal: Journal;
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
    this.accounts = new Accounts(limits.max_accounts);
    this.store = new GenerationStore(limits.max_stored_generations);
    this.journal = new Journal(limits.journal_size);
  }

  /** Drops an account and everything of it: a per-account reset, or the account dropped for the limit. */
  forgetAccount(key: string): void {
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
    return {
      clock_advanced_ms: this.clock.advancedMs,
      requests: this.requestCount,
      ...(this.controlRequests.size > 0 && { control_requests: Object.fromEntries(this.controlRequests) }),
      accounts: [...this.accounts.values()].map((account) => account.toState()),
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
    for (const [key, count] of Object.entries(data.control_requests ?? {})) state.controlRequests.set(key, count);
    const accounts = data.accounts.map((a) => Account.fromState(a, scenario, seed, storedText));
    state.accounts.restore(accounts, data.evicted_accounts);
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
