/**
 * The simulator: the whole service as plain operations on in-memory state, driven by a virtual
 * clock. No HTTP, no filesystem, no wall clock (the adapter injects `wallClock`).
 *
 * This file builds the parts and holds what spans them, delegating each to its module: the
 * instants (`instant.ts`), the clock's moves and catching an account up (`clockMoves.ts`), request
 * ids (`requestIds.ts`), a run's scenario, state and resets (`runs.ts`), health (`health.ts`),
 * the accounts and the state (`simulatorState.ts`). The rules live in the
 * parts, one concept each (docs/architecture.md lists where each rule of the interface document
 * is): the endpoints in `videos.ts` and `images.ts`, authentication in `auth.ts`, the state machine
 * in `lifecycle.ts` over the table in `pipeline.ts`, what is stored and evicted in `generationStore.ts`, the
 * control views and live control in `generationControl.ts`.
 */
import { accountTag, type Account } from '../accounts/account.js';
import type { Accounts } from '../accounts/accounts.js';
import { apiKeyOf } from '../accounts/auth.js';
import type { ClockState, VirtualClock } from '../time/clock.js';
import * as clockMoves from '../time/clockMoves.js';
import { SimError } from '../errors.js';
import { healthOf, type Health } from './health.js';
import { readdressed } from '../requests/idempotency.js';
import type { FaultQueue } from '../faults/faults.js';
import type { Generation } from '../generations/generation.js';
import type { Image } from '../generations/image.js';
import type { Journal, JournalRecord } from '../journal/journal.js';
import { Instants, withoutTrailingSlash } from '../time/instant.js';
import { HeldConnections, boundedHold, type NetworkFault } from '../faults/network.js';
import * as requestIds from '../requests/requestIds.js';
import type { Scenario } from '../scenario/scenario.js';
import type { ShardSpec } from '../accounts/shard.js';
import { JournalListeners, freshState, refuseAccountResetOptions, resolveScenario, scenarioForReset, type SimulatorOptions } from './runs.js';
import { SimulatorState, type CoreState, type StateCapture, type StateHead, type StateRow } from './simulatorState.js';
import type { GenerationStore } from '../generations/generationStore.js';

export type { Health } from './health.js';
export type { SimulatorOptions } from './runs.js';

export class Simulator {
  readonly shard: ShardSpec | null;
  /** Connections held by network `hang` faults: the process's sockets, so they outlive resets. */
  readonly held = new HeldConnections();
  /** Waits for requests held now (`POST /_sim/requests/wait`, at most `limits.max_waits`): held by the adapters, they outlive resets. */
  readonly waits = new HeldConnections();
  /** Told of every record the journal adds, whichever journal is current (see `onJournalRecord`). */
  private readonly journalListeners = new JournalListeners();
  private state!: SimulatorState;
  private loaded: Scenario;
  private seedInUse: number;
  /** The instant the current request runs at, and the media address its answers follow. */
  private readonly instants: Instants;

  constructor(private readonly options: SimulatorOptions) {
    this.instants = new Instants(options.cdnUrl, options.wallClock, () => this.clock.now());
    this.shard = options.shard ?? null;
    this.loaded = options.scenario;
    this.seedInUse = options.runSeed ?? options.seed ?? options.scenario.seed;
    this.adopt(this.newState());
  }

  /** Calls `listener` with every record the journal adds from now on, across resets and restores (what waits listens to); returns its stop. */
  onJournalRecord(listener: (record: JournalRecord) => void): () => void {
    return this.journalListeners.add(listener);
  }

  /** Makes `state` the current one: its journal tells the listeners, and numbers on from the last one's. */
  private adopt(state: SimulatorState): void {
    this.state = this.journalListeners.adopt(state, this.state);
  }

  /** The scenario as loaded (what transcripts and state files record beside the seed and clock); a reset may load another. */
  get scenario(): Scenario {
    return this.loaded;
  }

  /** The seed in use: the override, else the scenario's, unless a reset named one. */
  get seed(): number {
    return this.seedInUse;
  }

  /** The media address the current request's answers are written on (see `Instants.cdnUrl`). */
  get cdnUrl(): string {
    return this.instants.cdnUrl;
  }

  /** The simulator's own media address, whatever the request being answered (see `Instants.ownCdnUrl`). */
  get ownCdnUrl(): string {
    return this.instants.ownCdnUrl;
  }

  /** Whether the answers being made now write their media URLs on the Host their request used. */
  get answersFollowHost(): boolean {
    return this.instants.answersFollowHost;
  }

  /**
   * Sets what the adapter learns only after the simulator is made: the media address (`cdnUrl`, an
   * http(s) URL; a trailing slash is dropped), known once the server listens. Answers stored under
   * Idempotency-Keys keep the address they were sent with (see `readdressStoredAnswers`).
   */
  configure(settings: { cdnUrl: string }): void {
    this.instants.ownCdnUrl = settings.cdnUrl;
  }

  /**
   * Gives the answers stored under Idempotency-Keys on the media address `from` the address in use
   * now, as if they had been answered on it: a restored state's answers, once the address it is
   * restored for is known (see `readdressed`).
   */
  readdressStoredAnswers(from: string): void {
    const text = readdressed(withoutTrailingSlash(from), this.instants.ownCdnUrl);
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

  /** Runs `fn` at one instant of the clock, its answers written on `mediaUrl` if given (see `Instants.atOneInstant`). */
  atOneInstant<T>(fn: () => T, mediaUrl?: string): T {
    return this.instants.atOneInstant(fn, mediaUrl);
  }

  /** The global time at which the current instant began; outside an instant, the global time. */
  instantStart(): number {
    return this.instants.startMs ?? this.clock.now();
  }

  /** The host's time (the injected wall clock) at the current instant, or now outside one. */
  hostTimeMs(): number {
    return this.instants.hostTimeMs();
  }

  /** The account an `Authorization` header names (see `auth.ts`), or the 401 (or a shard's 421) to answer. */
  authenticate(authorization: string | undefined): Account | SimError {
    const key = apiKeyOf(this.scenario, authorization, this.shard);
    return key instanceof SimError ? key : this.account(key);
  }

  /** The account of a key, made on first use (see `SimulatorState.account`). */
  account(key: string): Account {
    return this.state.account(key, this.scenario, this.seed);
  }

  /** The id of a request: within `account`, else global (see `requestIds.nextRequestId`). */
  nextRequestId(account?: Account): string {
    return requestIds.nextRequestId(this.state, account);
  }

  /** The id of a control request that names an account (see `requestIds.nextAccountControlId`). */
  nextAccountControlId(apiKey: string): string {
    return requestIds.nextAccountControlId(this.state, apiKey, accountTag(apiKey));
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
    return clockMoves.catchUpAt(this, account, this.clock.now());
  }

  /** Every account caught up with its clock (see `catchUp`). */
  catchUpAll(): void {
    const global = this.clock.now();
    for (const account of this.state.accounts.values()) clockMoves.catchUpAt(this, account, global);
  }

  /** Moves time forward (one account's, with `apiKey`) by `seconds` (see `clockMoves.advance`). */
  advance(seconds: number, apiKey?: string | null): ClockState {
    return clockMoves.advance(this, seconds, apiKey);
  }

  /** Moves time (one account's, with `apiKey`) forward to the instant `toMs` (see `clockMoves.advanceTo`). */
  advanceTo(toMs: number, apiKey?: string | null): ClockState {
    return clockMoves.advanceTo(this, toMs, apiKey);
  }

  /** The global clock, or an account's (the global one for a key never used). */
  clockState(apiKey?: string | null): ClockState {
    return clockMoves.clockState(this, apiKey);
  }

  /**
   * Drops state. With `apiKey`, only that account's, as if it had never been used. Otherwise all of
   * it, reloading the scenario (another one when `scenario` is named); the command line's overrides
   * stay, except the seed when `seed` is given.
   */
  reset(input: { scenario?: string | null; seed?: number | null; apiKey?: string | null } = {}): Health {
    if (input.apiKey) {
      refuseAccountResetOptions(input);
      this.state.forgetAccount(input.apiKey);
      return this.health();
    }
    if (input.scenario != null) this.loaded = scenarioForReset(input.scenario, this.options.loadScenario);
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

  /** What `GET /_sim/health` and a reset answer (see `healthOf`). */
  health(): Health {
    return healthOf(this);
  }

  /** The state as plain data, as it stands (nothing caught up: a transition due is applied after a restore as it would be here). */
  toState(): CoreState {
    return this.state.toState();
  }

  /** Replaces the state with one `toState` gave, keeping the run's clock and moving it by the state's advances. */
  fromState(data: CoreState): void {
    this.adopt(SimulatorState.fromState(data, this.state.clock, this.scenario, this.seed));
  }

  /**
   * The scenario as it runs: the loaded one with the seed and the overrides that survive resets
   * (`--clock`, `--speed`) applied. The clock is made from it, and `GET /_sim/scenario` shows it.
   */
  get resolvedScenario(): Scenario {
    return resolveScenario(this.scenario, this.seed, this.options);
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
    return freshState(this.resolvedScenario, () => this.hostTimeMs());
  }
}
