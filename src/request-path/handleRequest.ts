/**
 * The request path: a plain request in, a plain answer out, no framework. Every rule is the core's
 * (docs/architecture.md says where each lives); this file holds only their order. A request runs
 * the checks of its surface, in order, each early answer a `return`; then its operation; then its
 * answer is checked against openapi.yaml and the surface's last steps run.
 *
 * The order of a `/v1` request:
 *
 *   authentication (on a shard, first a key of another shard: 421 `wrong_shard`) → faults and
 *   latency → rate limit → idempotent replay → route → body → parameters → prompt triggers →
 *   the operation (existence, balance, claim linking, room in the store) → the answer checked
 *   against openapi.yaml → stored under its Idempotency-Key → journaled.
 *
 * Room in the store is the last check of a create (video or image): with
 * `limits.max_stored_generations` generations and images stored and none of them resolved, it is
 * 429 `rate_limit_exceeded` with `Retry-After: 1` (else what resolved first makes room). It comes
 * after the idempotent replay, so that a create answered before is answered again however full the
 * store is; and after every check that no retry can pass, so that a create refused for room is one
 * that succeeds once something resolves. Being past the rate limit, it has spent the request's
 * token, as every request that reaches its parameters has.
 *
 * Prompt triggers (a create's prompt holding `[sim:...]`, unless the scenario's `prompt_triggers`
 * is false) are read once the body is valid, since they are part of it; so a request that a
 * fault, the rate limit or an idempotent replay answered never reads them, and a create answered
 * before under its Idempotency-Key is answered again as it was. An unknown or contradictory
 * trigger is a 400 of its parameters (its token spent, as every such 400's). `[sim:error=STATUS]`
 * answers as a queued fault with that status does, to the byte: it takes no effect and gives back
 * the request's token, so its `X-RateLimit-*` headers are a queued fault's. The other directives
 * force the outcome of what the create makes: in place of any outcome a queued fault forced on the
 * same request (that fault's shot is spent, as on a create refused for any other reason); a queued
 * fault that answers (an error, a network fault `before`) comes first and the prompt is never read.
 *
 * A network fault drawn with the faults loses the answer: in its `before` phase the request stops
 * there (no answer: nothing after it runs but the journal and the transcript); in its `after`
 * phase the request runs every step and the answer carries the loss for the HTTP adapter to carry
 * out on the socket (`ApiAnswer.network`).
 *
 * The order of a `/_sim` request, once the HTTP adapter's access checks passed (accessGuard.ts):
 *
 *   the account named in the query (its request id; on a shard, one of another shard is 421
 *   `wrong_shard`) → route → body → parameters → operation (a key in the body of another shard:
 *   421 `wrong_shard`) → the answer checked against openapi.yaml.
 *
 * (A CORS preflight is answered by the HTTP adapter before any of this, without a key.)
 */
import type { Account } from '../core/accounts/account.js';
import { MAX_API_KEY_LENGTH } from '../core/accounts/auth.js';
import { SimError, clip, errorObject, fail } from '../core/errors.js';
import { wrongShard } from '../core/accounts/shard.js';
import { keyedRequest, remember, replayFor } from '../core/requests/idempotency.js';
import { drawInjection } from '../core/faults/injection.js';
import { readPromptTrigger } from '../core/faults/promptTriggers.js';
import { hostCdnUrl } from '../core/generations/mediaPaths.js';
import { journalRecord } from '../core/journal/journal.js';
import { bodyBytesSent, type NetworkFault } from '../core/faults/network.js';
import { RATE_LIMIT_HEADERS, addUnspentHeaders, giveBackToken, spendToken } from '../core/accounts/rateLimit.js';
import type { Simulator } from '../core/simulator/simulator.js';
import { digest } from './body.js';
import { JSON_TYPE } from '../jsonType.js';
import { checkRequest } from './requestCheck.js';
import { checkResponse } from './responseCheck.js';
import type { Operation } from './router.js';
import type { ApiAnswer, ApiRequest, Exchange, HeldWait, StreamedBody } from './exchange.js';
import { HeldWaitAnswer, OPERATION_HANDLERS, StreamAnswer, type AppParts, type Handler } from './operations.js';
import { NO_ANSWER, RequestContext, type Answered, type Draft, type RequestPathDeps, type Surface } from './requestContext.js';

export type { ApiAnswer, ApiRequest, Exchange, RequestPathDeps, StreamedBody };

/**
 * The request path's dependencies for `sim`, the one place they are put together: the HTTP
 * adapter's (with its hooks, on sockets), a restore's and a replay's (the app around the core has
 * then only the bundled scenarios' list). Each has its own list of response failures.
 */
export function requestPathDeps(
  sim: Simulator,
  parts: { app: AppParts; log: (line: string) => void } & Pick<RequestPathDeps, 'onExchange' | 'onSocket'>,
): RequestPathDeps {
  return { sim, app: parts.app, log: parts.log, responseFailures: [], onExchange: parts.onExchange, onSocket: parts.onSocket };
}

/**
 * Answers one request to the JSON API (`/v1` and `/_sim`); anything else is 404 `unknown_route`.
 * The request is handled at one instant of the clock (realtime mode included): all its timestamps
 * are the time it was handled at.
 */
export function handleRequest(deps: RequestPathDeps, request: ApiRequest): ApiAnswer {
  const surface = request.path === '/v1' || request.path.startsWith('/v1/') ? SERVICE : CONTROL;
  return deps.sim.atOneInstant(() => answer(new RequestContext(deps, request, surface)), hostCdnUrl(request.mediaHost));
}

function answer(ctx: RequestContext): ApiAnswer {
  for (const check of ctx.surface.checks) {
    const early = check(ctx);
    if (early !== undefined) return send(ctx, early);
  }
  return send(ctx, perform(ctx));
}

// ---- the surfaces: each one's checks and last steps, in order ----

const SERVICE: Surface = {
  checks: [authenticate, injectFaultsAndLatency, spendRateLimit, replayIdempotent, requireRoute, requireBody, checkParameters, applyPromptTriggers],
  emptyBody: (method) => (method === 'GET' || method === 'HEAD' ? null : method === 'DELETE' ? 'none' : 'error'),
  after: [rememberIdempotent, journal, recordExchange],
};

const CONTROL: Surface = {
  checks: [identify, requireRoute, requireBody, checkParameters],
  // The control endpoints take `{}` for an empty body, so that `curl -X POST .../_sim/reset` works.
  emptyBody: (method) => (method === 'POST' ? 'object' : null),
  after: [markShutdown, recordStateChange],
};

// ---- the checks ----

/**
 * Authentication (unknown routes included). The answer's request id counts within the account
 * (globally without one); the account's clock catches up once, for the whole request.
 */
function authenticate(ctx: RequestContext): Draft | undefined {
  const found = ctx.sim.authenticate(ctx.request.headers.authorization);
  if (found instanceof SimError) {
    ctx.headers['X-Request-Id'] = ctx.sim.nextRequestId();
    return ctx.refuse(found);
  }
  ctx.account = found;
  ctx.headers['X-Request-Id'] = ctx.sim.nextRequestId(found);
  ctx.atMs = ctx.sim.catchUp(found);
  return undefined;
}

/**
 * A control answer's request id, taken before the operation (a reset restarts the count after it):
 * counted within the account a control request names in its query (`?api_key=`, the key a proxy
 * routes it by), so that it is the same on the shard that owns the account as on one simulator;
 * counted globally for a request that names no account.
 */
function identify(ctx: RequestContext): Draft | undefined {
  const key = namedAccount(ctx.request.query);
  // On a shard, a key of another shard is 421 `wrong_shard` (counted globally, making no account),
  // where the endpoint takes a key (those are the operations that document the 421).
  const misdirected = key !== null && ctx.facts?.namesAccount === true ? wrongShard(ctx.sim.shard, key) : undefined;
  ctx.namesAccount = key !== null && misdirected === undefined;
  ctx.headers['X-Request-Id'] = ctx.namesAccount ? ctx.sim.nextAccountControlId(key as string) : ctx.sim.nextRequestId();
  return misdirected && ctx.refuse(misdirected);
}

/**
 * The one `api_key` of a query string that could be a key, or null (none, more than one, empty or
 * longer than a key can be: each is a 400 of its own, which must not leave a count behind).
 */
function namedAccount(query: string): string | null {
  if (!query.includes('api_key=')) return null;
  const keys = new URLSearchParams(query).getAll('api_key');
  const key = keys.length === 1 ? (keys[0] as string) : '';
  return key !== '' && key.length <= MAX_API_KEY_LENGTH ? key : null;
}

/** Faults and latency: the core decides; the adapter only waits `delayMs`. */
function injectFaultsAndLatency(ctx: RequestContext): Draft | undefined {
  const account = ctx.account as Account;
  const { method, path } = ctx.request;
  const injection = drawInjection(ctx.sim, account, method, path, ctx.operation?.statuses ?? NO_STATUSES);
  ctx.delayMs = injection.delayMs;
  ctx.note = injection.note;
  ctx.forcedOutcome = injection.forcedOutcome;
  if (injection.network !== null) {
    const network = ctx.deps.onSocket ? ctx.deps.onSocket(injection.network) : injection.network;
    if (network !== injection.network) ctx.note = `${ctx.note as string}; closed instead: limits.max_hung_connections are held`;
    ctx.network = network;
    return network.phase === 'before' ? NO_ANSWER : undefined;
  }
  if (injection.error === null) return undefined;
  addUnspentHeaders(account.buckets, method, path, ctx.atMs, injection.error, ctx.headers);
  return ctx.refuse(injection.error);
}

const NO_STATUSES: readonly number[] = [];

function spendRateLimit(ctx: RequestContext): Draft | undefined {
  const refused = spendToken((ctx.account as Account).buckets, ctx.request.method, ctx.request.path, ctx.atMs, ctx.headers);
  return refused && ctx.refuse(refused);
}

function replayIdempotent(ctx: RequestContext): Draft | undefined {
  const { method, path, headers } = ctx.request;
  const read = ctx.readBody();
  ctx.keyed = keyedRequest(method, path, headers['idempotency-key'], read.value, read.error === undefined, digest);
  if (ctx.keyed === undefined) return undefined;
  const found = replayFor((ctx.account as Account).idempotency, ctx.keyed, ctx.atMs, ctx.headers);
  if (found === undefined) return undefined;
  if (found instanceof SimError) return ctx.refuse(found);
  ctx.replayed = true;
  return { status: found.status, headers: ctx.headers, contentType: JSON_TYPE, text: found.text };
}

/** An unknown route or method is 404 `unknown_route`. */
function requireRoute(ctx: RequestContext): Draft | undefined {
  return ctx.operation ? undefined : ctx.refuse(unknownRoute(ctx.request));
}

function requireBody(ctx: RequestContext): Draft | undefined {
  const { error } = ctx.readBody();
  return error && ctx.refuse(error);
}

/** The parameters: a malformed id, then unknown, missing and invalid ones (see `checkRequest`). */
function checkParameters(ctx: RequestContext): Draft | undefined {
  if (ctx.malformedId) {
    return ctx.refuse(fail('resource_not_found', { message: 'No resource has this id (its percent-encoding is malformed).' }));
  }
  const checked = checkRequest(ctx.operation as Operation, {
    params: ctx.params,
    query: ctx.request.query,
    headers: ctx.request.headers,
    body: ctx.readBody().value,
  });
  if ('error' in checked) return ctx.refuse(checked.error);
  ctx.query = checked.query;
  ctx.body = checked.body;
  return undefined;
}

/**
 * A create's prompt triggers (`promptTriggers.ts`): a refused one is 400; `[sim:error=STATUS]`
 * answers as a queued fault's error, its token given back; the others force the outcome.
 */
function applyPromptTriggers(ctx: RequestContext): Draft | undefined {
  if (ctx.facts?.creates == null || ctx.sim.scenario.prompt_triggers === false) return undefined;
  const trigger = readPromptTrigger(ctx.body.prompt as string);
  if (trigger === null) return undefined;
  if (trigger instanceof SimError) return ctx.refuse(trigger);
  ctx.trigger = trigger.directives;
  if (trigger.error !== null) {
    const account = ctx.account as Account;
    const { method, path } = ctx.request;
    giveBackToken(account.buckets, method, path, ctx.atMs);
    addUnspentHeaders(account.buckets, method, path, ctx.atMs, trigger.error, ctx.headers);
    return ctx.refuse(trigger.error);
  }
  if (trigger.outcome !== null) ctx.forcedOutcome = trigger.outcome;
  return undefined;
}

/** The operation, with the core's own checks; a value it answers is a 200. */
function perform(ctx: RequestContext): Draft {
  // Every operation has its handler: the handler table is typed by openapi.yaml's operation ids.
  // oxlint-disable-next-line typescript/no-unnecessary-type-assertion -- tsc needs it: each handler takes its own operation's parameters
  const handler = OPERATION_HANDLERS[(ctx.operation as Operation).operationId] as Handler;
  ctx.performed = true;
  let value: unknown;
  try {
    value = handler(ctx);
  } catch (e) {
    return ctx.failure(e);
  }
  if (value instanceof StreamAnswer) return { status: 200, headers: { ...ctx.headers, ...value.headers }, contentType: value.contentType, stream: value.stream };
  if (value instanceof HeldWaitAnswer) return { held: value };
  return { status: 200, headers: ctx.headers, contentType: JSON_TYPE, value };
}

// ---- the answer ----

/** Checks the answer against openapi.yaml (one that fails is logged and becomes a 500), serialises it and runs the surface's last steps. */
function send(ctx: RequestContext, draft: Draft): ApiAnswer {
  if ('noAnswer' in draft) {
    // The headers are the journal's (the request id); nothing is sent of them.
    const sent: ApiAnswer = { status: 0, headers: ctx.headers, body: '', stream: undefined, contentType: '', delayMs: ctx.delayMs, journaled: undefined };
    sent.network = { fault: ctx.network as NetworkFault, bodyBytes: 0 };
    for (const step of ctx.surface.after) step(ctx, sent, undefined);
    return sent;
  }
  if ('held' in draft) {
    // Answered later, by the adapter that holds it (`HeldWait`); nothing is sent now.
    const sent: ApiAnswer = { status: 200, headers: ctx.headers, body: '', stream: undefined, contentType: JSON_TYPE, delayMs: 0, journaled: undefined };
    sent.wait = heldWait(ctx, draft.held);
    for (const step of ctx.surface.after) step(ctx, sent, undefined);
    return sent;
  }
  const sent = serialise(ctx, draft);
  const value = 'value' in draft ? draft.value : undefined;
  for (const step of ctx.surface.after) step(ctx, sent, value);
  return sent;
}

/** An answer checked against openapi.yaml (one that fails is logged and becomes a 500) and serialised. */
function serialise(ctx: RequestContext, draft: Answered): ApiAnswer {
  const checked = ctx.operation ? checkAnswer(ctx, ctx.operation, draft) : draft;
  // Built field by field: an object rest (`{ value, text, ...rest }`) makes a dictionary-mode copy.
  const sent: ApiAnswer = {
    status: checked.status,
    headers: checked.headers,
    body: 'text' in checked ? checked.text : 'stream' in checked ? '' : JSON.stringify(checked.value),
    stream: 'stream' in checked ? checked.stream : undefined,
    contentType: checked.contentType,
    delayMs: ctx.delayMs,
    journaled: undefined,
  };
  if (ctx.network !== null) {
    // (A /v1 answer, the only kind a network fault loses, is never streamed.)
    const length = sent.stream ? (sent.stream.length ?? 0) : ctx.method === 'HEAD' ? 0 : Buffer.byteLength(sent.body);
    sent.network = { fault: ctx.network, bodyBytes: bodyBytesSent(ctx.network, length) };
  }
  return sent;
}

/**
 * A wait for requests, for the adapter to hold (`POST /_sim/requests/wait`): its place among
 * `limits.max_waits` is taken; it is given back once the wait ends, however it ends.
 */
function heldWait(ctx: RequestContext, held: HeldWaitAnswer): HeldWait {
  let holding = true;
  const release = (): void => {
    if (!holding) return;
    holding = false;
    ctx.sim.waits.release();
  };
  return {
    timeoutMs: held.timeoutMs,
    apiKey: held.wait.pattern.apiKey,
    offer: (record) => holding && held.wait.offer(record),
    finish(timedOut) {
      release();
      return serialise(ctx, { status: 200, headers: ctx.headers, contentType: JSON_TYPE, value: held.wait.answer(timedOut) });
    },
    stopped() {
      release();
      return serialise(
        ctx,
        ctx.refuse(fail('simulator_closed', { message: 'The simulator stopped while this wait was held: it ended the wait before it was answered.' })),
      );
    },
    cancel: release,
  };
}

function checkAnswer(ctx: RequestContext, operation: Operation, draft: Answered): Answered {
  // A streamed body is checked as what it is documented as (a string), without reading it; a text one is a stored JSON answer (an idempotent replay).
  const value: unknown = 'value' in draft ? draft.value : 'stream' in draft ? '' : JSON.parse(draft.text);
  const problem = checkResponse(operation, draft.status, draft.headers, value);
  if (!problem) return draft;
  const { deps, request } = ctx;
  deps.responseFailures.push({ method: request.method, path: ctx.target, status: draft.status, message: problem });
  deps.log(`response validation failed: ${request.method} ${ctx.target} (status ${draft.status}): ${problem}`);
  const headers: Record<string, string> = { 'X-Request-Id': draft.headers['X-Request-Id'] as string };
  for (const name of RATE_LIMIT_HEADERS) if (draft.headers[name] !== undefined) headers[name] = draft.headers[name];
  // Built here, not through the error class: the failure may lie there.
  const body = { error: errorObject('api_error', 'internal_error', 'The simulator produced a response that does not match openapi.yaml (a simulator bug; it has been logged).') };
  return { status: 500, headers, contentType: JSON_TYPE, value: body };
}

/** Only a success of the operation is stored under its key, once it passed validation. */
function rememberIdempotent(ctx: RequestContext, sent: ApiAnswer): void {
  if (ctx.keyed !== undefined && ctx.performed) remember((ctx.account as Account).idempotency, ctx.keyed, sent.status, sent.body, ctx.atMs);
}

function journal(ctx: RequestContext, sent: ApiAnswer, value: unknown): void {
  // An answer replayed as stored text showed what the text shows (its generation's status).
  const shown = value === undefined && ctx.replayed ? parsedOrUndefined(sent.body) : value;
  const record = journalRecord(ctx, sent, value, ctx.sim.hostTimeMs(), shown);
  ctx.sim.journal.record(record);
  sent.journaled = record;
}

/** A transcript records every /v1 request. */
function recordExchange(ctx: RequestContext, sent: ApiAnswer): void {
  ctx.deps.onExchange?.(ctx.exchange(sent));
}

/**
 * A transcript records the control requests that change state: those that succeeded, of the
 * operations that change it (`changesState`: every method but GET, but the verification and the
 * wait, POSTs of a pattern that change nothing). A state file also keeps the others that took an
 * account's request id, so that a restore counts them.
 */
function recordStateChange(ctx: RequestContext, sent: ApiAnswer): void {
  const { onExchange } = ctx.deps;
  if (!onExchange) return;
  if (ctx.facts?.changesState === true && sent.status === 200) onExchange(ctx.exchange(sent));
  else if (ctx.namesAccount) onExchange({ ...ctx.exchange(sent), idOnly: true });
}

function parsedOrUndefined(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

function markShutdown(ctx: RequestContext, sent: ApiAnswer): void {
  if (ctx.performed && ctx.facts?.stops === true) sent.shutdown = true;
}

function unknownRoute(request: { method: string; path: string }): SimError {
  return fail('unknown_route', { message: `Unknown route: ${clip(request.method)} ${clip(request.path)}. See openapi.yaml for the routes this API has.` });
}
