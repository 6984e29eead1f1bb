/**
 * The scenario model: what a scenario sets, the built-in base every file is merged over, and
 * `extends` merging. What a file may hold is `scenarioSchema.ts`; what a schema cannot say,
 * `scenarioChecks.ts`; distributions, `distribution.ts`. Loading files (fs, YAML) lives in
 * `src/scenarios/`.
 */
import type { Distribution } from './distribution.js';
import type { NetworkSpec } from '../faults/network.js';
import { TIMED_STAGES, type TimedStage } from '../generations/pipeline.js';

export type Resolution = '720p' | '1080p';
type FlagSeverity = 'info' | 'warning' | 'block';

interface StageFailure {
  /** Probability that a generation fails at the end of this stage. */
  probability: number;
  /** An `api_error` code from the catalogue, written into the failed generation's `error`. */
  code: string;
  message?: string;
}

interface StageSpec {
  duration: Distribution;
  /** `render` only: the drawn duration is per output second (multiplied by `duration_seconds`). */
  per_output_second?: boolean;
  failure?: StageFailure;
}

export interface ComplianceFlagSpec {
  code: string;
  severity: FlagSeverity;
  message: string;
}

interface AccountSpec {
  balance_cents?: number | null;
  negative_prompt?: string | null;
  revoked?: boolean;
}

interface RoutingRule {
  when?: { model?: string; resolution?: Resolution; keyframe_first?: boolean };
  targets: { model: string; weight?: number }[];
}

/** A scenario's HTTP fault: an error (`status`) or a network failure (`network`, with its phase and own field). */
interface HttpFaultRule extends NetworkSpec {
  method?: string;
  /** Exact path, or a prefix when it ends with `*`. Default: every /v1 path. */
  path?: string;
  status?: 429 | 500;
  probability: number;
}

interface RateLimitGroup {
  name: string;
  method?: string;
  /** Exact path, or a prefix when it ends with `*`. */
  path: string;
  capacity: number;
  refill_per_second: number;
}

export interface Scenario {
  name: string;
  description: string;
  seed: number;
  /** `start`: where virtual time starts; null: the wall-clock time of start in realtime mode, 2026-01-01T00:00:00.000Z on the manual clock. */
  clock: { mode: 'manual' | 'realtime'; speed: number; start: string | null };
  auth: {
    /** Any Bearer token with this prefix is an account of its own; null: only keys under `accounts`. */
    key_prefix: string | null;
    revoked_keys: string[];
  };
  account_defaults: { balance_cents: number | null; negative_prompt: string | null };
  accounts: Record<string, AccountSpec>;
  models: { video: string[]; keyframe: string };
  routing: RoutingRule[];
  keyframe_first_share: number;
  stages: Record<TimedStage, StageSpec>;
  compliance: {
    claim_linking: {
      /** A create or image request whose prompt matches one of these is rejected with a 422. */
      rules: { pattern: string; message?: string }[];
      probability: number;
    };
    output_verification: {
      reject_share: number;
      flag_share: number;
      flags: ComplianceFlagSpec[];
    };
  };
  http: {
    faults: HttpFaultRule[];
    /** Added latency in milliseconds, applied in realtime mode only. */
    latency: Distribution | null;
  };
  rate_limits: {
    capacity: number;
    refill_per_second: number;
    /** Route groups with buckets of their own (first match wins); other requests use the main bucket. */
    groups?: RateLimitGroup[];
  };
  pricing: {
    per_second_cents: Record<Resolution, number>;
    keyframe_cents: number;
    /** What a failed generation costs: nothing, the full price, or the price if the render happened. */
    failure_charge: 'nothing' | 'full' | 'render_if_happened';
  };
  idempotency: { retention_seconds: number };
  /**
   * Whether a create's prompt that holds `[sim:DIRECTIVE]` gets that outcome (`promptTriggers.ts`);
   * false: the prompt is plain text, `[sim:...]` included. A scenario object without it has them on.
   */
  prompt_triggers: boolean;
  /** Bounds on what the simulator holds, across all accounts (docs/limits.md). */
  limits: {
    /**
     * Generations (videos, in flight or resolved, and images) kept across accounts; a create past
     * it evicts the one that resolved first, or is refused (429) when none has resolved.
     */
    max_stored_generations: number;
    /** Accounts kept; past it the least recently used one is dropped whole. */
    max_accounts: number;
    /** Requests the journal keeps. */
    journal_size: number;
    /** Answers stored under an Idempotency-Key, across accounts; past it the oldest goes. */
    max_idempotency_keys: number;
    /** Faults waiting in the queue of `POST /_sim/faults`; past it a new one is refused (400). */
    max_queued_faults: number;
    /** Connections held by network `hang` faults at once; past it a hang is a `close`. */
    max_hung_connections: number;
    /**
     * Waits for requests (`POST /_sim/requests/wait`) held at once; past it a wait that would be
     * held is 429. Optional in a scenario object given in code (default 100).
     */
    max_waits?: number;
  };
}

/** What a file may contain: any part of a scenario, plus `extends`. */
export type ScenarioFile = DeepPartial<Scenario> & { extends?: string };

type DeepPartial<T> = T extends (infer U)[]
  ? U[]
  : T extends object
    ? { [K in keyof T]?: DeepPartial<T[K]> }
    : T;

/** The built-in base that every scenario file is merged over (the `default` file restates it). */
export const BASE_SCENARIO: Scenario = {
  name: 'base',
  description: 'Built-in base values.',
  seed: 1,
  clock: { mode: 'realtime', speed: 1, start: null },
  auth: { key_prefix: 'sk_test_', revoked_keys: ['sk_test_revoked'] },
  account_defaults: { balance_cents: null, negative_prompt: null },
  accounts: {},
  models: { video: ['video-3.0', 'video-3.1', 'video-3.2'], keyframe: 'video-3.2-keyframe' },
  routing: [{ targets: [{ model: 'render-core-1' }] }],
  keyframe_first_share: 0.8,
  stages: {
    queue: { duration: { type: 'lognormal', median: 15, p95: 45, min: 4, max: 150 } },
    keyframe: { duration: { type: 'uniform', min: 6, max: 14 } },
    routing: { duration: { type: 'uniform', min: 2, max: 5 } },
    render: {
      duration: { type: 'lognormal', median: 7, p95: 12, min: 3, max: 20 },
      per_output_second: true,
    },
    output_verification: { duration: { type: 'uniform', min: 4, max: 12 } },
  },
  compliance: {
    claim_linking: { rules: [], probability: 0 },
    output_verification: { reject_share: 0, flag_share: 0, flags: [] },
  },
  http: { faults: [], latency: null },
  rate_limits: { capacity: 1000, refill_per_second: 20 },
  pricing: {
    per_second_cents: { '720p': 5, '1080p': 10 },
    keyframe_cents: 2,
    failure_charge: 'render_if_happened',
  },
  idempotency: { retention_seconds: 86_400 },
  prompt_triggers: true,
  limits: {
    max_stored_generations: 8_000,
    max_accounts: 10_000,
    journal_size: 5_000,
    max_idempotency_keys: 2_000,
    max_queued_faults: 10_000,
    max_hung_connections: 1000,
    max_waits: 100,
  },
};

/** The stages whose durations and failures a scenario sets (the pipeline's timed stages). */
export const PROCESSING_STAGES = TIMED_STAGES;
export type { TimedStage };

/**
 * Deep merge for `extends`: objects merge key by key, arrays and scalars replace. A child that
 * changes one stage's duration keeps the other stages. Keys such as `__proto__` are never merged.
 */
export function mergeScenario<T>(base: T, override: unknown): T {
  // Always a deep copy: a resolved scenario shares nothing with its parent or the base.
  if (!isPlainObject(base) || !isPlainObject(override)) return structuredClone(override === undefined ? base : override) as T;
  const out: Record<string, unknown> = structuredClone(base);
  for (const [key, value] of Object.entries(override)) {
    if (key === '__proto__' || key === 'constructor' || key === 'prototype') continue;
    // A distribution is replaced whole: merging {type: fixed} into {type: uniform, min, max} would mix them.
    if (key === 'duration' || key === 'latency') out[key] = value;
    else out[key] = mergeScenario(out[key], value);
  }
  return out as T;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
