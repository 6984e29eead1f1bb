/**
 * The probes of the drift check, as data: each request, the assumption it puts to the target, and
 * the answer the simulator would give. They are built so that nothing they send can create
 * anything on a service that behaves like the simulator, and nothing on one that departs from a
 * single assumption either: every create that should fail names a model that does not exist or
 * an image prompt with an invalid aspect ratio besides what it probes, so that a service that
 * accepted the probed part still refuses the request. (Should a create succeed anyway, the video
 * is canceled at once and its price counted.)
 *
 * The paid probes (an image; a video created and canceled at once; an idempotent create and its
 * replay, canceled too) run only within the spend limit, each request that may create counted at
 * its full list price.
 */
import { ASSUMPTIONS } from './assumptions.js';
import type { Expect } from './findings.js';
import type { ProbeRequest } from './serviceClient.js';
import type { Prices } from './prices.js';

/** A model no service has: a create naming it is refused at the existence check at the latest. */
export const NO_MODEL = 'video-0.0-drift-probe';
/** Ids of the right form that no account has. */
export const NO_VIDEO = 'vid_driftProbeUnknown0000000';
export const NO_IMAGE = 'img_driftProbeUnknown0000000';
/** An aspect ratio no service offers: an image create carrying it is refused. */
export const NO_ASPECT = '7:3';

export const PROMPT = 'Drift check probe: a plain grey test card, held still.';
export const NEGATIVE_PROMPT = 'drift check probe: no text';
export const UNKNOWN_PARAM = 'drift_probe_unknown';
const LONG_PROMPT = 'a '.repeat(2000) + 'a'; // 4,001 characters
const KNOWN_MODELS = ['video-3.0', 'video-3.1', 'video-3.2'];


/** The body of a paid video probe (cheapest duration and resolution). */
export const PAID_VIDEO = { model: 'video-3.2', prompt: PROMPT, duration_seconds: 4, resolution: '720p' } as const;

export interface Probe {
  assumption: string;
  request: ProbeRequest;
  expect: Expect;
  /** Why this answer is expected, in words (shown with a departure). */
  why?: string;
}

const post = (path: string, json: unknown, extra: Partial<ProbeRequest> = {}): ProbeRequest => ({ method: 'POST', path, json, ...extra });
const video = (json: unknown, extra: Partial<ProbeRequest> = {}): ProbeRequest => post('/v1/videos', json, extra);
const image = (json: unknown, extra: Partial<ProbeRequest> = {}): ProbeRequest => post('/v1/images', json, extra);
const get = (path: string, extra: Partial<ProbeRequest> = {}): ProbeRequest => ({ method: 'GET', path, ...extra });
const invalid = (param: string): Expect => ({ status: 400, type: 'invalid_request_error', code: 'invalid_parameter', param });

/** The probes that cannot cost anything: they always run, in this order. */
export const FREE_PROBES: readonly Probe[] = [
  // Authentication.
  { assumption: 'auth-missing-key-code', request: get('/v1/videos', { auth: 'none' }), expect: { status: 401, type: 'authentication_error', code: 'missing_api_key' } },
  {
    assumption: 'auth-invalid-key-code',
    request: get('/v1/videos', { auth: { header: 'Bearer drift_probe_not_a_key' } }),
    expect: { status: 401, type: 'authentication_error', code: 'invalid_api_key' },
  },

  // The order of checks: only which check answers first is compared (what each check answers is
  // the business of its own assumption).
  { assumption: 'check-order', request: post('/v1/drift-probe-unknown', {}, { auth: 'none' }), expect: { status: 401 }, why: 'authentication comes before the route' },
  { assumption: 'check-order', request: { method: 'POST', path: '/v1/videos', raw: '{"model":', auth: 'none' }, expect: { status: 401 }, why: 'authentication comes before the body' },
  { assumption: 'check-order', request: { method: 'POST', path: '/v1/drift-probe-unknown', raw: '{"model":' }, expect: { code: 'unknown_route' }, why: 'the route comes before the body' },
  { assumption: 'check-order', request: video({}), expect: { code: 'missing_parameter', param: 'model' }, why: 'model is checked before prompt' },
  { assumption: 'check-order', request: video({ model: 'video-3.2', duration_seconds: 99 }), expect: { code: 'missing_parameter', param: 'prompt' }, why: 'missing parameters come before invalid values' },
  { assumption: 'check-order', request: video({ model: NO_MODEL, prompt: PROMPT, duration_seconds: 99 }), expect: { code: 'invalid_parameter' }, why: 'invalid values come before existence' },
  { assumption: 'check-order', request: video({ model: NO_MODEL, prompt: PROMPT, keyframe_id: NO_IMAGE }), expect: { code: 'model_not_found' }, why: 'the model is looked up before the keyframe' },

  // Strictness: unknown parameters, bodies that are not JSON objects.
  {
    assumption: 'unknown-parameter-400',
    request: video({ model: NO_MODEL, prompt: PROMPT, [UNKNOWN_PARAM]: true }),
    expect: { status: 400, type: 'invalid_request_error', code: 'unknown_parameter', param: UNKNOWN_PARAM },
  },
  {
    assumption: 'unknown-parameter-400',
    request: image({ prompt: '   ', aspect_ratio: NO_ASPECT, [UNKNOWN_PARAM]: true }),
    expect: { status: 400, type: 'invalid_request_error', code: 'unknown_parameter', param: UNKNOWN_PARAM },
  },
  {
    assumption: 'unknown-parameter-400',
    request: get(`/v1/videos?${UNKNOWN_PARAM}=1`),
    expect: { status: 400, type: 'invalid_request_error', code: 'unknown_parameter', param: UNKNOWN_PARAM },
  },
  { assumption: 'body-parse-400', request: { method: 'POST', path: '/v1/videos', raw: '{"model":' }, expect: { status: 400, type: 'invalid_request_error', code: 'invalid_json', param: null } },
  { assumption: 'body-parse-400', request: { method: 'POST', path: '/v1/videos', raw: '' }, expect: { status: 400, type: 'invalid_request_error', code: 'invalid_json', param: null } },
  { assumption: 'body-parse-400', request: { method: 'POST', path: '/v1/videos', raw: '[]' }, expect: { status: 400, type: 'invalid_request_error', code: 'invalid_json', param: null } },
  { assumption: 'body-parse-400', request: { method: 'POST', path: '/v1/images', raw: '{"prompt":' }, expect: { status: 400, type: 'invalid_request_error', code: 'invalid_json', param: null } },
  {
    assumption: 'body-parse-400',
    request: { method: 'POST', path: '/v1/videos', raw: JSON.stringify({ model: NO_MODEL, prompt: PROMPT }), contentType: 'text/plain' },
    expect: { status: 400, type: 'invalid_request_error', code: 'unsupported_content_type', param: null },
  },
  // A duration named twice, invalid first and valid last: only the model is wrong if the last wins.
  {
    assumption: 'body-duplicate-field',
    request: { method: 'POST', path: '/v1/videos', raw: `{"model":${JSON.stringify(NO_MODEL)},"prompt":${JSON.stringify(PROMPT)},"duration_seconds":99,"duration_seconds":4}` },
    expect: { code: 'model_not_found' },
    why: 'the last duration_seconds (4) is the one read, so only the model is wrong',
  },
  // A cancel of an id no account has: its body is judged before the id is looked up.
  {
    assumption: 'cancel-body',
    request: { method: 'DELETE', path: `/v1/videos/${NO_VIDEO}`, raw: '' },
    expect: { status: 404, code: 'resource_not_found' },
    why: 'Content-Type: application/json without a body is no body, so only the id is unknown',
  },
  {
    assumption: 'cancel-body',
    request: { method: 'DELETE', path: `/v1/videos/${NO_VIDEO}`, raw: '{}', contentType: 'text/plain' },
    expect: { status: 404, code: 'resource_not_found' },
    why: '{} is no body whatever its Content-Type, so only the id is unknown',
  },
  {
    assumption: 'cancel-body',
    request: { method: 'DELETE', path: `/v1/videos/${NO_VIDEO}`, json: { [UNKNOWN_PARAM]: true } },
    expect: { status: 400, type: 'invalid_request_error', code: 'unknown_parameter', param: UNKNOWN_PARAM },
  },
  {
    assumption: 'null-optional-absent',
    request: video({ model: NO_MODEL, prompt: PROMPT, negative_prompt: null, duration_seconds: null, resolution: null, keyframe_id: null }),
    expect: { code: 'model_not_found' },
    why: 'the null fields are left out, so only the model is wrong',
  },

  // Models, prompts, keyframes.
  ...KNOWN_MODELS.map(
    (model): Probe => ({
      assumption: 'model-names',
      request: video({ model, prompt: PROMPT, duration_seconds: 4, resolution: '720p', keyframe_id: NO_IMAGE }),
      expect: { code: 'keyframe_not_found' },
      why: 'the model exists, so only the keyframe is missing',
    }),
  ),
  {
    assumption: 'model-not-found-400',
    request: video({ model: NO_MODEL, prompt: PROMPT, duration_seconds: 4, resolution: '720p' }),
    expect: { status: 400, type: 'invalid_request_error', code: 'model_not_found', param: 'model' },
  },
  { assumption: 'video-prompt-bounds', request: video({ model: NO_MODEL, prompt: '   ' }), expect: invalid('prompt') },
  { assumption: 'video-prompt-bounds', request: video({ model: NO_MODEL, prompt: '' }), expect: invalid('prompt') },
  { assumption: 'video-prompt-bounds', request: video({ model: NO_MODEL, prompt: LONG_PROMPT }), expect: invalid('prompt') },
  {
    assumption: 'keyframe-not-found-400',
    request: video({ model: 'video-3.2', prompt: PROMPT, duration_seconds: 4, resolution: '720p', keyframe_id: NO_IMAGE }),
    expect: { status: 400, type: 'invalid_request_error', code: 'keyframe_not_found', param: 'keyframe_id' },
  },
  {
    assumption: 'keyframe-not-found-400',
    request: video({ model: 'video-3.2', prompt: PROMPT, duration_seconds: 4, resolution: '720p', keyframe_id: 'foo' }),
    expect: { status: 400, type: 'invalid_request_error', code: 'keyframe_not_found', param: 'keyframe_id' },
    why: 'ids are looked up, not pattern-checked',
  },
  { assumption: 'image-prompt-bounds', request: image({ prompt: '   ', aspect_ratio: NO_ASPECT }), expect: invalid('prompt'), why: 'the prompt comes before aspect_ratio' },
  { assumption: 'image-prompt-bounds', request: image({ prompt: '', aspect_ratio: NO_ASPECT }), expect: invalid('prompt'), why: 'the prompt comes before aspect_ratio' },
  { assumption: 'image-prompt-bounds', request: image({ prompt: LONG_PROMPT, aspect_ratio: NO_ASPECT }), expect: invalid('prompt'), why: 'the prompt comes before aspect_ratio' },

  // The list's parameters.
  { assumption: 'list-limit-range-400', request: get('/v1/videos?limit=0'), expect: { status: 400, code: 'invalid_parameter' } },
  { assumption: 'list-limit-range-400', request: get('/v1/videos?limit=101'), expect: { status: 400, code: 'invalid_parameter' }, why: 'never clamped' },
  { assumption: 'list-limit-decimal', request: get('/v1/videos?limit=1e1'), expect: { status: 400 } },
  { assumption: 'list-limit-decimal', request: get('/v1/videos?limit=0x10'), expect: { status: 400 } },
  { assumption: 'list-limit-decimal', request: get('/v1/videos?limit=Infinity'), expect: { status: 400 } },
  { assumption: 'list-after-unknown-400', request: get(`/v1/videos?after=${NO_VIDEO}`), expect: { status: 400, code: 'invalid_parameter', param: 'after' } },

  // Unknown ids and routes.
  { assumption: 'unknown-id-404', request: get(`/v1/videos/${NO_VIDEO}`), expect: { status: 404, code: 'resource_not_found', param: 'id' } },
  {
    assumption: 'not-found-404',
    request: { method: 'DELETE', path: `/v1/videos/${NO_VIDEO}` },
    expect: { status: 404, type: 'invalid_request_error', code: 'resource_not_found', param: 'id' },
  },
  { assumption: 'ids-not-pattern-checked', request: get('/v1/videos/foo'), expect: { status: 404, code: 'resource_not_found' } },
  { assumption: 'ids-not-pattern-checked', request: { method: 'DELETE', path: '/v1/videos/foo' }, expect: { status: 404, code: 'resource_not_found' } },
  ...[
    get('/v1/drift-probe-unknown'),
    { method: 'PATCH', path: '/v1/videos' },
    { method: 'POST', path: `/v1/videos/${NO_VIDEO}` },
    get('/v1/videos/'),
  ].map(
    (request): Probe => ({
      assumption: 'unknown-route-404',
      request,
      expect: { status: 404, type: 'invalid_request_error', code: 'unknown_route', param: null },
    }),
  ),
];

/**
 * Sequences of free probes (each a few requests whose later answers depend on the earlier ones).
 * `idempotency-success-only`: a create refused under a key, then another body under that key,
 * must be judged on its own (the refusal was not stored).
 */
export const FREE_SEQUENCES = {
  'idempotency-success-only': (key: string): [ProbeRequest, ProbeRequest] => [
    video({ model: `${NO_MODEL}-a`, prompt: PROMPT }, { idempotencyKey: key }),
    video({ model: `${NO_MODEL}-b`, prompt: PROMPT }, { idempotencyKey: key }),
  ],
} as const;

/** A paid probe: what it costs at worst, and what it observes. */
export interface PaidProbe {
  name: 'image' | 'video' | 'idempotent create and replay';
  /** Its worst case: every request that may create, at full list price. */
  cents(prices: Prices): number;
  assumptions: readonly string[];
}

export const PAID_PROBES: readonly PaidProbe[] = [
  {
    name: 'image',
    cents: (p) => p.imageCents,
    assumptions: ['image-ready-sync', 'image-status-ready', 'image-model-name', 'success-200'],
  },
  {
    name: 'video',
    cents: (p) => p.videoCents,
    assumptions: ['success-200', 'negative-prompt-as-submitted', 'keyframe-not-found-400', 'cancel-not-cancelable', 'list-order-ascending'],
  },
  {
    // The create and its replay may each create a video (the replay, if the key is not honoured);
    // the other requests under the key name a model that does not exist or are not JSON.
    name: 'idempotent create and replay',
    cents: (p) => 2 * p.videoCents,
    assumptions: ['idempotency-replay-header', 'idempotency-key-reused-400', 'idempotency-scope', 'check-order', 'list-order-ascending'],
  },
];

/** Assumptions checked over every answer of the run (and the videos the answers show). */
export const ANSWER_CHECKS: readonly string[] = [
  'success-200',
  'request-id-header',
  'ratelimit-limit-header',
  'ratelimit-remaining-header',
  'ratelimit-reset-header',
  'retry-after-429',
  'error-code-catalogue',
  'error-param-present',
  'list-order-ascending',
  'keyframe-ref-ready',
  'compliance-verified-iff-block',
  'compliance-flag-shape',
  'compliance-stage-values',
];

/**
 * Assumptions probed on what the account already has (free): the media of a succeeded video it
 * lists, a cancel of a video it lists as canceled (when the paid video probe did not run).
 */
export const ACCOUNT_CHECKS: readonly string[] = ['output-media', 'cancel-not-cancelable'];

export interface ProbeTableEntry {
  id: string;
  /** How the drift check observes it: free probes, paid probes, checks over every answer. */
  observedBy: string[];
  /** Set when it is never probed: why. */
  notObserved?: string;
}

/** Every assumption with how the drift check observes it, or why it cannot. */
export function probeTable(): ProbeTableEntry[] {
  return ASSUMPTIONS.map((a) => {
    const observedBy: string[] = [];
    const free = FREE_PROBES.filter((p) => p.assumption === a.id).length;
    if (free > 0) observedBy.push(`${free} free probe${free > 1 ? 's' : ''}`);
    if (a.id in FREE_SEQUENCES) observedBy.push('a free probe sequence');
    for (const paid of PAID_PROBES) if (paid.assumptions.includes(a.id)) observedBy.push(`the paid ${paid.name} probe`);
    if (ANSWER_CHECKS.includes(a.id)) observedBy.push('every answer');
    if (ACCOUNT_CHECKS.includes(a.id)) observedBy.push("the account's own videos");
    return a.notObserved === undefined ? { id: a.id, observedBy } : { id: a.id, observedBy, notObserved: a.notObserved };
  });
}
