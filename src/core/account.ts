/**
 * One account (one API key): its clock offset, generations and images, random streams, rate-limit
 * bucket, idempotency keys, balance and the scheduler of its due transitions. Accounts share
 * nothing, which is what makes parallel test workers reproducible.
 */
import type { Fate } from './fate.js';
import type { Generation } from './generation.js';
import { TIMED_STAGES } from './pipeline.js';
import { fnv1a32 } from './hash.js';
import { IdempotencyStore } from './idempotency.js';
import type { Image } from './image.js';
import * as lifecycle from './lifecycle.js';
import { firstAfter, takePage } from './paging.js';
import { matchesPath } from './pathPattern.js';
import { createStream, type RandomStream } from './random.js';
import { TokenBucket } from './rateLimit.js';
import type { Scenario } from './scenario.js';
import { Scheduler } from './scheduler.js';

/** Hooks the account calls so that the simulator can keep its cross-account indexes. */
export interface AccountHooks {
  onEvicted(generation: Generation): void;
  /** A generation was created or changed (a stage entered or left, resolved, canceled). */
  onChange(generation: Generation): void;
}

export class Account {
  /** Milliseconds this account's clock runs ahead of the global clock. */
  offsetMs = 0;
  /** How many /v1 requests this account has made: its request ids count them. */
  requestCount = 0;
  /** A short stable tag of the key, for request ids (never the key itself). */
  readonly tag: string;
  /** Generations in creation order; evicted ones are dropped lazily (see `compact`). */
  private list: Generation[] = [];
  private evictedInList = 0;
  readonly byId = new Map<string, Generation>();
  readonly images = new Map<string, Image>();
  /** Create attempts that drew a fate: the index that keys each generation's own stream. */
  videoDraws = 0;
  imageDraws = 0;
  readonly requestStream: RandomStream;
  /** The main rate-limit bucket; route groups of the scenario get their own (see `bucketFor`). */
  readonly bucket: TokenBucket;
  private readonly groupBuckets = new Map<string, TokenBucket>();
  readonly idempotency: IdempotencyStore;
  /** Null: unlimited. */
  balanceCents: number | null;
  reservedCents = 0;
  readonly negativePrompt: string | null;
  /** A generation walks at most one scheduled entry per stage. */
  readonly scheduler = new Scheduler<Generation>(TIMED_STAGES.length);
  private readonly resolvedQueue: Generation[] = [];
  private resolvedHead = 0;

  constructor(
    readonly key: string,
    private readonly scenario: Scenario,
    private readonly seed: number,
    globalNowMs: number,
    private readonly hooks: AccountHooks,
  ) {
    // Own keys only: a key named 'valueOf' or '__proto__' must not find Object.prototype's members.
    this.tag = fnv1a32(key).toString(16).padStart(8, '0');
    const spec = Object.hasOwn(scenario.accounts, key) ? (scenario.accounts[key] ?? {}) : {};
    this.balanceCents = spec.balance_cents !== undefined ? spec.balance_cents : scenario.account_defaults.balance_cents;
    this.negativePrompt =
      spec.negative_prompt !== undefined ? spec.negative_prompt : scenario.account_defaults.negative_prompt;
    this.requestStream = createStream(seed, key, 'requests');
    this.bucket = new TokenBucket(scenario.rate_limits.capacity, scenario.rate_limits.refill_per_second, globalNowMs);
    this.idempotency = new IdempotencyStore(Math.round(scenario.idempotency.retention_seconds * 1000));
  }

  /** The bucket a request spends from: its route group's, else the main one. */
  bucketFor(method: string, path: string, nowMs: number): TokenBucket {
    const group = this.scenario.rate_limits.groups?.find(
      (g) => (g.method === undefined || g.method === method) && matchesPath(g.path, path),
    );
    if (!group) return this.bucket;
    let bucket = this.groupBuckets.get(group.name);
    if (!bucket) {
      bucket = new TokenBucket(group.capacity, group.refill_per_second, nowMs);
      this.groupBuckets.set(group.name, bucket);
    }
    return bucket;
  }

  now(globalNowMs: number): number {
    return globalNowMs + this.offsetMs;
  }

  /** The stream of this account's n-th video (or image) draw. */
  streamFor(kind: 'video' | 'image', index: number): RandomStream {
    return createStream(this.seed, this.key, kind, index);
  }

  /** Balance left after open reservations; null when unlimited. */
  available(): number | null {
    return this.balanceCents === null ? null : this.balanceCents - this.reservedCents;
  }

  addGeneration(g: Generation): void {
    this.list.push(g);
    this.byId.set(g.fate.id, g);
    this.reservedCents += g.fate.priceCents;
    lifecycle.start(this.lifecycle, g);
  }

  addImage(image: Image): void {
    this.storeImage(image);
    if (this.balanceCents !== null) this.balanceCents -= image.costCents;
  }

  /** Stores an image; past the cap on stored generations, the oldest images go first. */
  private storeImage(image: Image): void {
    this.images.set(image.id, image);
    if (this.images.size > this.scenario.limits.max_stored_generations) {
      this.images.delete(this.images.keys().next().value as string);
    }
  }

  /** Applies every transition due at or before `untilMs` (account time), in time order. */
  applyDueTransitions(untilMs: number): void {
    this.scheduler.runUntil(untilMs, (g, due) => lifecycle.endStage(this.lifecycle, g, due));
  }

  cancel(g: Generation, nowMs: number): void {
    lifecycle.cancel(this.lifecycle, g, nowMs);
  }

  /** Forced transitions of the control API: the current stage ends now, all of them do, or it fails now. */
  endStageNow(g: Generation, nowMs: number): void {
    lifecycle.endStageNow(this.lifecycle, g, nowMs);
  }

  finishNow(g: Generation, nowMs: number): void {
    lifecycle.finishNow(this.lifecycle, g, nowMs);
  }

  failNow(g: Generation, failed: Fate, nowMs: number): void {
    lifecycle.failNow(this.lifecycle, g, failed, nowMs);
  }

  /**
   * Generations after the one with id `after` (all when null), oldest first, filtered by status;
   * returns undefined when `after` is not one of this account's generations.
   */
  page(after: string | null, limit: number, status: string | null): { data: Generation[]; hasMore: boolean } | undefined {
    let start = 0;
    if (after !== null) {
      const anchor = this.byId.get(after);
      if (!anchor) return undefined;
      start = firstAfter(this.list, anchor.index, (g) => g.index);
    }
    const { data, hasMore } = takePage(
      this.list,
      start,
      limit,
      (g) => !g.evicted && (status === null || g.status === status),
    );
    return { data, hasMore };
  }

  /** Every live generation, oldest first. */
  generations(): Generation[] {
    return this.list.filter((g) => !g.evicted);
  }


  /** What the generation's state machine asks of the account that holds it. */
  private readonly lifecycle: lifecycle.LifecycleHost = {
    schedule: (atMs, g) => this.scheduler.schedule(atMs, g),
    unschedule: (entry) => this.scheduler.cancel(entry),
    keyframeGenerated: (g, atMs) => {
      // The keyframe step is the image endpoint's generation step: its still becomes an image of
      // the account, reusable as keyframe_id. Its price is part of the video's.
      this.storeImage({
        id: g.fate.keyframeImageId as string,
        account: this.key,
        prompt: g.request.prompt,
        aspectRatio: '16:9',
        model: this.scenario.models.keyframe,
        costCents: this.scenario.pricing.keyframe_cents,
        createdAt: atMs,
      });
    },
    settled: (g, chargeCents) => {
      this.reservedCents -= g.fate.priceCents;
      if (this.balanceCents !== null) this.balanceCents -= chargeCents;
    },
    changed: (g) => this.hooks.onChange(g),
    resolved: (g) => this.evictPastCap(g),
  };

  /** A resolved generation joins the eviction queue; past the cap, the oldest resolved ones go. */
  private evictPastCap(g: Generation): void {
    this.resolvedQueue.push(g);
    const cap = this.scenario.limits.max_stored_generations;
    while (this.resolvedQueue.length - this.resolvedHead > cap) {
      const oldest = this.resolvedQueue[this.resolvedHead++] as Generation;
      oldest.evicted = true;
      this.byId.delete(oldest.fate.id);
      // The keyframe generated for it goes with it (an image of its own, from POST /v1/images, stays).
      if (oldest.fate.keyframeMode === 'generated' && oldest.fate.keyframeImageId) this.images.delete(oldest.fate.keyframeImageId);
      this.evictedInList++;
      this.hooks.onEvicted(oldest);
    }
    if (this.resolvedHead > 1024 && this.resolvedHead * 2 > this.resolvedQueue.length) {
      this.resolvedQueue.splice(0, this.resolvedHead);
      this.resolvedHead = 0;
    }
    if (this.evictedInList > 1024 && this.evictedInList * 2 > this.list.length) {
      this.list = this.list.filter((x) => !x.evicted);
      this.evictedInList = 0;
    }
  }
}
