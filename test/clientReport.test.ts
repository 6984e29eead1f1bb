/**
 * The client report (GET /_sim/report, sim.report): scripted clients that each break one rule of the
 * interface document, well-behaved clients that break none (over `fast` and `flaky`), the openai
 * package as a plain HTTP client against a realtime simulator (the rules' edges on the core:
 * client-report-rules.test.ts).
 */
import OpenAI from 'openai';
import request from 'supertest';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { OPERATIONS } from '../src/request-path/router.js';
import { SERVICE_ENDPOINTS, type ClientReport } from '../src/core/journal/clientReport.js';
import { createSimulator, type SimulatorHandle } from '../src/index.js';
import { bearer, makeSim, PROMPT, queueFault } from './helpers.js';

const KEY = 'sk_test_client';
const VIDEO = { model: 'video-3.2', prompt: PROMPT };

interface Answer {
  status: number;
  body: Record<string, unknown>;
  id: string;
  retryAfter: number | undefined;
}

/** One request of the client under test (account KEY), over supertest. */
async function send(
  sim: SimulatorHandle,
  method: 'GET' | 'POST' | 'DELETE',
  path: string,
  options: { body?: unknown; idempotencyKey?: string; key?: string } = {},
): Promise<Answer> {
  let req = request(sim.app)[method === 'GET' ? 'get' : method === 'POST' ? 'post' : 'delete'](path).set(bearer(options.key ?? KEY));
  if (options.idempotencyKey) req = req.set('Idempotency-Key', options.idempotencyKey);
  if (typeof options.body === 'string') req = req.set('Content-Type', 'application/json').send(options.body);
  else if (options.body !== undefined) req = req.send(options.body as object);
  const res = await req;
  const retryAfter = res.headers['retry-after'];
  return { status: res.status, body: res.body, id: res.headers['x-request-id'] as string, retryAfter: retryAfter === undefined ? undefined : Number(retryAfter) };
}

/** The client "waits": the account's clock moves. */
const wait = (sim: SimulatorHandle, seconds: number, key = KEY): void => void sim.clock.advance(seconds, key);

const codes = (report: ClientReport): string[] => report.findings.map((f) => f.code);

describe('GET /_sim/report', () => {
  it('answers 400 missing_parameter without api_key', async () => {
    const sim = makeSim();
    const res = await request(sim.app).get('/_sim/report');
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ type: 'invalid_request_error', code: 'missing_parameter', param: 'api_key' });
  });

  it('answers an account that made no request with every endpoint at 0 and the no_requests error', async () => {
    const sim = makeSim();
    const res = await request(sim.app).get('/_sim/report').query({ api_key: 'sk_test_nobody' });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      account: 'sk_test_nobody',
      requests: 0,
      coverage: {
        endpoints: { 'POST /v1/videos': 0, 'GET /v1/videos': 0, 'GET /v1/videos/{id}': 0, 'DELETE /v1/videos/{id}': 0, 'POST /v1/images': 0 },
        statuses: {},
      },
      findings: [{ code: 'no_requests', severity: 'error', count: 1, message: expect.any(String), examples: [] }],
    });
  });

  it('counts requests per endpoint (any other route by its path) and per status, and equals sim.report', async () => {
    const sim = makeSim();
    const created = await send(sim, 'POST', '/v1/videos', { body: VIDEO });
    await send(sim, 'GET', '/v1/videos?limit=5');
    wait(sim, 3);
    await send(sim, 'GET', `/v1/videos/${created.body.id}`);
    await send(sim, 'GET', '/v1/videos/vid_unknown');
    await send(sim, 'POST', '/v1/images', { body: { prompt: 'A lighthouse at dawn.' } });
    await send(sim, 'POST', '/v1/video', { body: VIDEO });
    const res = await request(sim.app).get('/_sim/report').query({ api_key: KEY });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      account: KEY,
      requests: 6,
      coverage: {
        endpoints: {
          'POST /v1/videos': 1,
          'GET /v1/videos': 1,
          'GET /v1/videos/{id}': 2,
          'DELETE /v1/videos/{id}': 0,
          'POST /v1/images': 1,
          'POST /v1/video': 1,
        },
        statuses: { '200': 4, '404': 2 },
      },
      findings: [],
    });
    expect(sim.report(KEY)).toEqual(res.body);
  });

  it("lists exactly openapi.yaml's /v1 operations as the service's endpoints", () => {
    const fromContract = OPERATIONS.filter((o) => o.path.startsWith('/v1/')).map((o) => [o.operationId, { method: o.method, route: o.path }]);
    expect(Object.fromEntries(fromContract)).toEqual(SERVICE_ENDPOINTS);
  });
});

describe('a client that breaks one rule gets exactly that finding', () => {
  it('retry_not_retryable: the same create (its JSON in another key order) sent again after a 400', async () => {
    const sim = makeSim();
    const first = await send(sim, 'POST', '/v1/videos', { body: { model: 'video-3.2', duration_seconds: 99 } });
    const again = await send(sim, 'POST', '/v1/videos', { body: '{ "duration_seconds": 99,  "model": "video-3.2" }' });
    expect([first.status, again.status]).toEqual([400, 400]);
    expect(sim.report(KEY).findings).toEqual([
      {
        code: 'retry_not_retryable',
        severity: 'error',
        count: 1,
        message:
          'The client sent a request again unchanged (same method, path and JSON body) after the same request had been answered 400. ' +
          'A 400, 401, 402 or 422 means that the request itself cannot succeed: the interface document says not to retry it without changing the request.',
        examples: [again.id],
      },
    ]);
  });

  it('retry_too_soon: a create sent again half a second after a 429 that asked for 1 s', async () => {
    const sim = makeSim();
    await queueFault(sim, { api_key: KEY, path: '/v1/videos', method: 'POST', status: 429 });
    const limited = await send(sim, 'POST', '/v1/videos', { body: VIDEO, idempotencyKey: 'create-1' });
    expect([limited.status, limited.retryAfter]).toEqual([429, 1]);
    wait(sim, 0.5);
    const again = await send(sim, 'POST', '/v1/videos', { body: VIDEO, idempotencyKey: 'create-1' });
    expect(again.status).toBe(200);
    expect(sim.report(KEY).findings).toEqual([
      {
        code: 'retry_too_soon',
        severity: 'error',
        count: 1,
        message:
          "The client repeated a request answered 429 before the answer's Retry-After had passed (the earliest 0.5 s after the 429, where Retry-After asked for 1 s). " +
          'Wait at least Retry-After seconds before sending a rate-limited request again.',
        examples: [again.id],
      },
    ]);
  });

  it('retry_without_backoff: a list retried every second after four 500s', async () => {
    const sim = makeSim();
    await queueFault(sim, { api_key: KEY, path: '/v1/videos', method: 'GET', status: 500, times: 4 });
    const first = await send(sim, 'GET', '/v1/videos');
    for (let i = 0; i < 3; i++) {
      wait(sim, 1);
      expect((await send(sim, 'GET', '/v1/videos')).status).toBe(500);
    }
    wait(sim, 1);
    const last = await send(sim, 'GET', '/v1/videos');
    expect(last.status).toBe(200);
    expect(sim.report(KEY).findings).toEqual([
      {
        code: 'retry_without_backoff',
        severity: 'warning',
        count: 1,
        message:
          'The client retried a request after 429 or 500 answers without its waits growing (waits of 1 s, 1 s, 1 s, 1 s: none more than 1.25 times the mean of the waits before it). ' +
          'The interface document says to retry these with exponential backoff: wait longer after each failed attempt.',
        examples: [first.id],
      },
    ]);
  });

  it('post_retry_without_idempotency_key: a create sent again after a 500, without a key', async () => {
    const sim = makeSim();
    await queueFault(sim, { api_key: KEY, path: '/v1/videos', method: 'POST', status: 500 });
    expect((await send(sim, 'POST', '/v1/videos', { body: VIDEO })).status).toBe(500);
    wait(sim, 1);
    const again = await send(sim, 'POST', '/v1/videos', { body: VIDEO });
    expect(again.status).toBe(200);
    expect(sim.report(KEY).findings).toEqual([
      {
        code: 'post_retry_without_idempotency_key',
        severity: 'warning',
        count: 1,
        message:
          'The client repeated a create (POST /v1/videos or /v1/images) after a 429, a 500 or no answer, without sending the same Idempotency-Key on both attempts. ' +
          'A create whose answer was lost may have been carried out: send one Idempotency-Key with every attempt of a create, so that a retry returns the original and creates no duplicate.',
        examples: [again.id],
      },
    ]);
  });

  it('poll_too_fast: a generation retrieved again 1 s after it was seen queued', async () => {
    const sim = makeSim();
    const created = await send(sim, 'POST', '/v1/videos', { body: VIDEO, idempotencyKey: 'create-1' });
    const path = `/v1/videos/${created.body.id}`;
    expect((await send(sim, 'GET', path)).body.status).toBe('queued');
    wait(sim, 1);
    const tooSoon = await send(sim, 'GET', path);
    wait(sim, 30);
    expect((await send(sim, 'GET', path)).body.status).toBe('succeeded');
    expect(sim.report(KEY).findings).toEqual([
      {
        code: 'poll_too_fast',
        severity: 'warning',
        count: 1,
        message:
          'The client retrieved an unresolved generation less than 2 seconds after its previous retrieve of it, once (as little as 1 s apart). ' +
          'The interface document asks to poll every 2 to 5 seconds.',
        examples: [tooSoon.id],
      },
    ]);
  });

  it.each([
    [1.996, []],
    [1.9, []],
    [1.5, ['poll_too_fast']],
  ])('poll_too_fast tolerates timer noise: polls %s s apart give %j', async (seconds, codes) => {
    const sim = makeSim();
    const created = await send(sim, 'POST', '/v1/videos', { body: VIDEO, idempotencyKey: 'create-1' });
    const path = `/v1/videos/${created.body.id}`;
    expect((await send(sim, 'GET', path)).body.status).toBe('queued');
    wait(sim, seconds);
    await send(sim, 'GET', path);
    expect(sim.report(KEY).findings.map((f) => f.code)).toEqual(codes);
  });

  it('poll_after_resolved: a generation retrieved again after it was seen succeeded', async () => {
    const sim = makeSim();
    const created = await send(sim, 'POST', '/v1/videos', { body: VIDEO, idempotencyKey: 'create-1' });
    const path = `/v1/videos/${created.body.id}`;
    wait(sim, 30);
    expect((await send(sim, 'GET', path)).body.status).toBe('succeeded');
    wait(sim, 3);
    const again = await send(sim, 'GET', path);
    expect(sim.report(KEY).findings).toEqual([
      {
        code: 'poll_after_resolved',
        severity: 'warning',
        count: 1,
        message:
          'The client retrieved a generation it had already been answered with as succeeded, failed or canceled, once. ' +
          'A resolved generation does not change any more: stop polling it once it has resolved.',
        examples: [again.id],
      },
    ]);
  });

  it('cancel_not_cancelable: a cancel of a generation seen succeeded', async () => {
    const sim = makeSim();
    const created = await send(sim, 'POST', '/v1/videos', { body: VIDEO, idempotencyKey: 'create-1' });
    wait(sim, 30);
    expect((await send(sim, 'GET', `/v1/videos/${created.body.id}`)).body.status).toBe('succeeded');
    const cancel = await send(sim, 'DELETE', `/v1/videos/${created.body.id}`);
    expect(cancel.status).toBe(400);
    expect(sim.report(KEY).findings).toEqual([
      {
        code: 'cancel_not_cancelable',
        severity: 'warning',
        count: 1,
        message:
          'The client asked to cancel a generation it had already seen as verifying, succeeded, failed or canceled, once. ' +
          'Only a queued or processing generation can be canceled; any other cancel is answered 400.',
        examples: [cancel.id],
      },
    ]);
  });
});

describe('the same request, for idempotency and for the report alike', () => {
  it('is a retry that sends "negative_prompt": null where the first attempt left it out', async () => {
    const sim = makeSim();
    const withNull = (body: Record<string, unknown>) => JSON.stringify({ ...body, negative_prompt: null });
    // Idempotency: the stored answer is replayed, not refused as a reuse of the key.
    const created = await send(sim, 'POST', '/v1/videos', { body: VIDEO, idempotencyKey: 'same-request' });
    const replayed = await request(sim.app)
      .post('/v1/videos')
      .set(bearer(KEY))
      .set('Idempotency-Key', 'same-request')
      .set('Content-Type', 'application/json')
      .send(withNull(VIDEO));
    expect([created.status, replayed.status, replayed.headers['idempotent-replayed'], replayed.body.id]).toEqual([200, 200, 'true', created.body.id]);
    // The report: sent again after a 400, it is the same request, so not retryable.
    const unknownModel = { model: 'video-9.9', prompt: PROMPT };
    const first = await send(sim, 'POST', '/v1/videos', { body: unknownModel });
    const again = await send(sim, 'POST', '/v1/videos', { body: withNull(unknownModel) });
    expect([first.status, again.status]).toEqual([400, 400]);
    expect(sim.report(KEY).findings.map((f) => [f.code, f.count, f.examples])).toEqual([['retry_not_retryable', 1, [again.id]]]);
  });
});

describe('a create repeated after no answer', () => {
  let sim: SimulatorHandle | undefined;
  afterEach(async () => {
    await sim?.close();
    sim = undefined;
  });

  /** A create the client gives up on after 200 ms while the simulator holds it for 600 ms, then sends again. */
  async function timedOutCreate(retryKey: string | undefined): Promise<{ report: ClientReport; retryId: string }> {
    sim = makeSim();
    const url = await sim.listen(0);
    await fetch(`${url}/_sim/health`).then((r) => r.text());
    await queueFault(sim, { api_key: KEY, path: '/v1/videos', method: 'POST', latency_ms: 600 });
    const headers = { ...bearer(KEY), 'Content-Type': 'application/json', ...(retryKey ? { 'Idempotency-Key': retryKey } : {}) };
    const body = JSON.stringify(VIDEO);
    await expect(fetch(`${url}/v1/videos`, { method: 'POST', headers, body, signal: AbortSignal.timeout(200) })).rejects.toThrow();
    const retry = await fetch(`${url}/v1/videos`, { method: 'POST', headers, body });
    expect(retry.status).toBe(200);
    const held = sim.core.journal.recordsOf(KEY)[0];
    await vi.waitFor(() => expect(held?.undelivered).toBe(true), { timeout: 3000, interval: 50 });
    return { report: sim.report(KEY), retryId: retry.headers.get('x-request-id') as string };
  }

  it('without an Idempotency-Key is post_retry_without_idempotency_key', async () => {
    const { report, retryId } = await timedOutCreate(undefined);
    expect(report.findings.map((f) => [f.code, f.count, f.examples])).toEqual([['post_retry_without_idempotency_key', 1, [retryId]]]);
  });

  it('with the same Idempotency-Key on both attempts gets no finding', async () => {
    const { report } = await timedOutCreate('create-1');
    expect(report.findings).toEqual([]);
  });
});

/**
 * A client that follows the interface document: every create with an Idempotency-Key kept across
 * its attempts; 429s and 500s retried after max(Retry-After, 2^attempt) seconds; generations polled
 * every 3 s until resolved; a cancel only of a generation it has not seen past `processing`.
 */
async function wellBehavedClient(sim: SimulatorHandle, prompts: string[]): Promise<string[]> {
  let keys = 0;
  /** One request of the client, retried after a 429 or a 5xx (a POST keeps one new Idempotency-Key across its attempts). */
  const callRetrying = async (method: 'GET' | 'POST' | 'DELETE', path: string, body?: unknown): Promise<Answer> => {
    const idempotencyKey = method === 'POST' ? `key-${++keys}` : undefined;
    for (let attempt = 0; ; attempt++) {
      const answer = await send(sim, method, path, { body, idempotencyKey });
      if (answer.status !== 429 && answer.status < 500) return answer;
      if (attempt === 8) throw new Error(`${method} ${path} still failing after ${attempt + 1} attempts`);
      wait(sim, Math.max(answer.retryAfter ?? 0, 2 ** attempt));
    }
  };
  const resolved = new Set(['succeeded', 'failed', 'canceled']);
  const outcomes: string[] = [];
  await callRetrying('POST', '/v1/images', { prompt: 'A lighthouse on a cliff at dawn.' });
  for (const [i, prompt] of prompts.entries()) {
    const created = await callRetrying('POST', '/v1/videos', { model: 'video-3.2', prompt });
    expect(created.status).toBe(200);
    const path = `/v1/videos/${created.body.id}`;
    if (i === 0) {
      const canceled = await callRetrying('DELETE', path);
      outcomes.push(canceled.body.status as string);
      continue;
    }
    let status = created.body.status as string;
    while (!resolved.has(status)) {
      wait(sim, 3);
      status = (await callRetrying('GET', path)).body.status as string;
    }
    outcomes.push(status);
  }
  await callRetrying('GET', '/v1/videos?limit=100');
  return outcomes;
}

const PROMPTS = Array.from({ length: 10 }, (_, i) => `Shot ${i + 1}: a slow dolly across a rain-soaked neon street at night.`);

describe('a well-behaved client', () => {
  it('gets no finding on the fast scenario', async () => {
    const sim = makeSim();
    expect(await wellBehavedClient(sim, PROMPTS)).toEqual(['canceled', ...Array(9).fill('succeeded')]);
    const report = sim.report(KEY);
    expect(report.findings).toEqual([]);
    expect(report.coverage.endpoints).toEqual({
      'POST /v1/videos': 10,
      'GET /v1/videos': 1,
      'GET /v1/videos/{id}': report.requests - 13,
      'DELETE /v1/videos/{id}': 1,
      'POST /v1/images': 1,
    });
  });

  it('gets no finding on the flaky scenario, through its 429s, 500s and failed generations', async () => {
    const sim = makeSim({ scenario: 'flaky' });
    const outcomes = await wellBehavedClient(sim, PROMPTS);
    expect(outcomes).toContain('failed');
    const report = sim.report(KEY);
    expect(report.findings).toEqual([]);
    expect(report.coverage.statuses['429']).toBeGreaterThan(0);
    expect(report.coverage.statuses['500']).toBeGreaterThan(0);
  });
});

describe('the openai package as an HTTP client, with its default retries, against a realtime simulator', () => {
  let sim: SimulatorHandle | undefined;
  afterEach(async () => {
    await sim?.close();
    sim = undefined;
  });

  const SPEED = 20;
  /**
   * The host time the simulator reads (`now`): the real clock, plus the waits the clients below
   * skip. The openai package's own retry waits are real, so its Retry-After is still honoured in
   * the simulator's time; the clients' 3-s polls take no real time.
   */
  let skippedMs = 0;
  const now = (): number => Date.now() + skippedMs;

  /** Creates a video through openai's generic methods, polls it every 3 virtual seconds, and stops at a resolved state. */
  async function renderWithOpenAI(client: OpenAI, headers: Record<string, string>): Promise<string> {
    const created = await client.post<{ id: string; status: string }>('/v1/videos', { body: VIDEO, headers });
    let video = created;
    while (!['succeeded', 'failed', 'canceled'].includes(video.status)) {
      skippedMs += 3000 / SPEED;
      video = await client.get<{ id: string; status: string }>(`/v1/videos/${created.id}`);
    }
    return video.status;
  }

  it('gets no error finding; without an Idempotency-Key its retried create is a warning', async () => {
    sim = createSimulator({ scenario: 'fast', clock: 'realtime', speed: SPEED, now, log: () => {} });
    const url = await sim.listen(0);
    const plain = 'sk_test_openai_plain';
    const keyed = 'sk_test_openai_keyed';
    for (const key of [plain, keyed]) {
      for (const fault of [
        { path: '/v1/videos', method: 'POST', status: 500 },
        { path: '/v1/videos/*', method: 'GET', status: 429 },
      ]) {
        await queueFault(sim, { api_key: key, ...fault });
      }
    }
    const statuses = await Promise.all([
      renderWithOpenAI(new OpenAI({ apiKey: plain, baseURL: url }), {}),
      renderWithOpenAI(new OpenAI({ apiKey: keyed, baseURL: url }), { 'Idempotency-Key': 'openai-create-1' }),
    ]);
    expect(statuses).toEqual(['succeeded', 'succeeded']);

    const plainReport = sim.report(plain);
    expect(plainReport.coverage.statuses).toMatchObject({ '429': 1, '500': 1 });
    expect(plainReport.findings.filter((f) => f.severity === 'error')).toEqual([]);
    expect(codes(plainReport)).toEqual(['post_retry_without_idempotency_key']);
    const keyedReport = sim.report(keyed);
    expect(keyedReport.coverage.statuses).toMatchObject({ '429': 1, '500': 1 });
    expect(keyedReport.findings).toEqual([]);
  });
});
