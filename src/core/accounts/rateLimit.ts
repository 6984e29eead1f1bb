/**
 * Rate limits (interface document, section 8): token buckets on an account's virtual clock, one per
 * account and one per route group the scenario names. Every authenticated /v1 request, GETs
 * included, spends one token; a bucket refills continuously at `refill_per_second`; an empty bucket
 * refuses with 429 `rate_limit_exceeded` and a Retry-After. Every answer to an authenticated /v1
 * request carries the X-RateLimit-* headers of its bucket.
 */
import { fail, type SimError } from '../errors.js';
import { matchesPath } from '../pathPattern.js';
import type { Scenario } from '../scenario/scenario.js';

/** The headers every answer to an authenticated /v1 request carries. */
export const RATE_LIMIT_HEADERS = ['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset'] as const;

export interface RateLimitResult {
  allowed: boolean;
  /** Values for the X-RateLimit-* headers, and Retry-After when refused. */
  limit: number;
  remaining: number;
  resetSeconds: number;
  retryAfterSeconds: number | null;
}

/** A bucket's state: its tokens (fractional) and the account time (ms) they were counted at. */
export interface BucketState {
  tokens: number;
  updated_at: number;
}

/** An account's buckets: the main one, and those of the route groups used so far, by group name. */
export interface BucketsState {
  main: BucketState;
  groups?: Record<string, BucketState>;
}

export class TokenBucket {
  private tokens: number;
  private updatedAt: number;

  constructor(
    private readonly capacity: number,
    private readonly refillPerSecond: number,
    nowMs: number,
  ) {
    this.tokens = capacity;
    this.updatedAt = nowMs;
  }

  /** The bucket's state as plain data (a snapshot). */
  toState(): BucketState {
    return { tokens: this.tokens, updated_at: this.updatedAt };
  }

  /** Puts back a state `toState` gave. */
  fromState(state: BucketState): void {
    this.tokens = state.tokens;
    this.updatedAt = state.updated_at;
  }

  /** Spends one token if there is one. */
  take(nowMs: number): RateLimitResult {
    this.refill(nowMs);
    const allowed = this.tokens >= 1;
    if (allowed) this.tokens -= 1;
    return this.result(allowed);
  }

  /**
   * Gives back the token `take` spent at the same instant: the bucket is as it was before, exactly
   * (a token was taken from at least one, so adding it back rounds nothing).
   */
  giveBack(): void {
    this.tokens = Math.min(this.capacity, this.tokens + 1);
  }

  /** The bucket as it stands, spending nothing (the headers of an answer that spent no token). */
  peek(nowMs: number): RateLimitResult {
    this.refill(nowMs);
    return this.result(true);
  }

  private result(allowed: boolean): RateLimitResult {
    return {
      allowed,
      limit: this.capacity,
      remaining: Math.floor(this.tokens),
      resetSeconds: Math.ceil((this.capacity - this.tokens) / this.refillPerSecond),
      retryAfterSeconds: allowed ? null : Math.max(1, Math.ceil((1 - this.tokens) / this.refillPerSecond)),
    };
  }

  private refill(nowMs: number): void {
    if (nowMs > this.updatedAt) {
      this.tokens = Math.min(this.capacity, this.tokens + ((nowMs - this.updatedAt) / 1000) * this.refillPerSecond);
      this.updatedAt = nowMs;
    }
  }
}

/** One account's buckets: the main one, and those of the scenario's route groups (made on first use). */
export class AccountBuckets {
  readonly main: TokenBucket;
  /** Most accounts never need one (memory per account bounds max_accounts). */
  private groups: Map<string, TokenBucket> | undefined;

  constructor(
    private readonly spec: Scenario['rate_limits'],
    nowMs: number,
  ) {
    this.main = new TokenBucket(spec.capacity, spec.refill_per_second, nowMs);
  }

  toState(): BucketsState {
    const state: BucketsState = { main: this.main.toState() };
    if (this.groups) state.groups = Object.fromEntries([...this.groups].map(([name, bucket]) => [name, bucket.toState()]));
    return state;
  }

  /** Puts back a state `toState` gave (a group the scenario no longer names is left out). */
  fromState(state: BucketsState): void {
    this.main.fromState(state.main);
    for (const [name, bucket] of Object.entries(state.groups ?? {})) {
      const group = this.spec.groups?.find((g) => g.name === name);
      if (!group) continue;
      const made = new TokenBucket(group.capacity, group.refill_per_second, bucket.updated_at);
      made.fromState(bucket);
      (this.groups ??= new Map()).set(name, made);
    }
  }

  /** The bucket a request spends from: its route group's (the first that matches), else the main one. */
  bucketFor(method: string, path: string, nowMs: number): TokenBucket {
    const group = this.spec.groups?.find((g) => (g.method === undefined || g.method === method) && matchesPath(g.path, path));
    if (!group) return this.main;
    this.groups ??= new Map();
    let bucket = this.groups.get(group.name);
    if (!bucket) {
      bucket = new TokenBucket(group.capacity, group.refill_per_second, nowMs);
      this.groups.set(group.name, bucket);
    }
    return bucket;
  }
}

/**
 * Spends the request's token and adds the X-RateLimit-* headers to `headers`. Returns the 429 to
 * answer when the bucket is empty.
 */
export function spendToken(
  buckets: AccountBuckets,
  method: string,
  path: string,
  nowMs: number,
  headers: Record<string, string>,
): SimError | undefined {
  const limit = buckets.bucketFor(method, path, nowMs).take(nowMs);
  setHeaders(headers, limit.limit, limit.remaining, limit.resetSeconds);
  if (limit.allowed) return undefined;
  return refusal(limit.limit, limit.retryAfterSeconds as number);
}

/**
 * Gives back the token `spendToken` spent on this request, at the same instant, when the request
 * turns out to be answered as an injected error (a prompt's `[sim:error=STATUS]`); the caller then
 * sets the headers with `addUnspentHeaders`, as for a queued fault's error.
 */
export function giveBackToken(buckets: AccountBuckets, method: string, path: string, nowMs: number): void {
  buckets.bucketFor(method, path, nowMs).giveBack();
}

/** The last refusal made: an empty bucket refuses request after request with the same one. */
let lastRefusal: { limit: number; retryAfterSeconds: number; error: SimError } | undefined;

/** The 429 of an empty bucket of `limit` tokens, full enough again in `retryAfterSeconds`. */
function refusal(limit: number, retryAfterSeconds: number): SimError {
  if (lastRefusal?.limit !== limit || lastRefusal.retryAfterSeconds !== retryAfterSeconds) {
    const error = fail('rate_limit_exceeded', {
      message: `Rate limit of ${limit} requests exceeded. Retry after ${retryAfterSeconds} s (of virtual time).`,
      headers: { 'Retry-After': String(retryAfterSeconds) },
    });
    lastRefusal = { limit, retryAfterSeconds, error };
  }
  return lastRefusal.error;
}

/**
 * Adds the X-RateLimit-* headers of an answer that spent no token (an injected fault answers
 * instead) to `headers`. An injected 429 says the bucket is empty, and full again no sooner than
 * its Retry-After.
 */
export function addUnspentHeaders(
  buckets: AccountBuckets,
  method: string,
  path: string,
  nowMs: number,
  injected: SimError,
  headers: Record<string, string>,
): void {
  const limit = buckets.bucketFor(method, path, nowMs).peek(nowMs);
  if (injected.status !== 429) return setHeaders(headers, limit.limit, limit.remaining, limit.resetSeconds);
  const retryAfter = Number(injected.headers['Retry-After'] ?? 1);
  setHeaders(headers, limit.limit, 0, Math.max(limit.resetSeconds, retryAfter));
}

function setHeaders(headers: Record<string, string>, limit: number, remaining: number, resetSeconds: number): void {
  headers['X-RateLimit-Limit'] = String(limit);
  headers['X-RateLimit-Remaining'] = String(remaining);
  headers['X-RateLimit-Reset'] = String(resetSeconds);
}
