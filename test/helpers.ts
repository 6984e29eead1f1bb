/**
 * Shared test helpers: an in-process simulator on the manual clock, supertest shorthands, and
 * their twins over fetch for a simulator that listens (a process, or one started in-process).
 */
import request from 'supertest';
import { afterEach, beforeEach, expect } from 'vitest';
import { createSimulator, loadScenario, type CreateSimulatorOptions, type Scenario, type SimulatorHandle } from '../src/index.js';
import type { SettledRecord } from '../src/core/journal/journal.js';
import { crossChecked } from './crossCheck.js';

/** A generation as GET /_sim/generations answers it (the video object plus account and stages). */
export interface SimGeneration {
  id: string;
  status: string;
  account: string;
  model: string;
  resolution: string;
  duration_seconds: number;
  routed_model: string | null;
  keyframe: { id: string; status: string } | null;
  compliance: { verified: boolean; flags: { code: string; severity: string; message: string }[] } | null;
  output: { url: string; thumbnail_url: string } | null;
  error: { type: string; code: string; message: string; stage?: string } | null;
  cost_cents: number | null;
  created_at: string;
  completed_at: string | null;
  stages: { stage: string; entered_at: string; left_at: string | null }[];
}

export const PROMPT = 'A slow dolly shot across a rain-soaked neon street at night.';

/** The smallest valid bodies of POST /v1/videos and POST /v1/images. */
export const VALID_VIDEO = { model: 'video-3.2', prompt: PROMPT };
export const VALID_IMAGE = { prompt: PROMPT };

/**
 * A simulator on the manual clock (scenario `fast` unless told otherwise), logging into an array,
 * every exchange cross-checked by express-openapi-validator (test/crossCheck.ts).
 */
export function makeSim(options: CreateSimulatorOptions = {}): SimulatorHandle & { logs: string[] } {
  const logs: string[] = [];
  const sim = createSimulator({ scenario: 'fast', clock: 'manual', log: (l) => logs.push(l), ...options });
  return Object.assign(crossChecked(sim), { logs });
}

/** A `sleep` for `makeSim` that returns at once and records every wait it was asked for (ms). */
export function recordSleeps(): { sleep: (ms: number) => Promise<void>; slept: number[] } {
  const slept: number[] = [];
  return { slept, sleep: (ms) => (slept.push(ms), Promise.resolve()) };
}

/**
 * A fresh copy of the bundled `fast` scenario (never shared with another caller), with `change`
 * applied: top-level keys to replace, or a function that edits the copy.
 */
export function fastWith(change: Partial<Scenario> | ((s: Scenario) => void)): Scenario {
  const s = structuredClone(loadScenario('fast'));
  if (typeof change === 'function') change(s);
  else Object.assign(s, change);
  return s;
}

export function bearer(key = 'sk_test_alice'): { Authorization: string } {
  return { Authorization: `Bearer ${key}` };
}

/** POST /v1/videos with a valid body (overridable). */
export function createVideo(sim: SimulatorHandle, body: Record<string, unknown> = {}, key = 'sk_test_alice') {
  return request(sim.app)
    .post('/v1/videos')
    .set(bearer(key))
    .send({ model: 'video-3.2', prompt: PROMPT, ...body });
}

export function getVideo(sim: SimulatorHandle, id: string, key = 'sk_test_alice') {
  return request(sim.app).get(`/v1/videos/${id}`).set(bearer(key));
}

export function cancelVideo(sim: SimulatorHandle, id: string, key = 'sk_test_alice') {
  return request(sim.app).delete(`/v1/videos/${id}`).set(bearer(key));
}

/**
 * One request answered by `sim.app.answer`: the request path itself, in process, without HTTP or
 * the cross-check (test/crossCheck.ts) around it. For loops of thousands of requests (polls, clock
 * advances) whose subject is not HTTP. `target` is the path with its query string; the answer's
 * body as text and parsed as JSON.
 */
export function answerInProcess(
  sim: SimulatorHandle,
  method: string,
  target: string,
  options: { key?: string; body?: unknown; idempotencyKey?: string } = {},
): { status: number; headers: Record<string, string>; text: string; body: any } {
  const at = target.indexOf('?');
  const headers: Record<string, string> = {};
  if (options.key !== undefined) headers.authorization = `Bearer ${options.key}`;
  if (options.idempotencyKey !== undefined) headers['idempotency-key'] = options.idempotencyKey;
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  const answer = sim.app.answer({
    method,
    path: at < 0 ? target : target.slice(0, at),
    query: at < 0 ? '' : target.slice(at + 1),
    headers,
    body: options.body === undefined ? null : Buffer.from(JSON.stringify(options.body)),
  });
  return { status: answer.status, headers: answer.headers, text: answer.body, body: answer.body === '' ? undefined : JSON.parse(answer.body) };
}

/** What `call` answers: the body's text, and its JSON (undefined when the text is not JSON). */
export interface HttpAnswer {
  status: number;
  headers: Headers;
  text: string;
  json: any;
}

/**
 * One request over fetch to the simulator at `baseUrl`: `body` sent as JSON, `raw` as it is (either
 * with Content-Type: application/json unless `headers` name one). For tests that need a real socket.
 */
export async function call(
  baseUrl: string,
  method: string,
  path: string,
  options: { key?: string; body?: unknown; raw?: string; idempotencyKey?: string; headers?: Record<string, string>; timeoutMs?: number } = {},
): Promise<HttpAnswer> {
  const headers = new Headers(options.headers);
  if (options.key !== undefined) headers.set('authorization', `Bearer ${options.key}`);
  if (options.idempotencyKey !== undefined) headers.set('idempotency-key', options.idempotencyKey);
  const body = options.raw ?? (options.body === undefined ? undefined : JSON.stringify(options.body));
  if (body !== undefined && !headers.has('content-type')) headers.set('content-type', 'application/json');
  const signal = options.timeoutMs === undefined ? undefined : AbortSignal.timeout(options.timeoutMs);
  const res = await fetch(`${baseUrl}${path}`, { method, headers, body, signal });
  const text = await res.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, text, json };
}

/** `createVideo` over HTTP to the simulator at `baseUrl`, which must answer 200. */
export async function createVideoAt(baseUrl: string, body: Record<string, unknown> = {}, key = 'sk_test_alice', idempotencyKey?: string): Promise<HttpAnswer> {
  const answer = await call(baseUrl, 'POST', '/v1/videos', { key, body: { ...VALID_VIDEO, ...body }, idempotencyKey });
  expect(answer.status, `create for ${key}: ${answer.text}`).toBe(200);
  return answer;
}

/** GET /v1/videos with a raw query string (`?limit=1`, or '' for none). */
export function listVideos(sim: SimulatorHandle, key = 'sk_test_alice', query = '') {
  return request(sim.app).get(`/v1/videos${query}`).set(bearer(key));
}

export function advance(sim: SimulatorHandle, seconds: number, apiKey?: string) {
  return request(sim.app)
    .post('/_sim/clock/advance')
    .send(apiKey ? { seconds, api_key: apiKey } : { seconds });
}

/** Asserts the section-7 error shape and returns the error object. */
export function expectError(
  res: { status: number; body: unknown },
  status: number,
  type: string,
  code: string,
  param?: string | null,
) {
  const body = res.body as { error?: Record<string, unknown> };
  const detail = JSON.stringify(res.body);
  if (res.status !== status) throw new Error(`expected status ${status}, got ${res.status}: ${detail}`);
  const error = body.error;
  if (!error || Object.keys(body).length !== 1) throw new Error(`expected { error } body, got ${detail}`);
  if (error.type !== type || error.code !== code) throw new Error(`expected ${type}/${code}, got ${detail}`);
  if (typeof error.message !== 'string' || error.message === '') throw new Error(`expected a message: ${detail}`);
  if (type === 'invalid_request_error') {
    if (!('param' in error)) throw new Error(`expected param on invalid_request_error: ${detail}`);
    if (param !== undefined && error.param !== param) throw new Error(`expected param ${param}: ${detail}`);
  } else if ('param' in error) {
    throw new Error(`param only belongs on invalid_request_error: ${detail}`);
  }
  if (type === 'compliance_error' ? !('stage' in error) : 'stage' in error) {
    throw new Error(`stage belongs on compliance_error only: ${detail}`);
  }
  return error;
}

/** The X-RateLimit-* headers a response carries (none: `{}`). */
export function rateLimitHeaders(res: { headers: Record<string, string | undefined> }): Record<string, string> {
  const found: Record<string, string> = {};
  for (const name of ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset']) {
    const value = res.headers[name];
    if (value !== undefined) found[name] = value;
  }
  return found;
}

/** The X-RateLimit-* headers of `fast` (capacity and refill 10^9) after `spent` requests in one instant. */
export function fastBucket(spent: number): Record<string, string> {
  return { 'x-ratelimit-limit': '1000000000', 'x-ratelimit-remaining': String(1_000_000_000 - spent), 'x-ratelimit-reset': '1' };
}

/** Fails when the simulator logged an internal error (a bug of its own, answered 500). */
/**
 * Gives each test of the file a fresh simulator (`makeSim()`), and fails a test after which it
 * logged an internal error: `let sim; withFreshSim((fresh) => (sim = fresh));`.
 */
export function withFreshSim(take: (sim: ReturnType<typeof makeSim>) => void): void {
  let current: ReturnType<typeof makeSim> | undefined;
  beforeEach(() => {
    current = makeSim();
    take(current);
  });
  afterEach(() => {
    if (current) expectNoInternalErrors(current);
  });
}

/** A journal record of a plain list request (the fields given replace the defaults), for the core's tests. */
export function journalRecord(fields: Partial<SettledRecord> = {}): SettledRecord {
  return {
    seq: 0,
    method: 'GET',
    path: '/v1/videos',
    status: 200,
    account: 'sk_test_alice',
    atMs: 0,
    hostMs: 0,
    request_id: 'req_1',
    negative_prompt_effective: undefined,
    fault: undefined,
    operation: 'listVideos',
    idempotencyKey: undefined,
    bodyFingerprint: null,
    retryAfter: undefined,
    network: undefined,
    createdId: undefined,
    videoId: undefined,
    videoStatus: undefined,
    errorParam: undefined,
    errorCode: undefined,
    undelivered: false,
    ...fields,
  };
}

export function expectNoInternalErrors(sim: { logs: string[] }): void {
  const internal = sim.logs.filter((l) => l.startsWith('internal error'));
  if (internal.length > 0) throw new Error(`the simulator logged internal errors:\n${internal.join('\n')}`);
}

/** Every stored generation of one account, with its stage history, through GET /_sim/generations. */
export async function generationsOf(sim: SimulatorHandle, key = 'sk_test_alice'): Promise<SimGeneration[]> {
  const res = await request(sim.app).get('/_sim/generations').query({ api_key: key, limit: 1000 });
  if (res.status !== 200 || res.body.has_more !== false) {
    throw new Error(`GET /_sim/generations answered ${res.status}, has_more ${res.body.has_more}`);
  }
  return res.body.data as SimGeneration[];
}

/** Advances the clock (one account's, with `apiKey`) and fails unless the answer is 200. */
export async function advanceOk(sim: SimulatorHandle, seconds: number, apiKey?: string): Promise<void> {
  const res = await advance(sim, seconds, apiKey);
  if (res.status !== 200) throw new Error(`advance answered ${res.status}: ${res.text}`);
}

/** Creates `n` videos one after another; every create must answer 200. Returns their ids in order. */
export async function createMany(sim: SimulatorHandle, n: number, body: Record<string, unknown> = {}, key = 'sk_test_alice'): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const res = await createVideo(sim, body, key);
    if (res.status !== 200) throw new Error(`create ${i} answered ${res.status}: ${JSON.stringify(res.body)}`);
    ids.push(res.body.id as string);
  }
  return ids;
}

/** POST /_sim/faults with `body`, its answer unchecked (for the bodies it refuses). */
export function postFault(sim: SimulatorHandle, body: Record<string, unknown>) {
  return request(sim.app).post('/_sim/faults').send(body);
}

/** Queues a fault through POST /_sim/faults, which must answer 200; returns the shots now queued. */
export async function queueFault(sim: SimulatorHandle, body: Record<string, unknown>): Promise<number> {
  const res = await postFault(sim, body);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.queued as number;
}

/** `queueFault` over HTTP to the simulator at `baseUrl`: POST /_sim/faults must answer 200. */
export async function queueFaultAt(baseUrl: string, body: Record<string, unknown>): Promise<HttpAnswer> {
  const answer = await call(baseUrl, 'POST', '/_sim/faults', { body });
  expect(answer.status, answer.text).toBe(200);
  return answer;
}

/** The journal (GET /_sim/requests), of one account with `key`, oldest first. */
export async function journalOf(sim: SimulatorHandle, key?: string, limit = 100) {
  const res = await request(sim.app)
    .get('/_sim/requests')
    .query({ ...(key ? { api_key: key } : {}), limit });
  expect(res.status).toBe(200);
  return res.body.data as { method: string; path: string; status: number; account: string | null; negative_prompt_effective?: string | null; fault?: string }[];
}

/** Seconds a generation spent in a stage (undefined when it never entered it or is still in it). */
export function stageSeconds(g: SimGeneration, stage: string): number | undefined {
  const visit = g.stages.find((v) => v.stage === stage);
  if (!visit || visit.left_at === null) return undefined;
  return (Date.parse(visit.left_at) - Date.parse(visit.entered_at)) / 1000;
}

/** A timestamp in milliseconds (fails on null). */
export function ms(iso: string | null): number {
  if (iso === null) throw new Error('expected a timestamp, got null');
  return Date.parse(iso);
}

/** How many times each value occurs. */
export function tally(values: (string | number)[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const v of values) counts[v] = (counts[v] ?? 0) + 1;
  return counts;
}

export function share(part: number, whole: number): number {
  return whole === 0 ? NaN : part / whole;
}

/** Asserts |measured - expected| <= tolerance (all as fractions), with a readable message. */
export function expectShare(label: string, measured: number, expected: number, tolerance: number): void {
  expect(
    Math.abs(measured - expected),
    `${label}: measured ${(measured * 100).toFixed(1)}%, configured ${(expected * 100).toFixed(1)}% (tolerance ±${(tolerance * 100).toFixed(1)} points)`,
  ).toBeLessThanOrEqual(tolerance);
}

/** The q-quantile of a sample (linear interpolation between order statistics). */
export function quantile(values: number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  const pos = (sorted.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  const a = sorted[lo] as number;
  const b = sorted[hi] as number;
  return a + (b - a) * (pos - lo);
}

/** A "billion laughs" file: nine short lines whose aliases expand to 10^9 strings. */
export const ALIAS_BOMB = [
  'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]',
  ...'bcdefghi'.split('').map((name, i) => `${name}: &${name} [${Array(9).fill(`*${'abcdefghi'[i]}`).join(',')}]`),
  '',
].join('\n');
