/**
 * The request path: a plain request in, a plain answer out, no framework. `handleRequest` reads top
 * to bottom in the order of checks of a `/v1` request, each early answer a `return`:
 *
 *   authentication → faults and latency → rate limit → idempotent replay → route → body →
 *   parameters → the operation (existence, balance, claim linking) → the answer checked against
 *   openapi.yaml → stored under its Idempotency-Key → journaled.
 *
 * (A CORS preflight is answered by the HTTP adapter before any of this, without a key.) The control
 * API under `/_sim` takes the same path without the service's own checks: route → body →
 * parameters → operation → answer checked.
 */
import type { Readable } from 'node:stream';
import type { Account } from '../core/account.js';
import { SimError, errorObject, fail } from '../core/errors.js';
import { requestFingerprint } from '../core/idempotency.js';
import type { JournalRecord } from '../core/journal.js';
import type { Simulator } from '../core/simulator.js';
import { bodyFingerprint, readJsonBody, type RawBody } from './body.js';
import { checkRequest, checkResponse, matchRoute, type Operation } from './contract.js';
import { OPERATION_HANDLERS, RawAnswer, StreamAnswer, type Control, type OperationEffects, type OperationInput } from './operations.js';

/** A request as the HTTP adapter hands it over. */
export interface ApiRequest {
  method: string;
  /** The path, percent-encoded as received, without the query string. */
  path: string;
  /** The query string as received, without the `?` ('' when none). */
  query: string;
  /** Header names in lower case. */
  headers: Record<string, string | undefined>;
  body: RawBody;
}

/** A body sent from a stream (the transcript: it may not fit in a string): its length in bytes, and its bytes. */
export interface StreamedBody {
  readonly length: number;
  open(): Readable;
  /** All of it as text, read at once (for the in-process API). */
  text(): string;
}

/** An answer for the HTTP adapter to send. */
export interface ApiAnswer {
  status: number;
  headers: Record<string, string>;
  /** The body as sent: JSON text ('' when `stream` is given). */
  body: string;
  /** A body to send from a stream instead of `body`. */
  stream: StreamedBody | undefined;
  contentType: string;
  /** Injected latency: wall-clock milliseconds to wait before sending. */
  delayMs: number;
  /** Set by `POST /_sim/shutdown`: close the server once this answer is sent. */
  shutdown?: boolean;
  /**
   * The journal's record of this request (`/v1`), for the adapter to mark `undelivered` when the
   * client has gone before the answer could be sent. Not part of what is sent.
   */
  journaled?: JournalRecord;
}

/** An answer before it is checked and serialised: a JSON value, text already serialised, or a stream. */
type Draft = Omit<ApiAnswer, 'body' | 'stream'> & ({ value: unknown } | { text: string } | { stream: StreamedBody });

/** One request and its answer, as a transcript records it. */
export interface Exchange {
  /** The global virtual time at which the request was handled (ms), before it moved the clock. */
  nowMs: number;
  /** The account's virtual time then (ms), or null (no account). */
  atMs: number | null;
  method: string;
  /** The path with its query string. */
  path: string;
  headers: ApiRequest['headers'];
  body: RawBody;
  answer: ApiAnswer;
}

/** An app's state around its simulator: what one Express app (or one replay) keeps. */
export interface ApiState {
  sim: Simulator;
  control: Control;
  /** Where the simulator's own bugs are reported. */
  log: (line: string) => void;
  /** Answers that failed validation against openapi.yaml (each became a 500). */
  responseFailures: { method: string; path: string; status: number; message: string }[];
  /** Sees every /v1 request and every state-changing control request, once answered. */
  onExchange?: (exchange: Exchange) => void;
}

const JSON_TYPE = 'application/json; charset=utf-8';

/**
 * Answers one request to the JSON API (`/v1` and `/_sim`); anything else is 404 `unknown_route`.
 * The request is handled at one instant of the clock (realtime mode included): all its timestamps
 * are the time it was handled at.
 */
export function handleRequest(state: ApiState, request: ApiRequest): ApiAnswer {
  return state.sim.atOneInstant(() =>
    request.path === '/v1' || request.path.startsWith('/v1/') ? handleServiceRequest(state, request) : handleControlRequest(state, request),
  );
}

/** A request to the service's API, in the contract's order of checks. */
function handleServiceRequest(state: ApiState, request: ApiRequest): ApiAnswer {
  const { sim } = state;
  const route = matchRoute(request.method, request.path);
  const operation = route?.operation;

  // Authentication, before anything else (unknown routes included).
  let account: Account;
  try {
    account = sim.authenticate(request.headers.authorization);
  } catch (e) {
    return finish(state, request, operation, null, errorDraft(e, { 'X-Request-Id': sim.nextRequestId() }));
  }
  const headers: Record<string, string> = { 'X-Request-Id': sim.nextRequestId(account) };
  const now = sim.catchUp(account);

  // Faults and latency: the core decides; the adapter only waits `delayMs`.
  const fate = sim.requestFate(account, request.method, request.path, operation && ((status) => operation.statuses.includes(status)));
  const effects: OperationEffects = {};
  const reply = (draft: Draft): ApiAnswer => finish(state, request, operation, account, draft, now, fate.note, effects);
  const replyError = (e: SimError): ApiAnswer => reply(errorDraft(e, headers, fate.delayMs));
  const bucket = account.bucketFor(request.method, request.path, now);
  if (fate.error) {
    // An injected fault spends no token, but carries the rate-limit headers like a real answer.
    Object.assign(headers, rateLimitHeaders(bucket.peek(now), fate.error));
    return replyError(fate.error);
  }

  // Rate limit: every authenticated request spends a token.
  const limit = bucket.take(now);
  Object.assign(headers, rateLimitHeaders(limit));
  if (!limit.allowed) {
    return replyError(
      fail('rate_limit_exceeded', {
        message: `Rate limit of ${limit.limit} requests exceeded. Retry after ${limit.retryAfterSeconds} s (of virtual time).`,
        headers: { 'Retry-After': String(limit.retryAfterSeconds) },
      }),
    );
  }

  // Idempotent replay: a stored success under the same key and the same request is answered again.
  const body =
    request.method === 'GET' || request.method === 'HEAD'
      ? { value: undefined }
      : readJsonBody(request.body, request.headers, request.method === 'DELETE' ? 'none' : 'error');
  const key = request.method === 'POST' ? request.headers['idempotency-key'] : undefined;
  const idempotency = key
    ? { endpoint: request.path, key, fingerprint: 'error' in body ? '\u0000unreadable' : requestFingerprint(body.value) }
    : undefined;
  if (idempotency) {
    const found = account.idempotency.lookup(idempotency.endpoint, idempotency.key, idempotency.fingerprint, now);
    if (found.kind === 'replay') {
      const replayHeaders = { ...headers, 'Idempotent-Replayed': 'true' };
      return reply({ status: found.status, headers: replayHeaders, text: found.text, contentType: JSON_TYPE, delayMs: fate.delayMs });
    }
    if (found.kind === 'conflict') {
      return replyError(
        fail('idempotency_key_reused', {
          message: `Idempotency-Key '${key}' was already used with a different request on ${request.path}. Use a new key for a new request.`,
        }),
      );
    }
  }

  // The route: an unknown route or method is 404 before anything about its body is judged.
  if (!route || !operation) return replyError(unknownRoute(request));

  // The body, then the parameters (unknown, missing, invalid).
  if ('error' in body) return replyError(body.error);
  if (route.params === null) return replyError(malformedId());
  const checked = checkRequest(operation, { params: route.params, query: request.query, headers: request.headers, body: body.value });
  if ('error' in checked) return replyError(checked.error);

  // The operation: existence, balance and claim linking are the core's checks, in that order.
  const done = perform(operation, {
    sim,
    control: state.control,
    account,
    params: route.params,
    query: checked.query,
    body: checked.body,
    forcedOutcome: fate.forcedOutcome,
    effects,
  });
  if ('error' in done) return reply(errorDraft(done.error, headers, fate.delayMs, state, request));
  const answer = reply(jsonDraft(200, headers, done.value, fate.delayMs));

  // Only a success is stored under its key, once it passed validation.
  if (idempotency && answer.status === 200) {
    account.idempotency.store(idempotency.endpoint, idempotency.key, idempotency.fingerprint, 200, answer.body, now);
  }
  return answer;
}

/** A request to the control API: no key, no rate limit, no journal; route, body, parameters, operation. */
function handleControlRequest(state: ApiState, request: ApiRequest): ApiAnswer {
  const { sim } = state;
  const headers = { 'X-Request-Id': sim.nextRequestId() };
  const route = matchRoute(request.method, request.path);
  const operation = route?.operation;
  const reply = (draft: Draft): ApiAnswer => finish(state, request, operation, null, draft);
  const replyError = (e: SimError): ApiAnswer => reply(errorDraft(e, headers));

  if (!route || !operation) return replyError(unknownRoute(request));
  const body = request.method === 'POST' ? readJsonBody(request.body, request.headers, 'object') : { value: undefined };
  if ('error' in body) return replyError(body.error);
  if (route.params === null) return replyError(malformedId());
  const checked = checkRequest(operation, { params: route.params, query: request.query, headers: request.headers, body: body.value });
  if ('error' in checked) return replyError(checked.error);

  const done = perform(operation, {
    sim,
    control: state.control,
    account: null,
    params: route.params,
    query: checked.query,
    body: checked.body,
    forcedOutcome: null,
    effects: {},
  });
  if ('error' in done) return reply(errorDraft(done.error, headers, 0, state, request));
  if (done.value instanceof RawAnswer) {
    return reply({ status: 200, headers, text: done.value.text, contentType: done.value.contentType, delayMs: 0 });
  }
  if (done.value instanceof StreamAnswer) {
    return reply({ status: 200, headers: { ...headers, ...done.value.headers }, stream: done.value.stream, contentType: done.value.contentType, delayMs: 0 });
  }
  const answer = reply(jsonDraft(200, headers, done.value, 0));
  if (operation.operationId === 'simShutdown') answer.shutdown = true;
  return answer;
}

/** Runs an operation: its answer's value, or what it threw (a catalogue error, or a bug). */
function perform(operation: Operation, input: OperationInput): { value: unknown } | { error: unknown } {
  const handler = OPERATION_HANDLERS[operation.operationId];
  if (!handler) return { error: new Error(`openapi.yaml's operation ${operation.operationId} has no handler`) };
  try {
    return { value: handler(input) };
  } catch (e) {
    return { error: e };
  }
}

function malformedId(): SimError {
  return fail('resource_not_found', { message: 'No resource has this id (its percent-encoding is malformed).' });
}

/**
 * The last step of every request: the answer is checked against openapi.yaml (one that fails is
 * logged and becomes a 500), and a /v1 request is journaled.
 */
function finish(
  state: ApiState,
  request: ApiRequest,
  operation: Operation | undefined,
  account: Account | null,
  draft: Draft,
  atMs?: number,
  note?: string,
  effects?: OperationEffects,
): ApiAnswer {
  let checked = draft;
  if (operation) {
    // A streamed body is checked as what it is documented as (a string), without reading it.
    const value = 'value' in draft ? draft.value : 'stream' in draft ? '' : draft.contentType === JSON_TYPE ? JSON.parse(draft.text) : draft.text;
    const problem = checkResponse(operation, draft.status, draft.headers, value);
    if (problem) {
      const path = pathWithQuery(request);
      state.responseFailures.push({ method: request.method, path, status: draft.status, message: problem });
      state.log(`response validation failed: ${request.method} ${path} (status ${draft.status}): ${problem}`);
      // Built here, not through the error class: the failure may lie there.
      const body = { error: errorObject('api_error', 'internal_error', 'The simulator produced a response that does not match openapi.yaml (a simulator bug; it has been logged).') };
      checked = jsonDraft(500, { 'X-Request-Id': draft.headers['X-Request-Id'] as string, ...pick(draft.headers, RATE_LIMIT_HEADERS) }, body, draft.delayMs);
    }
  }
  // Built field by field: an object rest (`{ value, text, ...rest }`) makes a dictionary-mode copy,
  // which cost more than the rest of this function together, and every read of the answer after it.
  const sent: ApiAnswer = {
    status: checked.status,
    headers: checked.headers,
    body: 'text' in checked ? checked.text : 'stream' in checked ? '' : JSON.stringify(checked.value),
    stream: 'stream' in checked ? checked.stream : undefined,
    contentType: checked.contentType,
    delayMs: checked.delayMs,
    journaled: undefined,
  };
  const { sim } = state;
  const isService = request.path === '/v1' || request.path.startsWith('/v1/');
  if (isService) {
    const video = 'value' in checked && sent.status === 200 ? videoShown(checked.value) : undefined;
    const retryAfter = sent.headers['Retry-After'];
    const record: JournalRecord = {
      method: request.method,
      path: pathWithQuery(request),
      status: sent.status,
      account: account?.key ?? null,
      atMs: atMs ?? sim.timeMsOf(null),
      hostMs: sim.hostTimeMs(),
      request_id: sent.headers['X-Request-Id'] as string,
      negative_prompt_effective: effects?.negativePromptEffective,
      fault: note,
      operation: operation?.operationId ?? null,
      idempotencyKey: request.headers['idempotency-key'],
      // Only a request of an account is ever reported on.
      bodyFingerprint: account === null ? null : bodyFingerprint(request.body),
      retryAfter: retryAfter === undefined ? undefined : Number(retryAfter),
      videoId: video?.id,
      videoStatus: video?.status,
      errorParam: sent.status >= 400 && 'value' in checked ? errorParamOf(checked.value) : undefined,
      errorCode: sent.status >= 400 && 'value' in checked ? errorCodeOf(checked.value) : undefined,
      undelivered: false,
    };
    sim.journal.record(record);
    sent.journaled = record;
  }
  if (state.onExchange && (isService || (request.method !== 'GET' && request.method !== 'HEAD' && sent.status === 200))) {
    state.onExchange({
      nowMs: sim.instantStart(),
      atMs: account ? (atMs ?? null) : null,
      method: request.method,
      path: pathWithQuery(request),
      headers: request.headers,
      body: request.body,
      answer: sent,
    });
  }
  return sent;
}

/** The video an answer shows (a video object or a cancel answer), for the journal. */
function videoShown(value: unknown): { id: string; status: string } | undefined {
  const v = value as { object?: unknown; id?: unknown; status?: unknown } | null;
  return v !== null && typeof v === 'object' && v.object === 'video' ? { id: v.id as string, status: v.status as string } : undefined;
}

/** An error answer's `param`, for the journal. */
function errorParamOf(value: unknown): string | null | undefined {
  const error = (value as { error?: { param?: string | null } } | null)?.error;
  return error === null || typeof error !== 'object' ? undefined : error.param;
}

/** An error answer's `code`, for the journal. */
function errorCodeOf(value: unknown): string | undefined {
  const code = (value as { error?: { code?: unknown } } | null)?.error?.code;
  return typeof code === 'string' ? code : undefined;
}

const RATE_LIMIT_HEADERS = ['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset'];

function rateLimitHeaders(
  limit: { limit: number; remaining: number; resetSeconds: number },
  injected?: SimError,
): Record<string, string> {
  // An injected 429 says the bucket is empty, and full again no sooner than Retry-After.
  const retryAfter = injected?.status === 429 ? Number(injected.headers['Retry-After'] ?? 1) : undefined;
  return {
    'X-RateLimit-Limit': String(limit.limit),
    'X-RateLimit-Remaining': String(retryAfter === undefined ? limit.remaining : 0),
    'X-RateLimit-Reset': String(retryAfter === undefined ? limit.resetSeconds : Math.max(limit.resetSeconds, retryAfter)),
  };
}

function jsonDraft(status: number, headers: Record<string, string>, value: unknown, delayMs: number): Draft {
  return { status, headers, value, contentType: JSON_TYPE, delayMs };
}

/** A thrown catalogue error as an answer; anything else is the simulator's bug: logged, 500. */
function errorDraft(e: unknown, headers: Record<string, string>, delayMs = 0, state?: ApiState, request?: ApiRequest): Draft {
  if (e instanceof SimError) return jsonDraft(e.status, { ...headers, ...e.headers }, e.toBody(), delayMs);
  state?.log(`internal error on ${request?.method} ${request && pathWithQuery(request)}: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
  return jsonDraft(500, headers, fail('internal_error').toBody(), delayMs);
}

export function unknownRoute(request: { method: string; path: string }): SimError {
  return fail('unknown_route', { message: `Unknown route: ${request.method} ${request.path}. See openapi.yaml for the routes this API has.` });
}

function pathWithQuery(request: ApiRequest): string {
  return request.query === '' ? request.path : `${request.path}?${request.query}`;
}

function pick(headers: Record<string, string>, names: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of names) if (headers[name] !== undefined) out[name] = headers[name] as string;
  return out;
}
