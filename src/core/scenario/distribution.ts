/**
 * Distributions of a scenario's durations (seconds) and latencies (milliseconds), and drawing from
 * them.
 */
import type { RandomStream } from '../random.js';

/** A duration (seconds) or latency (milliseconds) distribution. */
export type Distribution =
  | { type: 'fixed'; value: number }
  | { type: 'uniform'; min: number; max: number }
  | { type: 'lognormal'; median: number; p95: number; min?: number; max?: number };

/** z for the 95th percentile of the standard normal distribution. */
const Z95 = 1.6448536269514722;

/** Draws one value from a distribution. */
export function sample(dist: Distribution, rng: RandomStream): number {
  switch (dist.type) {
    case 'fixed':
      return dist.value;
    case 'uniform':
      return dist.min + (dist.max - dist.min) * rng.next();
    case 'lognormal': {
      const mu = Math.log(dist.median);
      const sigma = Math.max(0, Math.log(dist.p95) - mu) / Z95;
      const value = Math.exp(mu + sigma * rng.normal());
      return Math.min(dist.max ?? Infinity, Math.max(dist.min ?? 0, value));
    }
  }
}
