/**
 * The contract, checked by an outside tool: the simulator runs in-process and Stoplight Prism
 * (`prism proxy openapi.yaml <sim> --errors`) sits in front of it, validating every request and
 * every response against openapi.yaml. Every /v1 endpoint, the main errors, a full lifecycle and the
 * /_sim endpoints go through the proxy; each answer must be the simulator's own (status and error
 * code), with no violation reported.
 *
 * Prism with `--errors` answers a request that itself breaks the contract (no API key, a missing
 * or out-of-range field) with its own 401/422 instead of forwarding it. The error cases made of
 * such requests therefore go through a second proxy without `--errors`, which forwards them and
 * reports violations in the `sl-violations` header: there, only the request may be in violation
 * (on purpose), never the response. A third proxy in front of a deliberately wrong upstream proves
 * that a response violation is caught at all.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSimulator, type SimulatorHandle } from '../../src/index.js';
import { PROMPT, call, queueFaultAt, type HttpAnswer } from '../helpers.js';
import { freePort } from '../processes.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const PRISM_BIN = fileURLToPath(new URL('../../node_modules/.bin/prism', import.meta.url));

interface Prism {
  name: string;
  url: string;
  child: ChildProcess;
  output: string[];
}

let sim: SimulatorHandle;
let simUrl: string;
let wrongUpstream: Server;
let strict: Prism; // --errors: the proxy the brief asks for
let lenient: Prism; // no --errors: forwards contract-breaking requests, flags violations in a header
let canary: Prism; // --errors, in front of an upstream that breaks the contract

const stripAnsi = (text: string) => text.replace(/\u001b\[[0-9;]*m/g, '');

async function startPrism(name: string, upstream: string, errors: boolean): Promise<Prism> {
  const port = await freePort();
  const args = ['proxy', 'openapi.yaml', upstream, '--port', String(port), '--host', '127.0.0.1'];
  if (errors) args.push('--errors');
  const child = spawn(PRISM_BIN, args, {
    cwd: ROOT,
    env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0' },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true, // its own process group, killed as a whole in afterAll
  });
  const prism: Prism = { name, url: `http://127.0.0.1:${port}`, child, output: [] };
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`prism (${name}) did not start within 150 s:\n${prism.output.join('\n')}`)),
      150_000,
    );
    const onData = (d: Buffer) => {
      for (const line of stripAnsi(d.toString()).split('\n')) if (line.trim()) prism.output.push(line);
      if (prism.output.some((l) => l.includes('Prism is listening'))) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`prism (${name}) exited ${code}:\n${prism.output.join('\n')}`));
    });
  });
  return prism;
}

function stopPrism(prism: Prism | undefined): void {
  const pid = prism?.child.pid;
  if (!prism || pid === undefined || prism.child.exitCode !== null) return;
  try {
    process.kill(-pid, 'SIGTERM');
  } catch {
    prism.child.kill('SIGTERM');
  }
}

interface Answer {
  status: number;
  body: any;
  headers: Headers;
  violations: Array<{ location: string[]; severity: string; code: string | number; message: string }>;
}

/**
 * A request through one of the proxies (key sk_test_contract unless told; null: none), its answer
 * as `prismAnswer` reads it.
 */
async function throughPrism(
  via: Prism,
  method: string,
  path: string,
  options: { key?: string | null; body?: unknown; raw?: string; headers?: Record<string, string> } = {},
): Promise<Answer> {
  const key = options.key === undefined ? 'sk_test_contract' : (options.key ?? undefined);
  return prismAnswer(await call(via.url, method, path, { ...options, key, timeoutMs: 30_000 }));
}

/** An answer through a proxy: the body parsed when it is JSON (its text otherwise), and the violations Prism reports in sl-violations. */
function prismAnswer(a: HttpAnswer): Answer {
  const header = a.headers.get('sl-violations');
  return { status: a.status, body: a.json === undefined ? a.text : a.json, headers: a.headers, violations: header ? JSON.parse(header) : [] };
}

/** Through the strict proxy: the simulator's own answer, not one made by Prism, and no violation. */
function expectClean(a: Answer, status: number, what = ''): void {
  const detail = `${what} ${a.status} ${JSON.stringify(a.body)} violations=${JSON.stringify(a.violations)}`;
  expect(a.headers.get('content-type') ?? '', detail).not.toMatch(/problem\+json/);
  expect(a.violations, detail).toEqual([]);
  expect(a.status, detail).toBe(status);
  expect(a.headers.get('x-request-id'), detail).toMatch(/\S/);
}

/** A section-7 error of the simulator with this status, type and code (and param, when given). */
function expectError(a: Answer, status: number, type: string, code: string, param?: string | null): void {
  expectClean(a, status, `${type}/${code}`);
  expect(a.body.error).toMatchObject({ type, code });
  if (param !== undefined) expect(a.body.error.param).toBe(param);
}

/**
 * Through the lenient proxy, for requests that break the contract on purpose: the simulator's own
 * error, and every violation Prism reports is the request's, none the response's.
 */
function expectRequestOnlyViolations(a: Answer, status: number, type: string, code: string, param?: string | null): void {
  const detail = `${status} ${type}/${code}: got ${a.status} ${JSON.stringify(a.body)} violations=${JSON.stringify(a.violations)}`;
  expect(a.headers.get('content-type') ?? '', detail).not.toMatch(/problem\+json/);
  expect(a.status, detail).toBe(status);
  expect(a.body.error, detail).toMatchObject({ type, code });
  if (param !== undefined) expect(a.body.error.param, detail).toBe(param);
  expect(a.violations.length, `Prism should flag the request as the contract breaker: ${detail}`).toBeGreaterThan(0);
  expect(a.violations.filter((v) => v.location[0] !== 'request'), detail).toEqual([]);
}

async function until(condition: () => boolean, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
}

/** Queues a fault through the strict proxy: the simulator's 200, and no violation. */
async function queueFaultThroughPrism(fault: Record<string, unknown>): Promise<void> {
  expectClean(prismAnswer(await queueFaultAt(strict.url, fault)), 200, 'queue a fault');
}

beforeAll(async () => {
  sim = createSimulator({ scenario: 'fast', clock: 'manual', log: (line) => console.error(`[sim] ${line}`) });
  simUrl = await sim.listen(0);
  wrongUpstream = createServer((_req, res) => {
    res.writeHead(200, { 'Content-Type': 'application/json', 'X-Request-Id': 'req_wrong' });
    res.end(JSON.stringify({ status: 'broken', scenario: 7 }));
  });
  await new Promise<void>((resolve) => wrongUpstream.listen(0, '127.0.0.1', resolve));
  const wrongUrl = `http://127.0.0.1:${(wrongUpstream.address() as AddressInfo).port}`;
  const t0 = Date.now();
  [strict, lenient, canary] = await Promise.all([
    startPrism('strict', simUrl, true),
    startPrism('lenient', simUrl, false),
    startPrism('canary', wrongUrl, true),
  ]);
  console.log(`[test:contract] simulator ${simUrl}; prism --errors ${strict.url}; prism ${lenient.url}; started in ${Date.now() - t0} ms`);
}, 180_000); // also when run by the main config (`npm test`), whose hook timeout is short

afterAll(async () => {
  for (const p of [strict, lenient, canary]) stopPrism(p);
  await sim?.close();
  await new Promise<void>((resolve) => (wrongUpstream ? wrongUpstream.close(() => resolve()) : resolve()));
});

describe('Prism catches a response that breaks the contract (so that "no violation" means something)', () => {
  it('answers 500 with the response violations when the upstream is wrong', async () => {
    const a = await throughPrism(canary, 'GET', '/_sim/health', { key: null });
    expect(a.status).toBe(500);
    expect(a.headers.get('content-type')).toMatch(/problem\+json/);
    expect(JSON.stringify(a.body)).toMatch(/VIOLATIONS/);
    expect(a.violations.length).toBeGreaterThan(0);
    expect(a.violations.every((v) => v.location[0] === 'response')).toBe(true);
    // Prism logs it as a terminated request (the line may trail the response by a moment).
    await until(() => canary.output.some((l) => /Request terminated with error: .*VIOLATIONS/.test(l)));
    expect(canary.output.join('\n')).toMatch(/Request terminated with error: .*VIOLATIONS/);
  });

  it('with --errors, refuses a request that breaks the contract instead of forwarding it', async () => {
    const a = await throughPrism(strict, 'POST', '/v1/videos', { key: 'sk_test_contract_refused', body: { model: 'video-3.2' } });
    expect(a.status).toBe(422);
    expect(a.headers.get('content-type')).toMatch(/problem\+json/);
    // The simulator never saw it:
    const seen = await throughPrism(strict, 'GET', '/_sim/requests?api_key=sk_test_contract_refused', { key: null });
    expectClean(seen, 200);
    expect(seen.body.data).toEqual([]);
  });
});

describe('every /v1 endpoint through prism proxy --errors', () => {
  const key = 'sk_test_contract_v1';
  let first = '';

  it('creates a video (and replays it with the same Idempotency-Key)', async () => {
    const body = { model: 'video-3.2', prompt: PROMPT, negative_prompt: null, resolution: '1080p', duration_seconds: 8 };
    const a = await throughPrism(strict, 'POST', '/v1/videos', { key, body, headers: { 'Idempotency-Key': 'contract-1' } });
    expectClean(a, 200, 'create');
    expect(a.body).toMatchObject({ object: 'video', status: 'queued', model: 'video-3.2' });
    for (const h of ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset']) expect(a.headers.get(h)).toMatch(/^\d+$/);
    first = a.body.id;

    const replay = await throughPrism(strict, 'POST', '/v1/videos', { key, body, headers: { 'Idempotency-Key': 'contract-1' } });
    expectClean(replay, 200, 'replay');
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.body.id).toBe(first);

    const reused = await throughPrism(strict, 'POST', '/v1/videos', {
      key,
      body: { ...body, prompt: 'Another prompt entirely.' },
      headers: { 'Idempotency-Key': 'contract-1' },
    });
    expectError(reused, 400, 'invalid_request_error', 'idempotency_key_reused', 'Idempotency-Key');
  });

  it('retrieves it, and follows it through every status to succeeded (clock advanced in-process)', async () => {
    const seen: string[] = [];
    let video = (await throughPrism(strict, 'GET', `/v1/videos/${first}`, { key })).body;
    for (let i = 0; i < 100 && !['succeeded', 'failed', 'canceled'].includes(video.status); i++) {
      if (seen.at(-1) !== video.status) seen.push(video.status);
      sim.clock.advance(0.25);
      const a = await throughPrism(strict, 'GET', `/v1/videos/${first}`, { key });
      expectClean(a, 200, `poll ${i}`);
      video = a.body;
    }
    seen.push(video.status);
    expect(seen).toEqual(['queued', 'processing', 'verifying', 'succeeded']);
    expect(video.output.url).toMatch(/\/cdn\/videos\/vid_\w+\.mp4$/);
    expect(video.compliance).toEqual({ verified: true, flags: [] });
    expect(video.cost_cents).toBeGreaterThan(0);
    expect(video.completed_at).toMatch(/Z$/);
  });

  it('creates an image and a video from it (keyframe_id), then cancels that video', async () => {
    const image = await throughPrism(strict, 'POST', '/v1/images', { key, body: { prompt: 'A lighthouse on a cliff at dawn.', aspect_ratio: '1:1' } });
    expectClean(image, 200, 'image');
    expect(image.body).toMatchObject({ object: 'image', status: 'ready' });

    const video = await throughPrism(strict, 'POST', '/v1/videos', {
      key,
      body: { model: 'video-3.1', prompt: PROMPT, keyframe_id: image.body.id, resolution: '720p', duration_seconds: 4 },
    });
    expectClean(video, 200, 'video from keyframe');

    const canceled = await throughPrism(strict, 'DELETE', `/v1/videos/${video.body.id}`, { key });
    expectClean(canceled, 200, 'cancel');
    expect(Object.keys(canceled.body).sort()).toEqual(['completed_at', 'created_at', 'id', 'object', 'status']);
    expect(canceled.body.status).toBe('canceled');

    const again = await throughPrism(strict, 'DELETE', `/v1/videos/${video.body.id}`, { key });
    expectError(again, 400, 'invalid_request_error', 'not_cancelable', null);
    const done = await throughPrism(strict, 'DELETE', `/v1/videos/${first}`, { key });
    expectError(done, 400, 'invalid_request_error', 'not_cancelable', null);
  });

  it('lists with limit, after and status', async () => {
    const all = await throughPrism(strict, 'GET', '/v1/videos', { key });
    expectClean(all, 200, 'list');
    expect(all.body.data.map((v: { id: string }) => v.id)[0]).toBe(first);
    expect(all.body.data).toHaveLength(2);

    const page = await throughPrism(strict, 'GET', '/v1/videos?limit=1', { key });
    expectClean(page, 200, 'list limit');
    expect(page.body).toMatchObject({ object: 'list', has_more: true });
    const next = await throughPrism(strict, 'GET', `/v1/videos?limit=1&after=${first}`, { key });
    expectClean(next, 200, 'list after');
    expect(next.body.data[0].status).toBe('canceled');
    expect(next.body.has_more).toBe(false);

    const succeeded = await throughPrism(strict, 'GET', '/v1/videos?status=succeeded', { key });
    expectClean(succeeded, 200, 'list status');
    expect(succeeded.body.data.map((v: { id: string }) => v.id)).toEqual([first]);
  });

  it('serves failed videos (api_error and compliance_error) and flagged successes', async () => {
    const outcomes = [
      { outcome: { fail_stage: 'render' }, expect: { status: 'failed', error: { type: 'api_error', code: 'render_failed' } } },
      { outcome: { fail_stage: 'keyframe' }, expect: { status: 'failed', error: { type: 'api_error' } } },
      {
        outcome: { output_rejected: true },
        expect: { status: 'failed', error: { type: 'compliance_error', code: 'output_rejected', stage: 'output_verification' } },
      },
      {
        outcome: { flags: [{ code: 'low_contrast', severity: 'warning', message: 'Low contrast.' }] },
        expect: { status: 'succeeded', compliance: { verified: true } },
      },
    ];
    const ids: string[] = [];
    for (const o of outcomes) {
      await queueFaultThroughPrism({ path: '/v1/videos', method: 'POST', outcome: o.outcome, api_key: key });
      const created = await throughPrism(strict, 'POST', '/v1/videos', { key, body: { model: 'video-3.0', prompt: PROMPT } });
      expectClean(created, 200, `create with ${JSON.stringify(o.outcome)}`);
      ids.push(created.body.id);
    }
    sim.clock.advance(10);
    for (const [i, o] of outcomes.entries()) {
      const a = await throughPrism(strict, 'GET', `/v1/videos/${ids[i]}`, { key });
      expectClean(a, 200, JSON.stringify(o.outcome));
      expect(a.body).toMatchObject(o.expect);
    }
  });
});

describe('errors through prism proxy --errors (requests valid by the contract)', () => {
  const key = 'sk_test_contract_errors';

  it('401 invalid_api_key and revoked_api_key', async () => {
    expectError(await throughPrism(strict, 'GET', '/v1/videos', { key: 'not_a_test_key' }), 401, 'authentication_error', 'invalid_api_key');
    expectError(await throughPrism(strict, 'GET', '/v1/videos', { key: 'sk_test_revoked' }), 401, 'authentication_error', 'revoked_api_key');
  });

  it('404 resource_not_found on retrieve and cancel', async () => {
    expectError(await throughPrism(strict, 'GET', '/v1/videos/vid_doesnotexist', { key }), 404, 'invalid_request_error', 'resource_not_found', 'id');
    expectError(await throughPrism(strict, 'DELETE', '/v1/videos/foo', { key }), 404, 'invalid_request_error', 'resource_not_found', 'id');
  });

  it('400 invalid_parameter (unknown after), model_not_found, keyframe_not_found', async () => {
    expectError(await throughPrism(strict, 'GET', '/v1/videos?after=vid_unknown', { key }), 400, 'invalid_request_error', 'invalid_parameter', 'after');
    expectError(
      await throughPrism(strict, 'POST', '/v1/videos', { key, body: { model: 'video-9', prompt: PROMPT } }),
      400, 'invalid_request_error', 'model_not_found', 'model',
    );
    expectError(
      await throughPrism(strict, 'POST', '/v1/videos', { key, body: { model: 'video-3.2', prompt: PROMPT, keyframe_id: 'img_nope' } }),
      400, 'invalid_request_error', 'keyframe_not_found', 'keyframe_id',
    );
  });

  it('402, 422, 429 and 500 (fast never reaches them on its own: queued faults and a forced outcome)', async () => {
    await queueFaultThroughPrism({ path: '/v1/videos', method: 'POST', status: 402, api_key: key });
    expectError(await throughPrism(strict, 'POST', '/v1/videos', { key, body: { model: 'video-3.2', prompt: PROMPT } }), 402, 'insufficient_balance', 'insufficient_balance');

    await queueFaultThroughPrism({ path: '/v1/videos', method: 'POST', outcome: { claim_linking_rejected: true }, api_key: key });
    const rejected = await throughPrism(strict, 'POST', '/v1/videos', { key, body: { model: 'video-3.2', prompt: PROMPT } });
    expectError(rejected, 422, 'compliance_error', 'claim_linking_rejected');
    expect(rejected.body.error.stage).toBe('claim_linking');

    await queueFaultThroughPrism({ path: '/v1/images', method: 'POST', status: 422, api_key: key });
    expectError(await throughPrism(strict, 'POST', '/v1/images', { key, body: { prompt: 'A red kite.' } }), 422, 'compliance_error', 'claim_linking_rejected');

    await queueFaultThroughPrism({ path: '/v1/videos*', status: 429, api_key: key });
    const limited = await throughPrism(strict, 'GET', '/v1/videos', { key });
    expectError(limited, 429, 'rate_limit_error', 'rate_limit_exceeded');
    expect(limited.headers.get('retry-after')).toBe('1');

    await queueFaultThroughPrism({ path: '/v1/videos/*', method: 'GET', status: 500, api_key: key });
    expectError(await throughPrism(strict, 'GET', '/v1/videos/vid_x', { key }), 500, 'api_error', 'internal_error');
  });
});

describe('errors whose requests break the contract on purpose (prism proxy without --errors)', () => {
  const key = 'sk_test_contract_bad_requests';

  it('401 missing_api_key', async () => {
    expectRequestOnlyViolations(await throughPrism(lenient, 'GET', '/v1/videos', { key: null }), 401, 'authentication_error', 'missing_api_key');
    expectRequestOnlyViolations(
      await throughPrism(lenient, 'POST', '/v1/videos', { key: null, body: { model: 'video-3.2', prompt: PROMPT } }),
      401, 'authentication_error', 'missing_api_key',
    );
  });

  it('400 missing_parameter (model before prompt)', async () => {
    expectRequestOnlyViolations(await throughPrism(lenient, 'POST', '/v1/videos', { key, body: {} }), 400, 'invalid_request_error', 'missing_parameter', 'model');
    expectRequestOnlyViolations(
      await throughPrism(lenient, 'POST', '/v1/videos', { key, body: { model: 'video-3.2' } }),
      400, 'invalid_request_error', 'missing_parameter', 'prompt',
    );
    expectRequestOnlyViolations(await throughPrism(lenient, 'POST', '/v1/images', { key, body: {} }), 400, 'invalid_request_error', 'missing_parameter', 'prompt');
  });

  it('400 invalid_parameter and unknown_parameter', async () => {
    const cases: Array<[string, string, unknown, string]> = [
      ['POST', '/v1/videos', { model: 'video-3.2', prompt: '   ' }, 'prompt'],
      ['POST', '/v1/videos', { model: 'video-3.2', prompt: PROMPT, duration_seconds: 99 }, 'duration_seconds'],
      ['POST', '/v1/videos', { model: 'video-3.2', prompt: PROMPT, resolution: '4k' }, 'resolution'],
      ['POST', '/v1/images', { prompt: 'A kite.', aspect_ratio: '4:3' }, 'aspect_ratio'],
      ['GET', '/v1/videos?limit=0', undefined, 'limit'],
      ['GET', '/v1/videos?limit=101', undefined, 'limit'],
      ['GET', '/v1/videos?status=bogus', undefined, 'status'],
    ];
    for (const [method, path, body, param] of cases) {
      expectRequestOnlyViolations(await throughPrism(lenient, method, path, { key, body }), 400, 'invalid_request_error', 'invalid_parameter', param);
    }
    expectRequestOnlyViolations(
      await throughPrism(lenient, 'POST', '/v1/videos', { key, body: { model: 'video-3.2', prompt: PROMPT, colour: 'red' } }),
      400, 'invalid_request_error', 'unknown_parameter', 'colour',
    );
  });
});

describe('body and route errors through prism proxy without --errors', () => {
  const key = 'sk_test_contract_bodies';

  it('400 unsupported_content_type and 404 unknown_route are the simulator\'s own', async () => {
    expectRequestOnlyViolations(
      await throughPrism(lenient, 'POST', '/v1/videos', { key, raw: 'model=video-3.2', headers: { 'Content-Type': 'text/plain' } }),
      400, 'invalid_request_error', 'unsupported_content_type', null,
    );
    expectRequestOnlyViolations(await throughPrism(lenient, 'GET', '/v1/nothing', { key }), 404, 'invalid_request_error', 'unknown_route', null);
  });

  it('malformed JSON never reaches the simulator: Prism 5 answers it itself (invalid_json is covered by the HTTP suite)', async () => {
    const a = await throughPrism(lenient, 'POST', '/v1/videos', { key: 'sk_test_contract_malformed', raw: '{"model": "video-3.2",' });
    expect(a.status).toBe(400);
    const journal = await throughPrism(strict, 'GET', '/_sim/requests?api_key=sk_test_contract_malformed', { key: null });
    expectClean(journal, 200);
    expect(journal.body.data).toEqual([]);
  });
});

describe('the /_sim control API through prism proxy --errors', () => {
  const key = 'sk_test_contract_sim';

  it('answers health, clock, advance, scenario, requests, faults, generations and reset', async () => {
    const health = await throughPrism(strict, 'GET', '/_sim/health', { key: null });
    expectClean(health, 200, 'health');
    expect(health.body).toMatchObject({ status: 'ok', scenario: 'fast', clock: { mode: 'manual' } });

    const created = await throughPrism(strict, 'POST', '/v1/videos', { key, body: { model: 'video-3.2', prompt: PROMPT } });
    expectClean(created, 200, 'create');

    expectClean(await throughPrism(strict, 'GET', `/_sim/clock?api_key=${key}`, { key: null }), 200, 'clock');
    const advanced = await throughPrism(strict, 'POST', '/_sim/clock/advance', { key: null, body: { seconds: 1.5, api_key: key } });
    expectClean(advanced, 200, 'advance');
    expect(advanced.body.mode).toBe('manual');
    expectClean(await throughPrism(strict, 'GET', '/_sim/scenario', { key: null }), 200, 'scenario');

    const journal = await throughPrism(strict, 'GET', `/_sim/requests?api_key=${key}&limit=5`, { key: null });
    expectClean(journal, 200, 'requests');
    expect(journal.body.data[0]).toMatchObject({ method: 'POST', path: '/v1/videos', status: 200, account: key });

    const gens = await throughPrism(strict, 'GET', `/_sim/generations?api_key=${key}&limit=10`, { key: null });
    expectClean(gens, 200, 'generations');
    expect(gens.body.data[0]).toMatchObject({ id: created.body.id, account: key });
    const one = await throughPrism(strict, 'GET', `/_sim/generations/${created.body.id}`, { key: null });
    expectClean(one, 200, 'generation');
    expect(one.body.stages.length).toBeGreaterThan(0);
    expectError(await throughPrism(strict, 'GET', '/_sim/generations/vid_nope', { key: null }), 404, 'invalid_request_error', 'resource_not_found');

    const reset = await throughPrism(strict, 'POST', '/_sim/reset', { key: null, body: { api_key: key } });
    expectClean(reset, 200, 'reset');
    const after = await throughPrism(strict, 'GET', '/v1/videos', { key });
    expectClean(after, 200, 'list after reset');
    expect(after.body.data).toEqual([]);
  });
});

describe('the verdict', () => {
  it('prism --errors reported no violation, and the lenient proxy only request violations', async () => {
    await until(() => false, 500); // let the last log lines arrive
    const strictViolations = strict.output.filter((l) => /violation/i.test(l));
    expect(strictViolations, strict.output.slice(-40).join('\n')).toEqual([]);
    expect(strict.output.filter((l) => /Request terminated with error/.test(l))).toHaveLength(1); // the refused request above
    const lenientViolations = lenient.output.filter((l) => /Violation/i.test(l));
    expect(lenientViolations.length).toBeGreaterThan(0);
    expect(lenientViolations.filter((l) => !/Violation: request/.test(l))).toEqual([]);
  });

  it('the simulator validated every response it sent against openapi.yaml too', () => {
    expect(sim.app.responseFailures).toEqual([]);
  });
});
