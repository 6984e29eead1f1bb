/**
 * Token buckets on an account's virtual clock (openapi.yaml, X-RateLimit-Limit). Every authenticated /v1
 * request spends one token; a bucket refills continuously at `refill_per_second`.
 */

export interface RateLimitResult {
  allowed: boolean;
  /** Values for the X-RateLimit-* headers, and Retry-After when refused. */
  limit: number;
  remaining: number;
  resetSeconds: number;
  retryAfterSeconds: number | null;
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

  /** Spends one token if there is one. */
  take(nowMs: number): RateLimitResult {
    this.refill(nowMs);
    const allowed = this.tokens >= 1;
    if (allowed) this.tokens -= 1;
    return this.result(allowed);
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
