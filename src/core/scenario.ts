/**
 * The scenario model: what a scenario file sets, its JSON schema, the built-in base every file is
 * merged over, and `extends` merging. Loading files (fs, YAML) lives in `src/scenarios/`.
 */
import { TIMED_STAGES, type TimedStage } from './pipeline.js';
import type { RandomStream } from './random.js';

/** A duration (seconds) or latency (milliseconds) distribution. */
export type Distribution =
  | { type: 'fixed'; value: number }
  | { type: 'uniform'; min: number; max: number }
  | { type: 'lognormal'; median: number; p95: number; min?: number; max?: number };

export type Resolution = '720p' | '1080p';
export type FlagSeverity = 'info' | 'warning' | 'block';

export interface StageFailure {
  /** Probability that a generation fails at the end of this stage. */
  probability: number;
  /** An `api_error` code from the catalogue, written into the failed generation's `error`. */
  code: string;
  message?: string;
}

export interface StageSpec {
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

export interface AccountSpec {
  balance_cents?: number | null;
  negative_prompt?: string | null;
  revoked?: boolean;
}

export interface RoutingRule {
  when?: { model?: string; resolution?: Resolution; keyframe_first?: boolean };
  targets: { model: string; weight?: number }[];
}

export interface HttpFaultRule {
  method?: string;
  /** Exact path, or a prefix when it ends with `*`. Default: every /v1 path. */
  path?: string;
  status: 429 | 500;
  probability: number;
}

export interface RateLimitGroup {
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
  /** Bounds on what the simulator holds, across all accounts (docs/limits.md). */
  limits: {
    /** Resolved generations kept across accounts (and, separately, images); past it the oldest go. */
    max_stored_generations: number;
    /** Accounts kept; past it the least recently used one is dropped whole. */
    max_accounts: number;
    /** Requests the journal keeps. */
    journal_size: number;
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
  limits: { max_stored_generations: 100_000, max_accounts: 10_000, journal_size: 10_000 },
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

const distributionSchema = {
  type: 'object',
  required: ['type'],
  // The keys of every kind of distribution: a key outside them is named as unknown even when
  // `type` is missing or misspelled (the discriminator then picks no branch to report it).
  propertyNames: { enum: ['type', 'value', 'min', 'max', 'median', 'p95'] },
  discriminator: { propertyName: 'type' },
  oneOf: [
    {
      type: 'object',
      additionalProperties: false,
      required: ['type', 'value'],
      properties: { type: { const: 'fixed' }, value: { type: 'number', minimum: 0 } },
    },
    {
      type: 'object',
      additionalProperties: false,
      required: ['type', 'min', 'max'],
      properties: {
        type: { const: 'uniform' },
        min: { type: 'number', minimum: 0 },
        max: { type: 'number', minimum: 0 },
      },
    },
    {
      type: 'object',
      additionalProperties: false,
      required: ['type', 'median', 'p95'],
      properties: {
        type: { const: 'lognormal' },
        median: { type: 'number', exclusiveMinimum: 0 },
        p95: { type: 'number', exclusiveMinimum: 0 },
        min: { type: 'number', minimum: 0 },
        max: { type: 'number', minimum: 0 },
      },
    },
  ],
} as const;

const probability = { type: 'number', minimum: 0, maximum: 1 } as const;
const nonNegative = { type: 'number', minimum: 0 } as const;
/** Prices are whole cents: `cost_cents` is an integer. */
const wholeCents = { type: 'integer', minimum: 0 } as const;
const obj = (properties: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  type: 'object',
  additionalProperties: false,
  properties,
  ...extra,
});

const stageSchema = obj({
  duration: distributionSchema,
  per_output_second: { type: 'boolean' },
  failure: obj(
    { probability, code: { type: 'string', minLength: 1 }, message: { type: 'string' } },
    { required: ['probability', 'code'] },
  ),
});

/**
 * JSON schema of a scenario file (every key optional, unknown keys rejected). The resolved
 * scenario, after merging over the base, satisfies the `Scenario` type.
 */
export const SCENARIO_FILE_SCHEMA = obj({
  extends: { type: 'string', minLength: 1 },
  name: { type: 'string' },
  description: { type: 'string' },
  seed: { type: 'integer' },
  clock: obj({
    mode: { enum: ['manual', 'realtime'] },
    speed: { type: 'number', exclusiveMinimum: 0 },
    start: { type: ['string', 'null'], format: 'date-time' },
  }),
  auth: obj({
    key_prefix: { type: ['string', 'null'], minLength: 1 },
    revoked_keys: { type: 'array', items: { type: 'string', minLength: 1 } },
  }),
  account_defaults: obj({
    balance_cents: { type: ['integer', 'null'], minimum: 0 },
    negative_prompt: { type: ['string', 'null'] },
  }),
  accounts: {
    type: 'object',
    propertyNames: { minLength: 1 },
    additionalProperties: obj({
      balance_cents: { type: ['integer', 'null'], minimum: 0 },
      negative_prompt: { type: ['string', 'null'] },
      revoked: { type: 'boolean' },
    }),
  },
  models: obj({
    video: { type: 'array', minItems: 1, items: { type: 'string', minLength: 1 } },
    keyframe: { type: 'string', minLength: 1 },
  }),
  routing: {
    type: 'array',
    minItems: 1,
    items: obj(
      {
        when: obj({
          model: { type: 'string' },
          resolution: { enum: ['720p', '1080p'] },
          keyframe_first: { type: 'boolean' },
        }),
        targets: {
          type: 'array',
          minItems: 1,
          items: obj(
            { model: { type: 'string', minLength: 1 }, weight: { type: 'number', exclusiveMinimum: 0 } },
            { required: ['model'] },
          ),
        },
      },
      { required: ['targets'] },
    ),
  },
  keyframe_first_share: probability,
  stages: obj(Object.fromEntries(TIMED_STAGES.map((stage) => [stage, stageSchema]))),
  compliance: obj({
    claim_linking: obj({
      rules: {
        type: 'array',
        items: obj(
          { pattern: { type: 'string', minLength: 1 }, message: { type: 'string' } },
          { required: ['pattern'] },
        ),
      },
      probability,
    }),
    output_verification: obj({
      reject_share: probability,
      flag_share: probability,
      flags: {
        type: 'array',
        items: obj(
          {
            code: { type: 'string', minLength: 1 },
            severity: { enum: ['info', 'warning', 'block'] },
            message: { type: 'string' },
          },
          { required: ['code', 'severity', 'message'] },
        ),
      },
    }),
  }),
  http: obj({
    faults: {
      type: 'array',
      items: obj(
        {
          method: { enum: ['GET', 'POST', 'DELETE'] },
          path: { type: 'string', pattern: '^/' },
          status: { enum: [429, 500] },
          probability,
        },
        { required: ['status', 'probability'] },
      ),
    },
    latency: { oneOf: [{ type: 'null' }, distributionSchema] },
  }),
  rate_limits: obj({
    capacity: { type: 'integer', minimum: 1 },
    refill_per_second: { type: 'number', exclusiveMinimum: 0 },
    groups: {
      type: 'array',
      items: obj(
        {
          name: { type: 'string', minLength: 1 },
          method: { enum: ['GET', 'POST', 'DELETE'] },
          path: { type: 'string', pattern: '^/' },
          capacity: { type: 'integer', minimum: 1 },
          refill_per_second: { type: 'number', exclusiveMinimum: 0 },
        },
        { required: ['name', 'path', 'capacity', 'refill_per_second'] },
      ),
    },
  }),
  pricing: obj({
    per_second_cents: obj({ '720p': wholeCents, '1080p': wholeCents }),
    keyframe_cents: wholeCents,
    failure_charge: { enum: ['nothing', 'full', 'render_if_happened'] },
  }),
  idempotency: obj({ retention_seconds: nonNegative }),
  limits: obj({
    max_stored_generations: { type: 'integer', minimum: 1 },
    max_accounts: { type: 'integer', minimum: 1 },
    journal_size: { type: 'integer', minimum: 1 },
  }),
});

/**
 * Checks a resolved scenario for what a schema cannot say (ranges that are upside down, patterns
 * that do not compile, unknown error codes). Returns problems as `field: what was expected`.
 */
export function checkScenario(s: Scenario, apiErrorCodes: readonly string[], failableStages: readonly string[]): string[] {
  const problems: string[] = [];
  const checkDistribution = (path: string, d: Distribution | null) => {
    if (!d) return;
    if (d.type === 'uniform' && d.min > d.max) problems.push(`${path}: expected min <= max, got min ${d.min} and max ${d.max}`);
    if (d.type === 'lognormal') {
      if (d.p95 < d.median) problems.push(`${path}: expected p95 >= median, got median ${d.median} and p95 ${d.p95}`);
      if (d.min !== undefined && d.max !== undefined && d.min > d.max) problems.push(`${path}: expected min <= max`);
    }
  };
  for (const stage of PROCESSING_STAGES) {
    const spec = s.stages[stage];
    checkDistribution(`stages.${stage}.duration`, spec.duration);
    if (spec.failure && !failableStages.includes(stage)) {
      problems.push(
        `stages.${stage}.failure: only ${failableStages.join(', ')} can fail${stage === 'output_verification' ? ' (for output rejections use compliance.output_verification.reject_share)' : ''}`,
      );
    }
    if (spec.failure && !apiErrorCodes.includes(spec.failure.code)) {
      problems.push(`stages.${stage}.failure.code: expected one of ${apiErrorCodes.join(', ')}, got '${spec.failure.code}'`);
    }
    if (spec.per_output_second && stage !== 'render') problems.push(`stages.${stage}.per_output_second: only the render stage scales per output second`);
  }
  checkDistribution('http.latency', s.http.latency);
  s.compliance.claim_linking.rules.forEach((rule, i) => {
    try {
      new RegExp(rule.pattern, 'i');
    } catch (e) {
      problems.push(`compliance.claim_linking.rules[${i}].pattern: expected a valid regular expression, got '${rule.pattern}' (${(e as Error).message})`);
    }
  });
  if (s.clock.start !== null && Number.isNaN(Date.parse(s.clock.start))) problems.push(`clock.start: expected an ISO 8601 date-time, got '${s.clock.start}'`);
  const ov = s.compliance.output_verification;
  if (ov.flag_share > 0 && !ov.flags.some((f) => f.severity !== 'block')) {
    problems.push('compliance.output_verification.flags: expected at least one info or warning flag when flag_share > 0');
  }
  return problems;
}
