/**
 * The simulator: the whole service as plain operations on in-memory state, driven by a virtual
 * clock. No HTTP, no filesystem, no wall clock (the adapter injects `wallClock`).
 *
 * This file builds the parts and holds what spans them: the clock and its instants, the accounts
 * and their request ids, catching an account up with its clock, and resets. The rules live in the
 * parts, one concept each (docs/architecture.md lists where each rule of the interface document
 * is): the endpoints in `videos.ts` and `image.ts`, authentication in `auth.ts`, the state machine
 * in `lifecycle.ts` over the table in `pipeline.ts`, what is stored and evicted in `store.ts`, the
 * control views and live control in `control.ts`.
 */
import { Account } from './account.js';
import type { Accounts } from './accounts.js';
import { apiKeyOf } from './auth.js';
import { VirtualClock, secondsToMs, type ClockMode, type ClockState } from './clock.js';
import { controlGenerations, health, type GenerationsInput, type Health } from './control.js';
import { SimError, fail } from './errors.js';
import type { FaultQueue } from './faults.js';
import type { Generation } from './generation.js';
import type { Image } from './image.js';
import type { Journal } from './journal.js';
import * as lifecycle from './lifecycle.js';
import type { Scenario } from './scenario.js';
import { SimulatorState, type CoreState } from './simulatorState.js';
import type { GenerationStore } from './store.js';

export interface SimulatorOptions {
  scenario: Scenario;
  /** Resolves a scenario name or path (for `reset`); any error it throws becomes a 400, param scenario. */
  loadScenario?: (name: string) => Scenario;
  /** Overrides that survive resets (the command line's --seed, --clock, --speed). */
  seed?: number;
  clockMode?: ClockMode;
  speed?: number;
  /** Wall-clock milliseconds, for realtime mode. */
  wallClock: () => number;
  /** The address written into `output.url`, `thumbnail_url` and image `url`. */
  cdnUrl: string;
}

/** Where the manual clock starts unless the scenario sets `clock.start`. */
const DEFAULT_MANUAL_START = '2026-01-01T00:00:00.000Z';

export class Simulator {
  scenario: Scenario;
  seed: number;
  cdnUrl: string;
  private state: SimulatorState;
  /** The wall-clock reading that `atOneInstant` holds while it runs, if it runs. */
  private heldWallMs: number | undefined;
  private instantStartMs: number | undefined;

  constructor(private readonly options: SimulatorOptions) {
    this.cdnUrl = options.cdnUrl.replace(/\/+$/, '');
    this.scenario = options.scenario;
    this.seed = options.seed ?? options.scenario.seed;
    this.state = this.newState();
  }

  get clock(): VirtualClock {
    return this.state.clock;
  }

  get journal(): Journal {
    return this.state.journal;
  }

  get faults(): FaultQueue {
    return this.state.faults;
  }

  get store(): GenerationStore {
    return this.state.store;
  }

  get accounts(): Accounts {
    return this.state.accounts;
  }

  /**
   * Runs `fn` at one instant: every reading of the clock within it (a reset's new clock included)
   * gives the same time, in realtime mode too. So one request's timestamps agree with each other
   * and with the time it was handled at, which is what makes a realtime run replay identically on a
   * clock that moves only between requests. Nested calls share the outer instant.
   */
  atOneInstant<T>(fn: () => T): T {
    if (this.heldWallMs !== undefined) return fn();
    this.heldWallMs = this.options.wallClock();
    this.instantStartMs = this.clock.now();
    try {
      return fn();
    } finally {
      this.heldWallMs = undefined;
      this.instantStartMs = undefined;
    }
  }

  /**
   * The global time at which the current instant (see `atOneInstant`) began, before anything done
   * within it moved the clock (an advance, a reset); outside an instant, the global time.
   */
  instantStart(): number {
    return this.instantStartMs ?? this.clock.now();
  }

  /** The host's time (the injected wall clock) at the current instant, or now outside one. */
  hostTimeMs(): number {
    return this.heldWallMs ?? this.options.wallClock();
  }

  /** The account an `Authorization` header names (see `auth.ts`), or the 401 to answer. */
  authenticate(authorization: string | undefined): Account | SimError {
    const key = apiKeyOf(this.scenario, authorization);
    return key instanceof SimError ? key : this.account(key);
  }

  /**
   * The account of a key, made on first use; this use makes it the most recently used. Past
   * `limits.max_accounts`, the least recently used account is dropped whole (see `accounts.ts`).
   */
  account(key: string): Account {
    const { accounts } = this.state;
    const held = accounts.use(key);
    if (held) return held;
    const account = new Account(key, this.scenario, this.seed, this.clock.now(), this.state.idempotencyKeys);
    const dropped = accounts.add(account);
    if (dropped !== undefined) this.state.forgetAccount(dropped);
    return account;
  }

  /**
   * The id of a request. Ids count requests, so that the same requests give the same ids: an
   * authenticated /v1 request counts within its account (`req_<tag>_000001`, whatever other
   * accounts do meanwhile); any other request counts globally (`req_0000000001`). Resets restart
   * the counts.
   */
  nextRequestId(account?: Account): string {
    if (account) return `req_${account.tag}_${String(++account.requestCount).padStart(6, '0')}`;
    return `req_${String(++this.state.requestCount).padStart(10, '0')}`;
  }

  /** How many global request ids were given out since the start or the last global reset. */
  get globalRequestCount(): number {
    return this.state.requestCount;
  }

  /** Counts ids up to `n` as given out (a restored state's), so that none is given out again; never moves back. */
  skipGlobalRequestIdsTo(n: number): void {
    if (n > this.state.requestCount) this.state.requestCount = n;
  }

  /** The account's virtual time, once every transition due by then has been applied. */
  catchUp(account: Account): number {
    return this.catchUpAt(account, this.clock.now());
  }

  /** Every account caught up with its clock (see `catchUp`). */
  catchUpAll(): void {
    const global = this.clock.now();
    for (const account of this.state.accounts.values()) this.catchUpAt(account, global);
  }

  private catchUpAt(account: Account, globalNowMs: number): number {
    const now = account.now(globalNowMs);
    const { scheduler } = account;
    const due = scheduler.peekDue();
    if (due !== undefined && due <= now) scheduler.runUntil(now, (g, at) => lifecycle.endStage(this, account, g, at));
    return now;
  }

  /** Moves time forward (one account's, with `apiKey`) and applies every transition that falls due. */
  advance(seconds: number, apiKey?: string | null): ClockState {
    const ms = secondsToMs(seconds);
    if (apiKey) {
      const account = this.account(apiKey);
      account.offsetMs += ms;
      this.catchUp(account);
      return this.clockState(apiKey);
    }
    this.clock.advance(ms);
    this.catchUpAll();
    return this.clockState();
  }

  /** The global clock, or an account's (the global one for a key never used). */
  clockState(apiKey?: string | null): ClockState {
    return this.clock.state(apiKey ? (this.state.accounts.peek(apiKey)?.offsetMs ?? 0) : 0);
  }

  /**
   * Drops state. With `apiKey`, only that account's, as if it had never been used. Otherwise all of
   * it, reloading the scenario (another one when `scenario` is named); the command line's overrides
   * stay, except the seed when `seed` is given.
   */
  reset(input: { scenario?: string | null; seed?: number | null; apiKey?: string | null } = {}): Health {
    if (input.apiKey) {
      if (input.scenario != null || input.seed != null) {
        throw fail('invalid_parameter', {
          param: input.scenario != null ? 'scenario' : 'seed',
          message: 'A reset with api_key resets one account; scenario and seed apply to the whole simulator, so leave them out.',
        });
      }
      this.state.forgetAccount(input.apiKey);
      return this.health();
    }
    if (input.scenario != null) {
      if (!this.options.loadScenario) {
        throw fail('invalid_parameter', { param: 'scenario', message: 'This simulator was built without a scenario loader.' });
      }
      try {
        this.scenario = this.options.loadScenario(input.scenario);
      } catch (e) {
        if (e instanceof SimError) throw e;
        throw fail('invalid_parameter', { param: 'scenario', message: e instanceof Error ? e.message : String(e) });
      }
    }
    this.seed = input.seed ?? this.options.seed ?? this.scenario.seed;
    this.state = this.newState();
    return this.health();
  }

  /** A stored video by id, whatever its account (media files), once its account caught up. */
  findGeneration(id: string): Generation | undefined {
    const g = this.store.get(id);
    if (!g) return undefined;
    // A media file is not a use of the account: it is not made the most recently used.
    this.catchUp(this.state.accounts.peek(g.account) as Account);
    return g.evicted ? undefined : g; // the transitions just applied may have evicted it
  }

  /** A stored image by id, whatever its account (media files). */
  findImage(id: string): Image | undefined {
    return this.store.image(id);
  }

  // ---- the control API's views, also for inspection in-process (see `control.ts`) ----

  health(): Health {
    return health(this);
  }

  controlGenerations(input: GenerationsInput) {
    return controlGenerations(this, input);
  }

  /**
   * The state as plain data, as it stands (nothing caught up: a transition due but not yet applied
   * is applied after a restore as it would have been here).
   */
  toState(): CoreState {
    return this.state.toState();
  }

  /**
   * Replaces the state with one `toState` gave, keeping the clock (made for the run: its start and
   * wall-clock anchor) and moving it by the state's advances. `storedText` maps each body stored
   * under an Idempotency-Key (a restore on another media address rewrites the address in it).
   */
  fromState(data: CoreState, storedText?: (body: string) => string): void {
    this.state = SimulatorState.fromState(data, this.state.clock, this.scenario, this.seed, storedText);
  }

  private newState(): SimulatorState {
    const mode = this.options.clockMode ?? this.scenario.clock.mode;
    // The manual clock starts at the scenario's start (a fixed default, for determinism); the
    // realtime clock at the wall-clock time unless the scenario sets a start.
    const start = this.scenario.clock.start ?? (mode === 'manual' ? DEFAULT_MANUAL_START : null);
    const clock = new VirtualClock(
      mode,
      this.options.speed ?? this.scenario.clock.speed,
      start === null ? Math.round(this.hostTimeMs()) : Date.parse(start),
      () => this.hostTimeMs(),
    );
    return new SimulatorState(clock, this.scenario.limits);
  }
}
