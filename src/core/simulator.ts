/**
 * The simulator: the whole service as plain operations on in-memory state, driven by a virtual
 * clock. No HTTP, no filesystem, no wall clock (the adapter injects `wallClock`).
 *
 * This file builds the parts and holds what spans them: the clock and its instants, the accounts
 * and their request ids, catching an account up with its clock, and resets. The rules live in the
 * parts, one concept each (docs/architecture.md lists where each rule of the interface document
 * is): the endpoints in `videos.ts` and `image.ts`, authentication in `auth.ts`, the state machine
 * in `lifecycle.ts` over the table in `pipeline.ts`, what is stored and evicted in `store.ts`, the
 * control views and live control in `generationControl.ts`.
 */
import { Account, accountTag } from './account.js';
import type { Accounts } from './accounts.js';
import { apiKeyOf, keyRefusal } from './auth.js';
import { VirtualClock, secondsToMs, type ClockMode, type ClockState } from './clock.js';
import { SimError, fail } from './errors.js';
import { readdressed } from './idempotency.js';
import type { FaultQueue } from './faults.js';
import type { Generation } from './generation.js';
import type { Image } from './image.js';
import type { Journal, JournalRecord } from './journal.js';
import type { LimitsHealth } from './limits.js';
import { HeldConnections, boundedHold, type NetworkFault } from './network.js';
import { accountControlRequestId, accountRequestId, globalRequestId } from './requestIds.js';
import * as lifecycle from './lifecycle.js';
import type { Scenario } from './scenario.js';
import type { ShardSpec } from './shard.js';
import { SimulatorState, type CoreState, type StateCapture, type StateHead, type StateRow } from './simulatorState.js';
import type { GenerationStore } from './store.js';

export interface SimulatorOptions {
  scenario: Scenario;
  /** Resolves a scenario name or path (for `reset`); any error it throws becomes a 400, param scenario. */
  loadScenario?: (name: string) => Scenario;
  /** Overrides that survive resets (the command line's --seed, --clock, --speed). */
  seed?: number;
  clockMode?: ClockMode;
  speed?: number;
  /**
   * The seed in use at first, when it is neither the override nor the scenario's: a run that a
   * file goes on with (a reset that named a seed began it). Default: the override, else the scenario's.
   */
  runSeed?: number;
  /** Wall-clock milliseconds, for realtime mode. */
  wallClock: () => number;
  /** The address written into `output.url`, `thumbnail_url` and image `url`, an http(s) URL (see `configure`). */
  cdnUrl: string;
  /** Which shard of N this simulator is (null: the only one). Kept across resets. */
  shard?: ShardSpec | null;
}

/** The furthest one clock move goes (the most `seconds` of `POST /_sim/clock/advance` takes). */
const MAX_ADVANCE_MS = 31_536_000_000;

/** Where the manual clock starts unless the scenario sets `clock.start`. */
const DEFAULT_MANUAL_START = '2026-01-01T00:00:00.000Z';

export interface Health {
  status: 'ok';
  scenario: string;
  seed: number;
  clock: ClockState;
  limits: LimitsHealth;
  /** Connections held now by network `hang` and `slow` faults (at most the scenario's `limits.max_hung_connections`). */
  network: { hung: number };
  /** Which shard of N this simulator is; null when it is the only one. */
  shard: ShardSpec | null;
}

export class Simulator {
  readonly shard: ShardSpec | null;
  /** Connections held by network `hang` faults: the process's sockets, so they outlive resets. */
  readonly held = new HeldConnections();
  /**
   * Waits for requests held now (`POST /_sim/requests/wait`), at most the scenario's
   * `limits.max_waits`: the adapters hold them (a connection each, or a page's promise), so, like
   * held connections, they outlive resets.
   */
  readonly waits = new HeldConnections();
  /** Told of every record the journal adds, whichever journal is current (see `onJournalRecord`). */
  private readonly journalListeners = new Set<(record: JournalRecord) => void>();
  private readonly journalGrew = (record: JournalRecord): void => {
    for (const listener of this.journalListeners) listener(record);
  };
  private state!: SimulatorState;
  private loaded: Scenario;
  private seedInUse: number;
  private mediaUrl: string;
  /** The wall-clock reading that `atOneInstant` holds while it runs, if it runs. */
  private heldWallMs: number | undefined;
  private instantStartMs: number | undefined;
  /** The media address `atOneInstant` was given for the request it runs, if any. */
  private instantMediaUrl: string | undefined;

  constructor(private readonly options: SimulatorOptions) {
    this.mediaUrl = withoutTrailingSlash(options.cdnUrl);
    this.shard = options.shard ?? null;
    this.loaded = options.scenario;
    this.seedInUse = options.runSeed ?? options.seed ?? options.scenario.seed;
    this.adopt(this.newState());
  }

  /**
   * Calls `listener` with every record the journal adds from now on (the journal grew), across
   * resets and restores: the one signal that what waits for requests listens to. Returns the
   * function that stops it.
   */
  onJournalRecord(listener: (record: JournalRecord) => void): () => void {
    this.journalListeners.add(listener);
    return () => void this.journalListeners.delete(listener);
  }

  /** Makes `state` the current one: its journal tells the listeners, and numbers on from the last one's. */
  private adopt(state: SimulatorState): void {
    const previous = (this.state as SimulatorState | undefined)?.journal.seq ?? 0;
    state.journal.continueFrom(previous);
    state.journal.onRecord = this.journalGrew;
    this.state = state;
  }

  /** The scenario as loaded (what transcripts and state files record beside the seed and clock); a reset may load another. */
  get scenario(): Scenario {
    return this.loaded;
  }

  /** The seed in use: the override, else the scenario's, unless a reset named one. */
  get seed(): number {
    return this.seedInUse;
  }

  /**
   * The media address written into `output.url`, `thumbnail_url` and image `url`, without a
   * trailing slash: the one the current request's answer follows (see `atOneInstant`), else the
   * simulator's own.
   */
  get cdnUrl(): string {
    return this.instantMediaUrl ?? this.mediaUrl;
  }

  /**
   * The simulator's own media address, whatever the request being answered: what transcripts and
   * state files record as the address they were made on.
   */
  get ownCdnUrl(): string {
    return this.mediaUrl;
  }

  /** Whether the answers being made now write their media URLs on the Host their request used (see `atOneInstant`). */
  get answersFollowHost(): boolean {
    return this.instantMediaUrl !== undefined;
  }

  /**
   * Sets what the adapter learns only after the simulator is made: the media address (`cdnUrl`, an
   * http(s) URL; a trailing slash is dropped), known once the server listens. Answers stored under
   * Idempotency-Keys keep the address they were sent with (see `readdressStoredAnswers`).
   */
  configure(settings: { cdnUrl: string }): void {
    this.mediaUrl = withoutTrailingSlash(settings.cdnUrl);
  }

  /**
   * Gives the answers stored under Idempotency-Keys on the media address `from` the address in use
   * now, as if they had been answered on it: a restored state's answers, once the address it is
   * restored for is known (see `readdressed`).
   */
  readdressStoredAnswers(from: string): void {
    const text = readdressed(withoutTrailingSlash(from), this.mediaUrl);
    if (text === undefined) return;
    for (const account of this.state.accounts.values()) account.idempotency.readdress(text);
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
   * clock that moves only between requests. Nested calls share the outer instant. `mediaUrl`:
   * the media address the answers made within it are written on (a request's Host's, when the
   * simulator follows the Host it is reached under), else the simulator's own.
   */
  atOneInstant<T>(fn: () => T, mediaUrl?: string): T {
    if (this.heldWallMs !== undefined) return fn();
    this.heldWallMs = this.options.wallClock();
    this.instantStartMs = this.clock.now();
    this.instantMediaUrl = mediaUrl;
    try {
      return fn();
    } finally {
      this.heldWallMs = undefined;
      this.instantStartMs = undefined;
      this.instantMediaUrl = undefined;
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

  /** The account an `Authorization` header names (see `auth.ts`), or the 401 (or a shard's 421) to answer. */
  authenticate(authorization: string | undefined): Account | SimError {
    const key = apiKeyOf(this.scenario, authorization, this.shard);
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
    if (account) return accountRequestId(account.tag, ++account.requestCount);
    return globalRequestId(++this.state.requestCount);
  }

  /**
   * The id of a control request that names an account (`?api_key=`): counted within that key's
   * control requests (`req_<tag>_sim_000001`), apart from its /v1 requests (so watching an account
   * never shifts its client's ids), and whatever other accounts do: the same on one simulator as
   * on the shard that owns the account. A reset of the account restarts the count.
   */
  nextAccountControlId(apiKey: string): string {
    return accountControlRequestId(accountTag(apiKey), this.state.nextControlRequest(apiKey));
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

  /**
   * Moves time forward (one account's, with `apiKey`) and applies every transition that falls due.
   * An account's clock moves only for a key the scenario accepts (it makes the account when it is
   * new); any other key is 400 `invalid_parameter`, param `api_key`, and makes nothing.
   */
  advance(seconds: number, apiKey?: string | null): ClockState {
    const ms = secondsToMs(seconds);
    if (apiKey) {
      this.refuseClockKey(apiKey);
      const account = this.account(apiKey);
      account.offsetMs += ms;
      this.catchUp(account);
      return this.clockState(apiKey);
    }
    this.clock.advance(ms);
    this.catchUpAll();
    return this.clockState();
  }

  /**
   * Moves time (one account's, with `apiKey`) forward to the instant `toMs`, applying every
   * transition that falls due; stays where it is when it is already there or past it. So the same
   * move can be sent twice, or to every shard, and every clock ends at that instant.
   */
  advanceTo(toMs: number, apiKey?: string | null): ClockState {
    if (apiKey) this.refuseClockKey(apiKey);
    const behindMs = toMs - (apiKey ? this.clock.now() + (this.state.accounts.peek(apiKey)?.offsetMs ?? 0) : this.clock.now());
    if (behindMs > MAX_ADVANCE_MS) {
      throw fail('invalid_parameter', {
        param: 'to',
        message: `'to' is ${behindMs / 1000} seconds ahead of the clock; a move goes at most ${MAX_ADVANCE_MS / 1000} seconds (a year) ahead.`,
      });
    }
    return behindMs > 0 ? this.advance(behindMs / 1000, apiKey) : this.clockState(apiKey);
  }

  /** 400 `invalid_parameter`, param `api_key`, for a key the scenario refuses: it has no clock to move. */
  private refuseClockKey(apiKey: string): void {
    const refused = keyRefusal(this.scenario, apiKey);
    if (refused === undefined) return;
    const shown = apiKey.length > 100 ? `${apiKey.slice(0, 100)}…` : apiKey;
    throw fail('invalid_parameter', {
      param: 'api_key',
      message: `Scenario '${this.scenario.name}' refuses the API key '${shown}' (${refused.code}), so it has no account whose clock could move: ${refused.message}`,
    });
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
        this.loaded = this.options.loadScenario(input.scenario);
      } catch (e) {
        if (e instanceof SimError) throw e;
        throw fail('invalid_parameter', { param: 'scenario', message: e instanceof Error ? e.message : String(e) });
      }
    }
    this.seedInUse = input.seed ?? this.options.seed ?? this.scenario.seed;
    this.adopt(this.newState());
    return this.health();
  }

  /**
   * A network fault as it is carried out on a socket: a hang takes a place among the held
   * connections (the adapter gives it back with `held.release()` once the connection closes), or,
   * past `limits.max_hung_connections`, is a `close`.
   */
  onSocket(fault: NetworkFault): NetworkFault {
    return boundedHold(fault, this.held, this.scenario.limits.max_hung_connections);
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

  /** What `GET /_sim/health` and a reset answer: the scenario, the seed, the clock, the limits' counts. */
  health(): Health {
    return {
      status: 'ok',
      scenario: this.scenario.name,
      seed: this.seed,
      clock: this.clockState(),
      limits: {
        accounts: this.accounts.size,
        stored_generations: this.store.storedGenerations,
        evicted_accounts: this.accounts.evicted,
        evicted_generations: this.store.evictedGenerations,
      },
      network: { hung: this.held.held },
      shard: this.shard,
    };
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
   * wall-clock anchor) and moving it by the state's advances.
   */
  fromState(data: CoreState): void {
    this.adopt(SimulatorState.fromState(data, this.state.clock, this.scenario, this.seed));
  }

  /**
   * The scenario as it runs: the loaded one with the seed and the overrides that survive resets
   * (`--clock`, `--speed`) applied. The clock is made from it, and `GET /_sim/scenario` shows it.
   */
  get resolvedScenario(): Scenario {
    const { clock } = this.scenario;
    return {
      ...this.scenario,
      // A scenario object given without it has prompt triggers on (`Scenario.prompt_triggers`).
      prompt_triggers: this.scenario.prompt_triggers !== false,
      seed: this.seed,
      clock: { ...clock, mode: this.options.clockMode ?? clock.mode, speed: this.options.speed ?? clock.speed },
    };
  }

  /**
   * The state as it stands, as a snapshot's head and rows made as they are read (nothing caught
   * up, as `toState`): what happens after this call does not show in them.
   */
  captureState(): StateCapture {
    return this.state.capture();
  }

  /**
   * Replaces the state, once `finish` is called, with the one whose head is `head` and whose rows
   * are added one by one (see `fromState` for the clock).
   */
  loadState(head: StateHead): { add(row: StateRow): void; finish(): void } {
    const loader = SimulatorState.loader(head, this.state.clock, this.scenario, this.seed);
    return {
      add: (row) => loader.add(row),
      finish: () => {
        this.adopt(loader.finish());
      },
    };
  }

  private newState(): SimulatorState {
    const { mode, speed, start: scenarioStart } = this.resolvedScenario.clock;
    // The manual clock starts at the scenario's start (a fixed default, for determinism); the
    // realtime clock at the wall-clock time unless the scenario sets a start.
    const start = scenarioStart ?? (mode === 'manual' ? DEFAULT_MANUAL_START : null);
    const clock = new VirtualClock(
      mode,
      speed,
      start === null ? Math.round(this.hostTimeMs()) : Date.parse(start),
      () => this.hostTimeMs(),
    );
    return new SimulatorState(clock, this.scenario.limits);
  }
}

function withoutTrailingSlash(url: string): string {
  return url.replace(/\/+$/, '');
}
