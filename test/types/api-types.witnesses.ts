/**
 * One value per exported API type that lists that type's keys (or, for a union of strings, its
 * members). `tsc` checks each against the type (`satisfies Exactly<T>`: a key the type lacks, or a
 * key of the type left out, fails test/types), and test/api-types.test.ts compares them with real
 * answers of the simulator: together, the types cannot drift from what the simulator answers.
 */
import type { ApiError, CancelResponse, ErrorCode, Image, Video, VideoList, VideoStatus } from '../../src/index.js';

/** Every key of T, each `true`; an object literal that `satisfies` it has exactly T's keys. */
type Exactly<T> = { [K in keyof T]-?: true };

/** One entry per member of a union of strings. */
type Members<U extends string> = Record<U, true>;

type ErrorObject = ApiError['error'];
type ErrorObjectOf<T extends ErrorObject['type']> = Extract<ErrorObject, { type: T }>;
type VideoErrorObject = NonNullable<Video['error']>;

export const VIDEO_KEYS = {
  id: true,
  object: true,
  status: true,
  model: true,
  prompt: true,
  negative_prompt: true,
  duration_seconds: true,
  resolution: true,
  routed_model: true,
  keyframe: true,
  compliance: true,
  output: true,
  error: true,
  cost_cents: true,
  created_at: true,
  completed_at: true,
} as const satisfies Exactly<Video>;

export const KEYFRAME_KEYS = { id: true, status: true } as const satisfies Exactly<NonNullable<Video['keyframe']>>;

export const COMPLIANCE_KEYS = { verified: true, flags: true } as const satisfies Exactly<NonNullable<Video['compliance']>>;

export const OUTPUT_KEYS = { url: true, thumbnail_url: true } as const satisfies Exactly<NonNullable<Video['output']>>;

/** The keys of a failed video's `error`, by its `type`. */
export const VIDEO_ERROR_KEYS = {
  api_error: { type: true, code: true, message: true },
  compliance_error: { type: true, code: true, message: true, stage: true },
} as const satisfies { [T in VideoErrorObject['type']]: Exactly<Extract<VideoErrorObject, { type: T }>> };

export const VIDEO_LIST_KEYS = { object: true, data: true, has_more: true } as const satisfies Exactly<VideoList>;

export const IMAGE_KEYS = {
  id: true,
  object: true,
  status: true,
  model: true,
  prompt: true,
  url: true,
  cost_cents: true,
  created_at: true,
} as const satisfies Exactly<Image>;

export const CANCEL_RESPONSE_KEYS = {
  id: true,
  object: true,
  status: true,
  created_at: true,
  completed_at: true,
} as const satisfies Exactly<CancelResponse>;

export const API_ERROR_KEYS = { error: true } as const satisfies Exactly<ApiError>;

/** The keys of the error object, by its `type`: every type of error answer, each once. */
export const ERROR_OBJECT_KEYS = {
  invalid_request_error: { type: true, code: true, message: true, param: true },
  authentication_error: { type: true, code: true, message: true },
  insufficient_balance: { type: true, code: true, message: true },
  permission_error: { type: true, code: true, message: true },
  compliance_error: { type: true, code: true, message: true, stage: true },
  rate_limit_error: { type: true, code: true, message: true },
  api_error: { type: true, code: true, message: true },
} as const satisfies { [T in ErrorObject['type']]: Exactly<ErrorObjectOf<T>> };

export const VIDEO_STATUSES = {
  queued: true,
  processing: true,
  verifying: true,
  succeeded: true,
  failed: true,
  canceled: true,
} as const satisfies Members<VideoStatus>;

export const ERROR_CODE_MEMBERS = {
  missing_parameter: true,
  invalid_parameter: true,
  unknown_parameter: true,
  invalid_json: true,
  unsupported_content_type: true,
  request_too_large: true,
  invalid_request: true,
  model_not_found: true,
  keyframe_not_found: true,
  resource_not_found: true,
  unknown_route: true,
  not_cancelable: true,
  generation_resolved: true,
  idempotency_key_reused: true,
  range_not_satisfiable: true,
  precondition_failed: true,
  expectation_failed: true,
  sharded_global_call: true,
  unroutable_api_key: true,
  wrong_shard: true,
  missing_api_key: true,
  invalid_api_key: true,
  revoked_api_key: true,
  insufficient_balance: true,
  claim_linking_rejected: true,
  output_rejected: true,
  rate_limit_exceeded: true,
  internal_error: true,
  keyframe_failed: true,
  routing_failed: true,
  render_failed: true,
  upstream_timeout: true,
  simulator_closed: true,
  host_not_allowed: true,
  cross_origin_request: true,
  control_token_required: true,
  invalid_control_token: true,
} as const satisfies Members<ErrorCode>;

/** The keys of a witness, sorted, to compare with `Object.keys` of an answer. */
export function keysOf(witness: object): string[] {
  return Object.keys(witness).sort();
}
