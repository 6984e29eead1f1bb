/**
 * The simulator's core: the whole service as plain operations on in-memory state, driven by a
 * virtual clock. No HTTP, no filesystem, no wall clock (the adapter injects `wallClock`).
 *
 * Every rule of the interface document lives either here or in the module this file names:
 * states and stages in `pipeline.ts`, fields in `generation.ts`, errors in `errors.ts`, accounts in
 * `account.ts`, rate limits in `rateLimit.ts`, idempotency in `idempotency.ts`.
 */
import { Account, type AccountHooks } from './account.js';
import { imageView, type AspectRatio, type Image } from './image.js';
import { VirtualClock, isoTime, secondsToMs, type ClockMode, type ClockState } from './clock.js';
import { SimError, fail } from './errors.js';
import { FaultQueue } from './faults.js';
import {
  cancelView,
  controlView,
  videoView,
  type Generation,
  type VideoRequest,
  type VideoView,
} from './generation.js';
import { Journal } from './journal.js';
import { OldestFirst, type LimitsHealth } from './limits.js';
import { matchesPath } from './pathPattern.js';
import { createStream } from './random.js';
import { firstAfter, takePage } from './paging.js';
import { drawFate, failedFate, stageFailureCodes, type ForcedOutcome } from './fate.js';
import { CANCELABLE_STATUSES, RESOLVED_STATUSES, type TimedStage, type VideoStatus } from './pipeline.js';
import { sample, type Resolution, type Scenario } from './scenario.js';

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

export interface CreateVideoInput {
  model: string;
  prompt: string;
  negative_prompt?: string | null;
  duration_seconds?: number | null;
  resolution?: Resolution | null;
  keyframe_id?: string | null;
}

export interface CreateImageInput {
  prompt: string;
  aspect_ratio?: AspectRatio | null;
}

export interface ListInput {
  limit?: number;
  after?: string | null;
  status?: VideoStatus | null;
}

export interface Health {
  status: 'ok';
  scenario: string;
  seed: number;
  clock: ClockState;
  limits: LimitsHealth;
}

/** Where the manual clock starts unless the scenario sets `clock.start`. */
export const DEFAULT_MANUAL_START = '2026-01-01T00:00:00.000Z';

/**
 * Everything a global reset drops: made anew by `reset`, so no field can be forgotten.
 */
class SimulatorState {
  readonly faults = new FaultQueue();
  /** In order of last use: the first is the least recently used (see `Simulator.account`). */
  readonly accounts = new Map<string, Account>();
  /** The key of the last account used (the last of `accounts`, unless it was dropped since). */
  lastUsedKey: string | undefined;
  readonly journal: Journal;
  /** Every stored generation across accounts, in creation order; evicted ones are dropped lazily. */
  allGenerations: Generation[] = [];
  /** Evicted generations still in `allGenerations`: the stored ones are the rest. */
  removedFromAll = 0;
  nextGlobalSeq = 0;
  requestCount = 0;
  /** Every change to a generation gets the next number. */
  changeSeq = 0;
  /** The change log as two parallel arrays (sequence numbers, generations), oldest first. */
  changeSeqs: number[] = [];
  changed: Generation[] = [];
  /** Resolved generations across accounts in the order they resolved, and how many are stored. */
  readonly resolved = new OldestFirst<Generation>((g) => !g.evicted);
  storedResolved = 0;
  /** Images across accounts in the order they were stored, and how many are stored. */
  readonly images = new OldestFirst<Image>((image) => this.accounts.get(image.account)?.images.get(image.id) === image);
  storedImages = 0;
  evictedAccounts = 0;
  evictedGenerations = 0;

  constructor(
    readonly clock: VirtualClock,
    journalSize: number,
  ) {
    this.journal = new Journal(journalSize);
  }
}

export class Simulator {
  scenario: Scenario;
  seed: number;
  cdnUrl: string;
  private state: SimulatorState;
  /** One object for every account (not one per account: memory per account bounds max_accounts). */
  private readonly accountHooks: AccountHooks = {
    onChange: (g) => this.recordChange(g),
    onResolved: (g) => this.onResolved(g),
    onImageStored: (image) => this.onImageStored(image),
  };
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

  // ---- accounts and authentication (interface document, section 5) ----

  /** Resolves the `Authorization` header to an account, or answers the section-5 401. */
  authenticate(authorization: string | undefined): Account | SimError {
    try {
      return this.account(this.keyOf(authorization));
    } catch (e) {
      if (e instanceof SimError) return e;
      throw e;
    }
  }

  private keyOf(authorization: string | undefined): string {
    if (authorization === undefined || authorization.trim() === '') throw fail('missing_api_key');
    const match = /^Bearer +(\S+) *$/i.exec(authorization);
    if (!match) {
      throw fail('invalid_api_key', {
        message: 'Malformed Authorization header. Use "Authorization: Bearer sk_test_..." (the scheme Bearer, one space, the key).',
      });
    }
    const key = match[1] as string;
    const { auth, accounts } = this.scenario;
    // Own keys only: a key named 'valueOf' or '__proto__' must not find Object.prototype's members.
    const spec = Object.hasOwn(accounts, key) ? accounts[key] : undefined;
    if (auth.revoked_keys.includes(key) || spec?.revoked) throw fail('revoked_api_key');
    const known = spec !== undefined || (auth.key_prefix !== null && key.startsWith(auth.key_prefix) && key.length > auth.key_prefix.length);
    if (!known) {
      throw fail('invalid_api_key', {
        message:
          auth.key_prefix !== null
            ? `Invalid API key. This simulator accepts any key that starts with "${auth.key_prefix}", for example "Authorization: Bearer ${auth.key_prefix}123".`
            : `Invalid API key. Scenario '${this.scenario.name}' accepts only the keys listed under its accounts.`,
      });
    }
    return key;
  }

  /**
   * The account of a key, created on first use; this use makes it the most recently used. Past
   * `limits.max_accounts`, the least recently used account is dropped whole, as a per-account reset
   * drops it (its key starts afresh when it is used again).
   */
  account(key: string): Account {
    const { state } = this;
    let account = state.accounts.get(key);
    if (account) {
      // A Map keeps insertion order: moved to the end, it is the most recently used.
      if (state.lastUsedKey !== key) {
        state.accounts.delete(key);
        state.accounts.set(key, account);
        state.lastUsedKey = key;
      }
      return account;
    }
    account = new Account(key, this.scenario, this.seed, this.clock.now(), this.accountHooks);
    state.accounts.set(key, account);
    state.lastUsedKey = key;
    if (state.accounts.size > this.scenario.limits.max_accounts) {
      this.forgetAccount(state.accounts.keys().next().value as string);
      state.evictedAccounts++;
    }
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

  /** The account's virtual time, once every transition due by then has been applied. */
  catchUp(account: Account): number {
    const now = account.now(this.clock.now());
    account.applyDueTransitions(now);
    return now;
  }

  /** Every account caught up with its clock (see `catchUp`). */
  catchUpAll(): void {
    const global = this.clock.now();
    for (const account of this.state.accounts.values()) account.applyDueTransitions(account.now(global));
  }

  // ---- videos (sections 2.1, 3, 4.1-4.4) ----

  createVideo(account: Account, input: CreateVideoInput, forced?: ForcedOutcome | null): VideoView {
    const now = this.catchUp(account);
    const request: VideoRequest = {
      model: input.model,
      prompt: input.prompt,
      negative_prompt: input.negative_prompt ?? null,
      duration_seconds: input.duration_seconds ?? 8,
      resolution: input.resolution ?? '1080p',
      keyframe_id: input.keyframe_id ?? null,
    };
    if (!this.scenario.models.video.includes(request.model)) {
      throw fail('model_not_found', {
        param: 'model',
        message: `Model '${request.model}' does not exist. Available models: ${this.scenario.models.video.join(', ')}.`,
      });
    }
    if (request.keyframe_id !== null && !account.images.has(request.keyframe_id)) {
      throw fail('keyframe_not_found', {
        param: 'keyframe_id',
        message: `No keyframe image '${request.keyframe_id}' exists. Create one with POST /v1/images and pass its id.`,
      });
    }
    const index = account.videoDraws++;
    const rng = account.streamFor('video', index);
    const fate = drawFate(
      this.scenario,
      {
        model: request.model,
        resolution: request.resolution,
        durationSeconds: request.duration_seconds,
        keyframeId: request.keyframe_id,
      },
      rng,
      forced ?? undefined,
    );
    this.checkBalance(account, fate.priceCents);
    this.claimLinking(account, [request.prompt, request.negative_prompt], forced);
    const generation: Generation = {
      fate,
      account: account.key,
      globalSeq: this.state.nextGlobalSeq++,
      index,
      request,
      createdAt: now,
      status: 'queued',
      stageIndex: 0,
      keyframeReady: false,
      routedModel: null,
      compliance: null,
      error: null,
      costCents: null,
      completedAt: null,
      evicted: false,
      changeSeq: 0,
      pending: null,
    };
    this.state.allGenerations.push(generation);
    account.addGeneration(generation);
    return videoView(generation, this.cdnUrl);
  }

  getVideo(account: Account, id: string): VideoView {
    this.catchUp(account);
    return videoView(this.ownGeneration(account, id), this.cdnUrl);
  }

  listVideos(account: Account, input: ListInput): { object: 'list'; data: VideoView[]; has_more: boolean } {
    this.catchUp(account);
    const page = account.page(input.after ?? null, input.limit ?? 20, input.status ?? null);
    if (!page) {
      throw fail('invalid_parameter', {
        param: 'after',
        message: `'after' must be the id of one of your generations; '${input.after}' is not.`,
      });
    }
    return { object: 'list', data: page.data.map((g) => videoView(g, this.cdnUrl)), has_more: page.hasMore };
  }

  cancelVideo(account: Account, id: string): ReturnType<typeof cancelView> {
    const now = this.catchUp(account);
    const generation = this.ownGeneration(account, id);
    if (!CANCELABLE_STATUSES.has(generation.status)) {
      const why =
        generation.status === 'verifying'
          ? 'the render has already happened'
          : `it has already resolved as '${generation.status}'`;
      throw fail('not_cancelable', {
        message: `Generation ${id} is '${generation.status}' and cannot be canceled: ${why}. Only queued and processing generations can be canceled.`,
      });
    }
    account.cancel(generation, now);
    return cancelView(generation);
  }

  // ---- images (sections 2.2, 4.5) ----

  createImage(account: Account, input: CreateImageInput, forced?: ForcedOutcome | null): ReturnType<typeof imageView> {
    const now = this.catchUp(account);
    const rng = account.streamFor('image', account.imageDraws++);
    const image: Image = {
      id: rng.token(24, 'img_'),
      account: account.key,
      prompt: input.prompt,
      aspectRatio: input.aspect_ratio ?? '16:9',
      model: this.scenario.models.keyframe,
      costCents: this.scenario.pricing.keyframe_cents,
      createdAt: now,
    };
    this.checkBalance(account, image.costCents);
    this.claimLinking(account, [input.prompt], forced);
    account.addImage(image);
    return imageView(image, this.cdnUrl);
  }

  // ---- the clock and the control API ----

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
    const account = apiKey ? this.state.accounts.get(apiKey) : undefined;
    return this.clock.state(account?.offsetMs ?? 0);
  }

  health(): Health {
    const { state } = this;
    return {
      status: 'ok',
      scenario: this.scenario.name,
      seed: this.seed,
      clock: this.clockState(),
      limits: {
        accounts: state.accounts.size,
        stored_generations: state.allGenerations.length - state.removedFromAll,
        evicted_accounts: state.evictedAccounts,
        evicted_generations: state.evictedGenerations,
      },
    };
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
      this.forgetAccount(input.apiKey);
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

  /**
   * Generations across accounts (or of one), for the control API: in creation order, or, with
   * `changedSince`, those changed after that cursor, in the order of their latest change (what a
   * live view needs to fetch, and nothing more). `cursor` is where the next `changedSince` starts.
   */
  controlGenerations(input: {
    apiKey?: string | null;
    status?: VideoStatus | null;
    limit?: number;
    after?: string | null;
    changedSince?: number | null;
  }) {
    this.catchUpAll();
    const limit = input.limit ?? 20;
    // `after` names a stored generation; only those created after it are listed.
    let afterSeq = -1;
    if (input.after != null) {
      const anchor = this.storedGeneration(input.after);
      if (!anchor) {
        throw fail('invalid_parameter', { param: 'after', message: `'after' must be a stored generation id; '${input.after}' is not.` });
      }
      afterSeq = anchor.globalSeq;
    }
    const keep = (g: Generation): boolean =>
      !g.evicted &&
      g.globalSeq > afterSeq &&
      (!input.apiKey || g.account === input.apiKey) &&
      (!input.status || g.status === input.status);
    if (input.changedSince != null) {
      // What changed since the cursor, filtered like a page. The change log holds an entry per
      // change; only a generation's latest one counts.
      const page = takePage(
        this.state.changed,
        firstAfter(this.state.changeSeqs, input.changedSince, (seq) => seq),
        limit,
        (g, i) => g.changeSeq === this.state.changeSeqs[i] && keep(g),
      );
      return {
        object: 'list' as const,
        data: page.data.map((g) => controlView(g, this.cdnUrl)),
        has_more: page.hasMore,
        cursor: page.hasMore ? (this.state.changeSeqs[page.last] as number) : this.state.changeSeq,
      };
    }
    const start = afterSeq < 0 ? 0 : firstAfter(this.state.allGenerations, afterSeq, (g) => g.globalSeq);
    const page = takePage(this.state.allGenerations, start, limit, keep);
    return {
      object: 'list' as const,
      data: page.data.map((g) => controlView(g, this.cdnUrl)),
      has_more: page.hasMore,
      cursor: this.state.changeSeq,
    };
  }

  controlGeneration(id: string) {
    this.catchUpAll();
    const g = this.storedGeneration(id);
    if (!g) throw fail('resource_not_found', { param: 'id', message: `No generation '${id}' is stored in the simulator.` });
    return controlView(g, this.cdnUrl);
  }

  // ---- live control of one generation (forced transitions, through the generation's state machine) ----

  /** Its current stage ends now: it enters the next one, or resolves to its fate. Nothing else moves. */
  advanceGeneration(id: string) {
    return this.forceTransition(id, (account, g, now) => account.endStageNow(g, now));
  }

  /** It walks all its remaining stages now and resolves to its fate. */
  finishGeneration(id: string) {
    return this.forceTransition(id, (account, g, now) => account.finishNow(g, now));
  }

  /**
   * It fails now at its current stage, with `code` or the code a scenario failure there gives (at
   * output verification, an output rejection); 400 `invalid_parameter` when the stage cannot fail or
   * the code is not one of the stage's.
   */
  failGeneration(id: string, code?: string | null) {
    return this.forceTransition(id, (account, g, now) => {
      const stage = g.fate.stageNames[g.stageIndex] as TimedStage;
      account.failNow(g, failedFate(this.scenario, g.fate, stage, code ?? null), now);
    });
  }

  /** Cancels it as `DELETE /v1/videos/{id}` would (400 `not_cancelable` while verifying), answering the whole generation. */
  cancelGeneration(id: string) {
    return this.forceTransition(id, (account, g, now) => {
      if (!CANCELABLE_STATUSES.has(g.status)) {
        throw fail('not_cancelable', {
          message: `Generation ${id} is '${g.status}' and cannot be canceled: the render has already happened. Only queued and processing generations can be canceled.`,
        });
      }
      account.cancel(g, now);
    });
  }

  /** The codes a generation failed at `stage` can carry under the current scenario (see `GET /_sim/pipeline`). */
  stageFailureCodes(stage: string): string[] {
    return stageFailureCodes(this.scenario, stage);
  }

  /**
   * Applies a forced transition to an in-flight generation at its account's current time, once
   * every transition due by then has been applied; answers the generation as the control API shows
   * it. 404 for an unknown id, 400 `generation_resolved` for a resolved one.
   */
  private forceTransition(id: string, transition: (account: Account, g: Generation, nowMs: number) => void) {
    const found = this.storedGeneration(id);
    const account = found && this.account(found.account);
    const now = account ? this.catchUp(account) : 0;
    if (!found || !account || found.evicted) {
      throw fail('resource_not_found', { param: 'id', message: `No generation '${id}' is stored in the simulator.` });
    }
    if (RESOLVED_STATUSES.has(found.status)) {
      throw fail('generation_resolved', {
        message: `Generation ${id} has already resolved as '${found.status}'; only a queued, processing or verifying generation can be moved.`,
      });
    }
    transition(account, found, now);
    return controlView(found, this.cdnUrl);
  }

  /** A stored video by id, whatever its account (media files). Applies due transitions first. */
  findGeneration(id: string): Generation | undefined {
    const g = this.storedGeneration(id);
    if (!g) return undefined;
    // A media file is not a use of the account: it is not made the most recently used.
    this.catchUp(this.state.accounts.get(g.account) as Account);
    return g.evicted ? undefined : g; // the transitions just applied may have evicted it
  }

  /** A stored image by id, whatever its account (media files). */
  findImage(id: string): Image | undefined {
    return this.acrossAccounts((account) => account.images.get(id));
  }

  /** Time in the journal's terms, in milliseconds: an account's clock, or the global one. */
  timeMsOf(apiKey: string | null): number {
    const account = apiKey ? this.state.accounts.get(apiKey) : undefined;
    return this.clock.now() + (account?.offsetMs ?? 0);
  }

  // ---- internals ----

  /** A stored generation by id, whatever its account. */
  private storedGeneration(id: string): Generation | undefined {
    return this.acrossAccounts((account) => account.byId.get(id));
  }

  /**
   * The first account's answer to `find`. Accounts are usually few and each indexes its own
   * generations and images, so asking each beats a second, global index of everything (which cost
   * 70-90 bytes a generation); at `limits.max_accounts`' default of 10,000 a lookup takes about
   * 0.1 ms.
   */
  private acrossAccounts<T>(find: (account: Account) => T | undefined): T | undefined {
    for (const account of this.state.accounts.values()) {
      const found = find(account);
      if (found !== undefined) return found;
    }
    return undefined;
  }

  private ownGeneration(account: Account, id: string): Generation {
    const g = account.byId.get(id);
    if (!g) {
      throw fail('resource_not_found', { param: 'id', message: `No video generation with id '${id}' exists.` });
    }
    return g;
  }

  private checkBalance(account: Account, priceCents: number): void {
    const available = account.available();
    if (available !== null && available < priceCents) {
      throw fail('insufficient_balance', {
        message: `This request costs ${priceCents} cents; the account has ${Math.max(0, available)} cents available (balance minus in-flight reservations).`,
      });
    }
  }

  /**
   * Claim linking (stage 1, synchronous): a matching rule, or the scenario's probability, rejects.
   * It judges the request, not the attempt: the draw comes from a stream keyed by the account and
   * the request's content (prompt and negative prompt, normalised for case and white space), so an
   * unchanged retry of a rejected create is rejected again, and a changed prompt is judged anew.
   */
  private claimLinking(account: Account, content: (string | null)[], forced?: ForcedOutcome | null): void {
    const { rules, probability } = this.scenario.compliance.claim_linking;
    const prompt = content[0] as string;
    if (forced?.claim_linking_rejected) {
      throw new SimError('claim_linking_rejected', {
        stage: 'claim_linking',
        message: 'The prompt was rejected by claim linking (forced by a queued fault).',
      });
    }
    for (const rule of rules) {
      if (new RegExp(rule.pattern, 'i').test(prompt)) {
        throw new SimError('claim_linking_rejected', {
          stage: 'claim_linking',
          message: rule.message ?? `The prompt was rejected by claim linking (it matches the scenario rule /${rule.pattern}/i).`,
        });
      }
    }
    const normalised = content.map((text) => (text ?? '').trim().replace(/\s+/g, ' ').toLowerCase());
    if (probability > 0 && createStream(this.seed, account.key, 'claim_linking', ...normalised).next() < probability) {
      throw new SimError('claim_linking_rejected', {
        stage: 'claim_linking',
        message: `The prompt was rejected by claim linking (injected by scenario '${this.scenario.name}', probability ${probability}).`,
      });
    }
  }

  private recordChange(g: Generation): void {
    g.changeSeq = ++this.state.changeSeq;
    this.state.changeSeqs.push(g.changeSeq);
    this.state.changed.push(g);
    if (this.state.changeSeqs.length > 4096 && this.state.changeSeqs.length > 2 * (this.state.allGenerations.length - this.state.removedFromAll)) {
      const seqs: number[] = [];
      const gens: Generation[] = [];
      for (let i = 0; i < this.state.changeSeqs.length; i++) {
        const gen = this.state.changed[i] as Generation;
        if (gen.changeSeq === this.state.changeSeqs[i] && !gen.evicted) {
          seqs.push(gen.changeSeq);
          gens.push(gen);
        }
      }
      this.state.changeSeqs = seqs;
      this.state.changed = gens;
    }
  }

  /** Drops an account and everything of it: a per-account reset, or the account evicted. */
  private forgetAccount(key: string): void {
    const { state } = this;
    const account = state.accounts.get(key);
    if (account) {
      for (const g of account.generations()) {
        if (g.completedAt !== null) state.storedResolved--;
        this.forgetGeneration(g);
      }
      state.storedImages -= account.images.size;
      state.accounts.delete(key);
      state.resolved.prune(state.storedResolved);
      state.images.prune(state.storedImages);
    }
    this.journal.forget(key);
    this.faults.forget(key);
  }

  /**
   * A generation resolved: it joins the resolved ones of every account; past
   * `limits.max_stored_generations`, the one that resolved first goes, whatever its account.
   */
  private onResolved(g: Generation): void {
    const { state } = this;
    state.resolved.push(g);
    state.storedResolved++;
    while (state.storedResolved > this.scenario.limits.max_stored_generations) {
      const oldest = state.resolved.take();
      if (!oldest) break;
      if ((state.accounts.get(oldest.account) as Account).evict(oldest)) state.storedImages--;
      this.forgetGeneration(oldest);
      state.storedResolved--;
      state.evictedGenerations++;
    }
    state.resolved.prune(state.storedResolved);
  }

  /** Images count against the same cap, separately from videos: past it, the oldest image goes, whatever its account. */
  private onImageStored(image: Image): void {
    const { state } = this;
    state.images.push(image);
    state.storedImages++;
    while (state.storedImages > this.scenario.limits.max_stored_generations) {
      const oldest = state.images.take();
      if (!oldest) break;
      (state.accounts.get(oldest.account) as Account).images.delete(oldest.id);
      state.storedImages--;
    }
    state.images.prune(state.storedImages);
  }

  private forgetGeneration(g: Generation): void {
    g.evicted = true;
    this.state.removedFromAll++;
    if (this.state.removedFromAll > 1024 && this.state.removedFromAll * 2 > this.state.allGenerations.length) {
      this.state.allGenerations = this.state.allGenerations.filter((x) => !x.evicted);
      this.state.removedFromAll = 0;
    }
  }

  private newState(): SimulatorState {
    const mode = this.options.clockMode ?? this.scenario.clock.mode;
    // The manual clock starts at the scenario's start (a fixed default, for determinism); the
    // realtime clock at the wall-clock time unless the scenario sets a start.
    const start = this.scenario.clock.start ?? (mode === 'manual' ? DEFAULT_MANUAL_START : null);
    const clock = new VirtualClock(
      mode,
      this.options.speed ?? this.scenario.clock.speed,
      start === null ? Math.round(this.heldWallMs ?? this.options.wallClock()) : Date.parse(start),
      () => this.heldWallMs ?? this.options.wallClock(),
    );
    return new SimulatorState(clock, this.scenario.limits.journal_size);
  }
}
