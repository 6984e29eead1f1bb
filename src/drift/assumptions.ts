/**
 * The simulator's assumptions about the real service, by the id each carries in `openapi.yaml`
 * (`x-sim-assumption`), in the order of that file. Each says, in a line, what the simulator bets;
 * those that no probe can put to a service without spending money or waiting say why here, and the
 * drift check reports them as `not_observed` with that reason.
 */
export interface Assumption {
  id: string;
  /** What the simulator assumes, in a line. */
  says: string;
  /** Set when the drift check never probes it: why it cannot be observed. */
  notObserved?: string;
}

const WAITING = 'a generation shows it only as it runs through the pipeline, which takes minutes and a paid render';

export const ASSUMPTIONS: readonly Assumption[] = [
  {
    id: 'pipeline-stages',
    says: 'six stages: claim_linking, queue, keyframe, routing, render, output_verification',
    notObserved: WAITING,
  },
  {
    id: 'check-order',
    says: 'authentication, route, body, unknown/missing (model before prompt)/invalid parameters, existence, in that order',
  },
  { id: 'unknown-parameter-400', says: 'an unknown body or query parameter is 400 unknown_parameter, param naming it' },
  { id: 'body-parse-400', says: 'malformed JSON, an empty or non-object body is 400 invalid_json; a non-JSON Content-Type is 400 unsupported_content_type; param null' },
  { id: 'null-optional-absent', says: 'null for an optional field means the same as leaving it out' },
  { id: 'success-200', says: 'every success (create, retrieve, list, cancel, image) answers 200' },
  { id: 'list-order-ascending', says: 'lists are oldest first; after=ID returns the generations created after ID' },
  { id: 'list-after-unknown-400', says: 'an unknown after is 400 invalid_parameter, param after' },
  { id: 'list-limit-range-400', says: 'limit outside 1-100 is 400 invalid_parameter (never clamped)' },
  { id: 'list-limit-decimal', says: 'limit must be a decimal integer (1e1, 0x10, Infinity are 400)' },
  { id: 'unknown-id-404', says: 'retrieving an unknown id is 404 resource_not_found, param id' },
  { id: 'cancel-not-cancelable', says: 'canceling a generation that can no longer be canceled is 400 not_cancelable, param null' },
  { id: 'image-ready-sync', says: 'images are created synchronously: a create answers status ready' },
  { id: 'image-prompt-bounds', says: 'an image prompt needs a non-white-space character and at most 4,000 characters, else 400 invalid_parameter, param prompt' },
  {
    id: 'auth-keys-by-scenario',
    says: 'keys come from the scenario (default: any sk_test_ key is an account of its own)',
    notObserved: 'how the service issues keys is not shown; the drift check uses only the key it is given',
  },
  {
    id: 'auth-revoked-key-code',
    says: 'a revoked key is 401 revoked_api_key',
    notObserved: 'it needs a revoked key of the service',
  },
  { id: 'auth-invalid-key-code', says: 'a key of another form is 401 invalid_api_key' },
  { id: 'auth-missing-key-code', says: 'no Authorization header is 401 missing_api_key' },
  { id: 'idempotency-scope', says: 'Idempotency-Keys are scoped by account and endpoint' },
  { id: 'idempotency-success-only', says: 'only successes are stored under an Idempotency-Key' },
  { id: 'idempotency-replay-header', says: 'a replay answers the original status and body with Idempotent-Replayed: true' },
  { id: 'idempotency-key-reused-400', says: 'the same Idempotency-Key with a different body is 400 idempotency_key_reused' },
  {
    id: 'idempotency-retention',
    says: 'Idempotency-Keys are kept 24 hours',
    notObserved: 'it takes waiting a day between a create and its replay',
  },
  { id: 'ids-not-pattern-checked', says: 'ids are looked up, not pattern-checked: any unknown id is 404 resource_not_found' },
  { id: 'request-id-header', says: 'every response carries a unique X-Request-Id' },
  { id: 'ratelimit-limit-header', says: 'every authenticated response carries X-RateLimit-Limit, an integer' },
  { id: 'ratelimit-remaining-header', says: 'X-RateLimit-Remaining: the whole tokens left, at most the limit' },
  { id: 'ratelimit-reset-header', says: 'X-RateLimit-Reset: integer seconds until the bucket is full (0 exactly when it is)' },
  { id: 'retry-after-429', says: 'a 429 carries Retry-After in integer seconds' },
  { id: 'not-found-404', says: 'an unknown id is 404 invalid_request_error resource_not_found, param id, on every operation' },
  { id: 'unknown-route-404', says: 'an unknown route or method (a trailing slash included) is 404 invalid_request_error unknown_route, param null' },
  {
    id: 'claim-linking-per-request',
    says: 'claim linking judges the request (prompt, negative prompt, account), not the attempt: an unchanged retry of a rejected create is rejected again',
    notObserved: 'it needs a prompt the service is sure to reject, and the service does not publish its claim-linking rules',
  },
  {
    id: 'status-stage-mapping',
    says: 'queued = queue; processing = keyframe, routing, render; verifying = output_verification',
    notObserved: WAITING,
  },
  {
    id: 'pipeline-stage-names',
    says: 'the six pipeline stages, in order',
    notObserved: WAITING,
  },
  { id: 'model-names', says: 'the models video-3.0, video-3.1 and video-3.2 exist' },
  { id: 'model-not-found-400', says: 'an unknown model is 400 model_not_found, param model' },
  { id: 'video-prompt-bounds', says: 'a video prompt needs a non-white-space character and at most 4,000 characters, else 400 invalid_parameter, param prompt' },
  { id: 'keyframe-not-found-400', says: "keyframe_id is looked up in the account's images; an unknown one is 400 keyframe_not_found, param keyframe_id" },
  {
    id: 'video-field-fill-order',
    says: 'keyframe, routed_model, compliance, then output, cost_cents, completed_at fill in as the stages end',
    notObserved: WAITING,
  },
  { id: 'keyframe-ref-ready', says: "a video's keyframe has status ready" },
  { id: 'compliance-verified-iff-block', says: 'compliance.verified is false exactly when a block flag is present' },
  { id: 'compliance-flag-shape', says: 'a compliance flag is { code, severity: info|warning|block, message }' },
  { id: 'output-media', says: 'output.url is a real MP4 and thumbnail_url a real PNG' },
  { id: 'image-status-ready', says: 'ready is the only image status' },
  { id: 'image-model-name', says: 'images are made with video-3.2-keyframe' },
  { id: 'error-code-catalogue', says: 'every error code is one of the catalogue in openapi.yaml' },
  { id: 'error-param-present', says: 'param (string or null) is present on every invalid_request_error' },
  { id: 'compliance-stage-values', says: "stage is claim_linking on a 422, output_verification in a failed video's error" },
  {
    id: 'negative-prompt-as-submitted',
    says: 'a video echoes its negative_prompt as submitted; the merged one is not on the video',
  },
  {
    id: 'cost-pricing',
    says: 'cost is a price per output second by resolution plus the keyframe; failures charge the render if it happened',
    notObserved: 'the service publishes no prices to check a cost against (and a cost shows only once a paid render has run to its end)',
  },
];

/** The row for every answer checked against openapi.yaml with the simulator's compiled validators. */
export const SCHEMA_ROW = 'contract.schema';
