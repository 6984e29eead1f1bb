/**
 * What a scenario file may hold, as a JSON schema (every key optional, unknown keys rejected),
 * compiled ahead of time by the build (scripts/scenario-validator.mjs).
 */
import { NETWORK_FIELDS, NETWORK_KINDS, NETWORK_PHASES } from '../faults/network.js';
import { TIMED_STAGES } from '../generations/pipeline.js';

/** One kind of distribution: its `type`, the keys it requires beside it, and every key it takes. */
function distribution(type: string, required: string[], properties: Record<string, unknown>) {
  return { type: 'object', additionalProperties: false, required: ['type', ...required], properties: { type: { const: type }, ...properties } } as const;
}

const distributionSchema = {
  type: 'object',
  required: ['type'],
  // The keys of every kind of distribution: a key outside them is named as unknown even when
  // `type` is missing or misspelled (the discriminator then picks no branch to report it).
  propertyNames: { enum: ['type', 'value', 'min', 'max', 'median', 'p95'] },
  discriminator: { propertyName: 'type' },
  oneOf: [
    distribution('fixed', ['value'], { value: { type: 'number', minimum: 0 } }),
    distribution('uniform', ['min', 'max'], { min: { type: 'number', minimum: 0 }, max: { type: 'number', minimum: 0 } }),
    distribution('lognormal', ['median', 'p95'], {
      median: { type: 'number', exclusiveMinimum: 0 },
      p95: { type: 'number', exclusiveMinimum: 0 },
      min: { type: 'number', minimum: 0 },
      max: { type: 'number', minimum: 0 },
    }),
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
          network: { enum: [...NETWORK_KINDS] },
          phase: { enum: [...NETWORK_PHASES] },
          // Each kind's own field (`hang_ms`...), with its values.
          ...Object.fromEntries(NETWORK_FIELDS.map(({ name, values }) => [name, 'enum' in values ? { enum: [...values.enum] } : { type: 'integer', ...values }])),
          probability,
        },
        // An error or a network failure: exactly one of `status` and `network` (scenarioChecks.ts says which is missing).
        { required: ['probability'] },
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
  prompt_triggers: { type: 'boolean' },
  limits: obj({
    max_stored_generations: { type: 'integer', minimum: 1 },
    max_accounts: { type: 'integer', minimum: 1 },
    journal_size: { type: 'integer', minimum: 1 },
    max_idempotency_keys: { type: 'integer', minimum: 1 },
    max_queued_faults: { type: 'integer', minimum: 1 },
    max_hung_connections: { type: 'integer', minimum: 0 },
    max_waits: { type: 'integer', minimum: 0 },
  }),
});
