/**
 * The error catalogue: every error the simulator can answer with, in one place.
 *
 * Section 7 of the interface document fixes the shape and the type/status pairs; the simulator fixes
 * the codes. The HTTP routes, the request-validator mapping and `openapi.yaml` (the `ErrorCode`
 * enum) all read from here; a test checks that this list and the OpenAPI enum are the same.
 */

export type ErrorType =
  | 'invalid_request_error'
  | 'authentication_error'
  | 'insufficient_balance'
  | 'compliance_error'
  | 'rate_limit_error'
  | 'api_error'
  | 'permission_error';

/**
 * HTTP status of each error type: the six of the interface document (section 7.2), and the
 * simulator's own `permission_error` (403), which only its access checks answer (a request from a
 * host or an origin the simulator does not serve).
 */
const STATUS_OF_TYPE: Readonly<Record<ErrorType, number>> = {
  invalid_request_error: 400,
  authentication_error: 401,
  insufficient_balance: 402,
  permission_error: 403,
  compliance_error: 422,
  rate_limit_error: 429,
  api_error: 500,
};

/**
 * The stages that can reject a request for compliance, and so the values of an error's `stage`:
 * claim linking (a synchronous 422) and output verification (the generation fails).
 */
export type ComplianceStage = 'claim_linking' | 'output_verification';

interface CatalogueEntry {
  readonly type: ErrorType;
  /** HTTP status; equals STATUS_OF_TYPE[type] except for the 404s, the file and HTTP answers' 412, 416 and 417, and the 421s of shards and their proxy. */
  readonly status: number;
  /** The default message, used when the caller gives none. */
  readonly message: string;
}

const entry = (type: ErrorType, message: string, status = STATUS_OF_TYPE[type]): CatalogueEntry => ({
  type,
  status,
  message,
});

/** Every error code, with its type, HTTP status and default message. */
export const ERROR_CATALOGUE = {
  missing_parameter: entry('invalid_request_error', 'A required parameter is missing.'),
  invalid_parameter: entry('invalid_request_error', 'A parameter has an invalid value.'),
  unknown_parameter: entry('invalid_request_error', 'The request contains an unknown parameter.'),
  invalid_json: entry(
    'invalid_request_error',
    'The request body is not valid JSON. Send a JSON object with Content-Type: application/json.',
  ),
  unsupported_content_type: entry(
    'invalid_request_error',
    'POST requests must send Content-Type: application/json.',
  ),
  request_too_large: entry('invalid_request_error', 'The request body exceeds 1 MiB.'),
  invalid_request: entry('invalid_request_error', 'The request is not valid HTTP.'),
  model_not_found: entry('invalid_request_error', 'The requested model does not exist.'),
  keyframe_not_found: entry('invalid_request_error', 'No keyframe image with this id exists.'),
  resource_not_found: entry('invalid_request_error', 'No such resource.', 404),
  unknown_route: entry('invalid_request_error', 'Unknown route.', 404),
  not_cancelable: entry('invalid_request_error', 'This generation can no longer be canceled.'),
  generation_resolved: entry('invalid_request_error', 'This generation has already resolved; it can no longer be moved.'),
  idempotency_key_reused: entry(
    'invalid_request_error',
    'This Idempotency-Key was already used with a different request. Use a new key for a new request.',
  ),
  range_not_satisfiable: entry('invalid_request_error', 'The requested range is not satisfiable.', 416),
  precondition_failed: entry(
    'invalid_request_error',
    'The precondition (If-Match or If-Unmodified-Since) does not hold for this file. Fetch it again without the condition.',
    412,
  ),
  expectation_failed: entry(
    'invalid_request_error',
    'The only expectation the simulator meets is "Expect: 100-continue". Send the request without this Expect header.',
    417,
  ),
  missing_api_key: entry(
    'authentication_error',
    'No API key provided. Authenticate with an Authorization header, for example "Authorization: Bearer sk_test_123".',
  ),
  invalid_api_key: entry(
    'authentication_error',
    'Invalid API key. Keys have the form "Bearer sk_test_..." in the Authorization header.',
  ),
  revoked_api_key: entry('authentication_error', 'This API key has been revoked.'),
  insufficient_balance: entry(
    'insufficient_balance',
    'The account balance cannot cover this request.',
  ),
  claim_linking_rejected: entry(
    'compliance_error',
    'The request was rejected by claim linking.',
  ),
  output_rejected: entry('compliance_error', 'The output was rejected by output verification.'),
  rate_limit_exceeded: entry(
    'rate_limit_error',
    'Too many requests. Retry after the number of seconds in the Retry-After header.',
  ),
  internal_error: entry('api_error', 'An internal error occurred. Retry with exponential backoff.'),
  keyframe_failed: entry('api_error', 'Keyframe generation failed.'),
  routing_failed: entry('api_error', 'No downstream model could be routed for this request.'),
  render_failed: entry('api_error', 'The render failed.'),
  upstream_timeout: entry('api_error', 'A downstream model timed out.'),
  // Answered by the proxy in front of shards (docs/scaling.md), never by a simulator itself.
  sharded_global_call: entry(
    'invalid_request_error',
    'This control call names no account, so the proxy in front of the shards cannot choose one: send it to every shard (/shards/I/_sim/...), or name the account with ?api_key=.',
    421,
  ),
  unroutable_api_key: entry(
    'invalid_request_error',
    'The proxy in front of the shards routes a control call by its api_key as written, and cannot read a percent-encoded one (or one with +): send the key unencoded.',
    421,
  ),
  // Answered by a shard to a key that belongs to another shard (the proxy routed it elsewhere, or the
  // request was sent to the shard directly): it holds none of that key's state.
  wrong_shard: entry(
    'invalid_request_error',
    "This shard does not hold this key's account: the key belongs to another shard. Send the request through the proxy in front of the shards.",
    421,
  ),
  // Answered by a page's handlers once closed (`video-service-sim/msw`, `close()`), and by any
  // simulator to a wait for requests it held when it stopped (with its own message).
  simulator_closed: entry(
    'api_error',
    'These simulator handlers were closed (close()): they answer nothing more. Create new ones.',
    503,
  ),
  // The simulator's access checks (never a service error: fault injection does not answer them).
  host_not_allowed: entry(
    'permission_error',
    'The Host header names a host this simulator does not serve. Use localhost, or start it with --allowed-hosts HOST.',
  ),
  cross_origin_request: entry(
    'permission_error',
    'The control API (/_sim) does not answer requests made from another origin.',
  ),
  control_token_required: entry(
    'authentication_error',
    'The control API (/_sim) needs the control token. Send it as "Authorization: Bearer TOKEN" (printed at start, or the one given with --control-token).',
  ),
  invalid_control_token: entry(
    'authentication_error',
    'The control token is not the one this simulator was started with. Send it as "Authorization: Bearer TOKEN".',
  ),
} as const satisfies Record<string, CatalogueEntry>;

export type ErrorCode = keyof typeof ERROR_CATALOGUE;

export const ERROR_CODES = Object.keys(ERROR_CATALOGUE) as ErrorCode[];

/** The codes of the simulator's access checks: answers about the simulator itself, never injected as a service's error. */
export const ACCESS_ERROR_CODES: readonly ErrorCode[] = ['host_not_allowed', 'cross_origin_request', 'control_token_required', 'invalid_control_token'];

/** The codes the proxy in front of shards answers (docs/scaling.md): never a simulator's, never injected. */
export const PROXY_ERROR_CODES: readonly ErrorCode[] = ['sharded_global_call', 'unroutable_api_key'];

/** The code of a simulator that stopped: a page's handlers once closed, any simulator to a wait it held when it stopped; never injected. */
export const PAGE_ERROR_CODES: readonly ErrorCode[] = ['simulator_closed'];

/** The code a shard answers for a key that belongs to another shard: about the deployment, never injected. */
export const SHARD_ERROR_CODES: readonly ErrorCode[] = ['wrong_shard'];

export function isErrorCode(code: string): code is ErrorCode {
  return Object.prototype.hasOwnProperty.call(ERROR_CATALOGUE, code);
}

/** The section-7.1 error object: `param` only on invalid_request_error, `stage` only on compliance_error. */
export interface ErrorObject {
  type: ErrorType;
  code: string;
  message: string;
  param?: string | null;
  stage?: ComplianceStage;
}

export interface ErrorBody {
  error: ErrorObject;
}

export interface SimErrorOptions {
  message?: string;
  param?: string | null;
  stage?: ComplianceStage;
  /** Overrides the type (fault injection may pair a status with another code). */
  type?: ErrorType;
  status?: number;
  /** Extra response headers, such as Retry-After. */
  headers?: Record<string, string>;
}

/**
 * The `param` a code names when the thrower gives none: a missing resource names its `id`, a
 * reused key names the `Idempotency-Key` header.
 */
const DEFAULT_PARAM: Readonly<Record<string, string>> = {
  resource_not_found: 'id',
  idempotency_key_reused: 'Idempotency-Key',
};

/** An error that becomes a section-7 response. Thrown by the core, rendered by the HTTP layer. */
export class SimError extends Error {
  readonly code: string;
  readonly type: ErrorType;
  readonly status: number;
  readonly param: string | null;
  readonly stage: ComplianceStage | undefined;
  readonly headers: Record<string, string>;

  /** `code`: a catalogue code, or another (a scenario's own failure code) with its type from `options`. */
  constructor(code: string, options: SimErrorOptions = {}) {
    const known = isErrorCode(code) ? ERROR_CATALOGUE[code] : undefined;
    const type = options.type ?? known?.type ?? 'api_error';
    // An expected answer (every 429, every 400), never a bug: a stack trace would cost its capture
    // on the request path and never be read.
    const stackTraceLimit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    super(options.message ?? known?.message ?? 'An error occurred.');
    Error.stackTraceLimit = stackTraceLimit;
    this.name = 'SimError';
    this.code = code;
    this.type = type;
    this.status = options.status ?? (known && known.type === type ? known.status : STATUS_OF_TYPE[type]);
    this.param = options.param ?? DEFAULT_PARAM[code] ?? null;
    this.stage = options.stage ?? (type === 'compliance_error' ? (code === 'output_rejected' ? 'output_verification' : 'claim_linking') : undefined);
    this.headers = options.headers ?? {};
  }

  toObject(): ErrorObject {
    return errorObject(this.type, this.code, this.message, { param: this.param, stage: this.stage });
  }

  toBody(): ErrorBody {
    return { error: this.toObject() };
  }
}

/** Builds an error object with exactly the fields section 7.1 allows for its type. */
export function errorObject(
  type: ErrorType,
  code: string,
  message: string,
  extra: { param?: string | null; stage?: ComplianceStage } = {},
): ErrorObject {
  const obj: ErrorObject = { type, code, message };
  if (type === 'invalid_request_error') obj.param = extra.param ?? null;
  if (type === 'compliance_error') obj.stage = extra.stage ?? 'claim_linking';
  return obj;
}

/** How many characters of a client's value an error message names at most. */
const NAMED_VALUE_LENGTH = 100;

/**
 * A value the client sent, as an error message (or `param`) names it: whole up to 100 characters,
 * else its first 100 and an ellipsis, so that no answer echoes a value of unbounded size. A cut
 * never splits a character written as two UTF-16 units.
 */
export function clip(value: string, max = NAMED_VALUE_LENGTH): string {
  if (value.length <= max) return value;
  const code = value.charCodeAt(max - 1);
  const end = code >= 0xd800 && code <= 0xdbff ? max - 1 : max;
  return `${value.slice(0, end)}…`;
}

/** Shorthand used across the core: `throw fail('resource_not_found', { param: 'id' })`. */
export function fail(code: ErrorCode, options: SimErrorOptions = {}): SimError {
  return new SimError(code, options);
}
