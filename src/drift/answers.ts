/**
 * The checks made over every answer of a drift run once the probes are done: the answers against
 * openapi.yaml (with the simulator's own compiled validators), the headers every answer carries,
 * the error catalogue, and what the video objects the answers showed say about the pipeline.
 */
import { ERROR_CODES } from '../core/errors.js';
import { checkResponse } from '../request-path/responseCheck.js';
import { OPERATIONS, matchRoute, type Operation } from '../request-path/router.js';
import { SCHEMA_ROW } from './assumptions.js';
import type { ServiceExchange } from './serviceClient.js';
import { describeAnswer, describeRequest, errorOf, type Findings } from './findings.js';

export type VideoSeen = Record<string, unknown> & { id?: unknown; status?: unknown; created_at?: unknown };

const is2xx = (status: number): boolean => status >= 200 && status < 300;
const INTEGER = /^[0-9]+$/;
const CATALOGUE = new Set<string>(ERROR_CODES);
/**
 * What an answer to a route openapi.yaml does not have is checked against: the error statuses and
 * shapes of any operation (the list's, which has no body and no 402 or 422).
 */
const STAND_IN = OPERATIONS.find((o) => o.operationId === 'listVideos') as Operation;

/** The video objects an answer shows: a video, or a list's items. */
export function videosIn(exchange: ServiceExchange): VideoSeen[] {
  if (!is2xx(exchange.status) || exchange.json === null || typeof exchange.json !== 'object') return [];
  const body = exchange.json as { object?: unknown; data?: unknown; created_at?: unknown; prompt?: unknown };
  if (body.object === 'list' && Array.isArray(body.data)) {
    return body.data.filter((v): v is VideoSeen => v !== null && typeof v === 'object' && (v as VideoSeen).object === 'video');
  }
  // A video object (a cancel answer has five fields only: not a view of the pipeline).
  if (body.object === 'video' && 'prompt' in body) return [body];
  return [];
}

/** Every answer against openapi.yaml: the status documented for its operation, its headers, its body. */
export function checkSchema(findings: Findings, exchanges: readonly ServiceExchange[]): void {
  for (const exchange of exchanges) {
    const path = exchange.request.path.split('?')[0] as string;
    const route = matchRoute(exchange.request.method, path);
    let problem: string | undefined;
    if (!route && (is2xx(exchange.status) || !STAND_IN.statuses.includes(exchange.status))) {
      problem = `${exchange.request.method} ${path} is no operation of openapi.yaml: its answer is a 404 (or an error any route may give), not ${exchange.status}`;
    } else {
      const operation = route?.operation ?? STAND_IN;
      const headers: Record<string, string> = {};
      for (const name of operation.responseHeaders[String(exchange.status)] ?? []) {
        const value = exchange.headers[name.toLowerCase()];
        if (value !== undefined) headers[name] = value;
      }
      const body = exchange.json === undefined ? exchange.text : exchange.json;
      problem = checkResponse(operation, exchange.status, headers, body);
      if (problem && exchange.json === undefined) problem += ` (the body is not JSON: ${JSON.stringify(exchange.text.slice(0, 80))})`;
      if (problem && !route) problem = `the answer to a route openapi.yaml does not have: ${problem}`;
    }
    findings.record(SCHEMA_ROW, problem === undefined, () => ({
      request: describeRequest(exchange.request),
      expected: 'an answer that openapi.yaml describes',
      observed: `${exchange.status}: ${problem}`,
    }));
  }
}

/** The rules every answer (or every authenticated one) follows. */
export function checkEveryAnswer(findings: Findings, exchanges: readonly ServiceExchange[]): void {
  const requestIds = new Map<string, ServiceExchange>();
  for (const exchange of exchanges) {
    const request = describeRequest(exchange.request);
    const ev = (expected: string, observed: string) => () => ({ request, expected, observed });

    if (is2xx(exchange.status)) {
      findings.record('success-200', exchange.status === 200, ev('200', describeAnswer(exchange)));
    }

    const id = exchange.headers['x-request-id'];
    const earlier = id === undefined ? undefined : requestIds.get(id);
    findings.record(
      'request-id-header',
      id !== undefined && id !== '' && earlier === undefined,
      ev(
        'an X-Request-Id of its own',
        id === undefined || id === '' ? 'no X-Request-Id' : `X-Request-Id ${id}, the same as the answer to ${earlier ? describeRequest(earlier.request) : ''}`,
      ),
    );
    if (id !== undefined && earlier === undefined) requestIds.set(id, exchange);

    if (exchange.authenticated && exchange.status !== 401) {
      const limit = exchange.headers['x-ratelimit-limit'];
      const remaining = exchange.headers['x-ratelimit-remaining'];
      const reset = exchange.headers['x-ratelimit-reset'];
      const shown = (name: string, value: string | undefined) => (value === undefined ? `no ${name}` : `${name}: ${value}`);
      findings.record('ratelimit-limit-header', limit !== undefined && INTEGER.test(limit), ev('X-RateLimit-Limit, an integer', shown('X-RateLimit-Limit', limit)));
      const limitOk = limit !== undefined && INTEGER.test(limit);
      const remainingOk = remaining !== undefined && INTEGER.test(remaining) && (!limitOk || Number(remaining) <= Number(limit));
      findings.record(
        'ratelimit-remaining-header',
        remainingOk,
        ev('X-RateLimit-Remaining, an integer at most X-RateLimit-Limit', `${shown('X-RateLimit-Remaining', remaining)}, ${shown('X-RateLimit-Limit', limit)}`),
      );
      const resetOk =
        reset !== undefined &&
        INTEGER.test(reset) &&
        (!limitOk || !remainingOk || (Number(reset) === 0) === (Number(remaining) === Number(limit)));
      findings.record(
        'ratelimit-reset-header',
        resetOk,
        ev(
          'X-RateLimit-Reset, integer seconds, 0 exactly when the bucket is full',
          `${shown('X-RateLimit-Reset', reset)}, ${shown('X-RateLimit-Remaining', remaining)}, ${shown('X-RateLimit-Limit', limit)}`,
        ),
      );
    }

    if (exchange.status === 429) {
      const retryAfter = exchange.headers['retry-after'];
      findings.record('retry-after-429', retryAfter !== undefined && INTEGER.test(retryAfter), ev('Retry-After, integer seconds', retryAfter === undefined ? 'no Retry-After' : `Retry-After: ${retryAfter}`));
    }

    const error = errorOf(exchange);
    if (error && !is2xx(exchange.status)) {
      findings.record('error-code-catalogue', typeof error.code === 'string' && CATALOGUE.has(error.code), ev('a code of the catalogue in openapi.yaml (ErrorCode)', `code ${JSON.stringify(error.code)}`));
      if (error.type === 'invalid_request_error') {
        const ok = Object.hasOwn(error, 'param') && (error.param === null || typeof error.param === 'string');
        findings.record('error-param-present', ok, ev('param (a string or null)', Object.hasOwn(error, 'param') ? `param ${JSON.stringify(error.param)}` : 'no param'));
      }
      if (exchange.status === 422 && error.type === 'compliance_error') {
        findings.record('compliance-stage-values', error.stage === 'claim_linking', ev('stage "claim_linking" (a synchronous rejection)', `stage ${JSON.stringify(error.stage)}`));
      }
    }
  }
  if (!exchanges.some((e) => e.status === 429)) {
    findings.notObserved('retry-after-429', 'no request was rate limited (a 429 would take hundreds of requests to provoke)');
  }
  if (!exchanges.some((e) => e.status === 422)) {
    findings.notObserved('compliance-stage-values', 'no rejection was met (claim linking and output verification cannot be made to reject on purpose)');
  }
}

/** List pages in ascending order of creation: `created_at` never goes back within a page. */
export function checkListPages(findings: Findings, exchanges: readonly ServiceExchange[]): void {
  for (const exchange of exchanges) {
    if (exchange.request.method !== 'GET' || !/^\/v1\/videos(\?|$)/.test(exchange.request.path) || exchange.status !== 200) continue;
    const items = videosIn(exchange).filter((v) => typeof v.created_at === 'string');
    const times = items.map((v) => Date.parse(v.created_at as string));
    if (new Set(times).size < 2) continue;
    const back = times.findIndex((t, i) => i > 0 && t < (times[i - 1] as number));
    findings.record('list-order-ascending', back < 0, () => ({
      request: describeRequest(exchange.request),
      expected: 'oldest first (created_at never goes back)',
      observed: `${String(items[back - 1]?.id)} (${String(items[back - 1]?.created_at)}) before ${String(items[back]?.id)} (${String(items[back]?.created_at)})`,
    }));
  }
}

/** What the video objects seen say about keyframes, compliance and failures. */
export function checkVideosSeen(findings: Findings, videos: readonly VideoSeen[]): void {
  const seen = new Map<string, VideoSeen>();
  for (const v of videos) seen.set(`${String(v.id)} ${String(v.status)}`, v);
  const ev = (v: VideoSeen, expected: string, observed: string) => () => ({ request: `the video ${String(v.id)} (${String(v.status)}) as answered`, expected, observed });
  let keyframes = 0;
  let compliance = 0;
  let flags = 0;
  for (const v of seen.values()) {
    const keyframe = v.keyframe as { status?: unknown } | null | undefined;
    if (keyframe && typeof keyframe === 'object') {
      keyframes++;
      findings.record('keyframe-ref-ready', keyframe.status === 'ready', ev(v, 'keyframe.status "ready"', `keyframe.status ${JSON.stringify(keyframe.status)}`));
    }
    const c = v.compliance as { verified?: unknown; flags?: unknown } | null | undefined;
    if (c && typeof c === 'object') {
      compliance++;
      const list = Array.isArray(c.flags) ? (c.flags as unknown[]) : [];
      const blocked = list.some((f) => (f as { severity?: unknown } | null)?.severity === 'block');
      findings.record('compliance-verified-iff-block', c.verified === !blocked, ev(v, `verified ${!blocked} (${blocked ? 'a' : 'no'} block flag)`, `verified ${JSON.stringify(c.verified)}`));
      for (const flag of list) {
        flags++;
        const f = flag as Record<string, unknown> | null;
        const ok =
          f !== null &&
          typeof f === 'object' &&
          Object.keys(f).sort().join() === 'code,message,severity' &&
          typeof f.code === 'string' &&
          typeof f.message === 'string' &&
          ['info', 'warning', 'block'].includes(f.severity as string);
        findings.record('compliance-flag-shape', ok, ev(v, '{ code, severity: info|warning|block, message }', JSON.stringify(flag)));
      }
    }
    const error = v.error as { type?: unknown; stage?: unknown; code?: unknown } | null | undefined;
    if (error && typeof error === 'object') {
      findings.record('error-code-catalogue', typeof error.code === 'string' && CATALOGUE.has(error.code), ev(v, 'an error code of the catalogue in openapi.yaml', `code ${JSON.stringify(error.code)}`));
      if (error.type === 'compliance_error') {
        findings.record('compliance-stage-values', error.stage === 'output_verification', ev(v, 'error.stage "output_verification"', `stage ${JSON.stringify(error.stage)}`));
      }
    }
  }
  if (keyframes === 0) findings.notObserved('keyframe-ref-ready', 'no video seen had a keyframe yet (a keyframe fills in as a generation runs)');
  if (compliance === 0) findings.notObserved('compliance-verified-iff-block', 'no video seen had been through output verification');
  if (flags === 0) findings.notObserved('compliance-flag-shape', 'no video seen carried a compliance flag');
}
