/**
 * Precisions that changed earlier answers: injected faults carry rate-limit headers, claim linking
 * judges the request, null for a required field is missing, the realtime clock starts now, trailing
 * slashes, queued faults checked, listed and dropped, malformed HTTP, readable messages, shutdown.
 */
import { connect } from 'node:net';
import request from 'supertest';
import { afterEach, describe, expect, it } from 'vitest';
import type { Scenario } from '../src/core/scenario/scenario.js';
import { loadScenario } from '../src/scenarios/load.js';
import { PROMPT, bearer, createVideo, expectError, makeSim, postFault, queueFault } from './helpers.js';

function fastWith(patch: (s: Scenario) => void): Scenario {
  const s = structuredClone(loadScenario('fast'));
  patch(s);
  return s;
}

describe('injected faults', () => {
  it('an injected 429 carries X-RateLimit-* with Remaining 0 and Reset at least Retry-After, and spends no token', async () => {
    const sim = makeSim();
    await createVideo(sim);
    const before = await request(sim.app).get('/v1/videos').set(bearer());
    expect(before.headers['x-ratelimit-remaining']).toBe('999999998');
    await queueFault(sim, { path: '/v1/videos', method: 'GET', status: 429 });
    const res = await request(sim.app).get('/v1/videos').set(bearer());
    expectError(res, 429, 'rate_limit_error', 'rate_limit_exceeded');
    expect(res.headers['retry-after']).toBe('1');
    expect(res.headers['x-ratelimit-limit']).toBe('1000000000');
    expect(res.headers['x-ratelimit-remaining']).toBe('0');
    expect(Number(res.headers['x-ratelimit-reset'])).toBeGreaterThanOrEqual(1);
    const after = await request(sim.app).get('/v1/videos').set(bearer());
    expect(after.headers['x-ratelimit-remaining']).toBe('999999997');
  });

  it('an injected 500 carries the bucket as it stands', async () => {
    const sim = makeSim();
    await queueFault(sim, { path: '/v1/videos', method: 'POST', status: 500 });
    const res = await createVideo(sim);
    expectError(res, 500, 'api_error', 'internal_error');
    expect(res.headers['x-ratelimit-limit']).toBe('1000000000');
    expect(res.headers['x-ratelimit-remaining']).toBe('1000000000');
    expect(res.headers['x-ratelimit-reset']).toBe('0');
  });
});

describe('claim linking judges the request, not the attempt', () => {
  const claims = () =>
    makeSim({
      scenario: fastWith((s) => {
        s.name = 'claims';
        s.compliance.claim_linking.probability = 0.5;
      }),
    });

  it('an unchanged retry of a rejected create is rejected again; the verdict follows the content', async () => {
    const sim = claims();
    const verdicts: number[] = [];
    for (let i = 0; i < 12; i++) verdicts.push((await createVideo(sim, { prompt: `${PROMPT} Take ${i}.` })).status);
    const rejectedAt = verdicts.indexOf(422);
    const acceptedAt = verdicts.indexOf(200);
    expect(rejectedAt).toBeGreaterThanOrEqual(0);
    expect(acceptedAt).toBeGreaterThanOrEqual(0);
    for (let retry = 0; retry < 3; retry++) {
      expect((await createVideo(sim, { prompt: `${PROMPT} Take ${rejectedAt}.` })).status).toBe(422);
      expect((await createVideo(sim, { prompt: `${PROMPT} Take ${acceptedAt}.` })).status).toBe(200);
    }
    // Case and white space do not change the request.
    const shouted = `  ${PROMPT.toUpperCase()}   TAKE ${rejectedAt}. `;
    expect((await createVideo(sim, { prompt: shouted })).status).toBe(422);
  });

  it('images are judged by their prompt the same way', async () => {
    const sim = claims();
    const statuses: number[] = [];
    for (let i = 0; i < 8; i++) {
      const prompt = `A still of a harbour, take ${i}.`;
      const first = await request(sim.app).post('/v1/images').set(bearer()).send({ prompt });
      const again = await request(sim.app).post('/v1/images').set(bearer()).send({ prompt });
      expect(again.status).toBe(first.status);
      statuses.push(first.status);
    }
    expect(statuses).toContain(422);
    expect(statuses).toContain(200);
  });
});

describe('a required field sent as null', () => {
  it.each([
    ['/v1/videos', { model: null, prompt: PROMPT }, 'model'],
    ['/v1/videos', { model: 'video-3.2', prompt: null }, 'prompt'],
    ['/v1/images', { prompt: null }, 'prompt'],
  ])('POST %s with %j is 400 missing_parameter', async (path, body, param) => {
    const sim = makeSim();
    const res = await request(sim.app).post(path).set(bearer()).send(body);
    expect(expectError(res, 400, 'invalid_request_error', 'missing_parameter', param).message).toBe(`Missing required parameter '${param}'.`);
  });

  it('an unknown field sent as null is still unknown', async () => {
    const sim = makeSim();
    const res = await createVideo(sim, { colour: null });
    expectError(res, 400, 'invalid_request_error', 'unknown_parameter', 'colour');
  });
});

describe('the clock', () => {
  it('in realtime mode virtual time starts at the wall-clock time of start', async () => {
    const before = Date.now();
    const sim = makeSim({ scenario: 'default', clock: 'realtime' });
    const res = await createVideo(sim);
    const created = Date.parse(res.body.created_at);
    expect(created).toBeGreaterThanOrEqual(before);
    expect(created).toBeLessThanOrEqual(Date.now());
  });

  it('the manual clock starts at its fixed default for determinism', async () => {
    const sim = makeSim({ scenario: 'default', clock: 'manual' });
    expect((await createVideo(sim)).body.created_at).toBe('2026-01-01T00:00:00.000Z');
  });
});

describe('trailing slashes', () => {
  it.each([
    ['GET', '/v1/videos/'],
    ['POST', '/v1/videos/'],
    ['POST', '/v1/images/'],
  ])('%s %s is 404 unknown_route and creates nothing', async (method, path) => {
    const sim = makeSim();
    const req = method === 'GET' ? request(sim.app).get(path) : request(sim.app).post(path).send({ model: 'video-3.2', prompt: PROMPT });
    expectError(await req.set(bearer()), 404, 'invalid_request_error', 'unknown_route', null);
    expect((await request(sim.app).get('/v1/videos').set(bearer())).body.data).toEqual([]);
  });

  it('GET /v1/videos/{id}/ is 404 unknown_route', async () => {
    const sim = makeSim();
    const { body } = await createVideo(sim);
    expectError(await request(sim.app).get(`/v1/videos/${body.id}/`).set(bearer()), 404, 'invalid_request_error', 'unknown_route', null);
  });
});

describe('/_sim/faults', () => {
  it.each(['/v1/videos/', '/v1/nope', '/_sim/health', '/v2/*'])('refuses a path that matches no /v1 route: %s', async (path) => {
    const sim = makeSim();
    const res = await postFault(sim, { path, status: 500 });
    expectError(res, 400, 'invalid_request_error', 'invalid_parameter', 'path');
  });

  it('lists the queued faults and drops them all, or one account', async () => {
    const sim = makeSim();
    await queueFault(sim, { path: '/v1/videos', method: 'POST', status: 500, times: 2 });
    await queueFault(sim, { path: '/v1/*', latency_ms: 5, api_key: 'sk_test_bob' });
    const listed = await request(sim.app).get('/_sim/faults');
    expect(listed.body).toEqual({
      queued: 3,
      faults: [
        { path: '/v1/videos', method: 'POST', status: 500, times_left: 2, api_key: null },
        { path: '/v1/*', method: null, latency_ms: 5, times_left: 1, api_key: 'sk_test_bob' },
      ],
    });
    expect((await request(sim.app).delete('/_sim/faults').query({ api_key: 'sk_test_bob' })).body).toEqual({ queued: 2 });
    expect((await request(sim.app).delete('/_sim/faults')).body).toEqual({ queued: 0 });
    expect((await createVideo(sim)).status).toBe(200);
  });

  it('a fault without status, network, latency_ms or outcome is 400 missing_parameter naming the alternatives', async () => {
    const sim = makeSim();
    const res = await postFault(sim, { path: '/v1/videos' });
    expect(expectError(res, 400, 'invalid_request_error', 'missing_parameter', 'status').message).toBe(
      "Give at least one of 'status', 'network', 'latency_ms', 'outcome'.",
    );
  });
});

describe('POST /_sim/reset', () => {
  it('api_key with seed is 400 invalid_parameter, param seed', async () => {
    const sim = makeSim();
    const res = await request(sim.app).post('/_sim/reset').send({ api_key: 'sk_test_alice', seed: 3 });
    expectError(res, 400, 'invalid_request_error', 'invalid_parameter', 'seed');
  });

  it('api_key with scenario null is an account reset', async () => {
    const sim = makeSim();
    expect((await request(sim.app).post('/_sim/reset').send({ api_key: 'sk_test_alice', scenario: null })).status).toBe(200);
  });
});

describe('messages say what a person needs', () => {
  it.each([
    [{ resolution: '4k' }, 'resolution', "Invalid value for 'resolution': must be one of 720p, 1080p."],
    [{ duration_seconds: '8' }, 'duration_seconds', "Invalid value for 'duration_seconds': must be an integer."],
    [{ duration_seconds: 17 }, 'duration_seconds', "Invalid value for 'duration_seconds': must be at most 16."],
    [{ prompt: '   ' }, 'prompt', "Invalid value for 'prompt': must hold at least one non-white-space character."],
  ])('create with %j', async (body, param, message) => {
    const sim = makeSim();
    expect(expectError(await createVideo(sim, body), 400, 'invalid_request_error', 'invalid_parameter', param).message).toBe(message);
  });

  it('an empty query parameter name is named as such', async () => {
    const sim = makeSim();
    const res = await request(sim.app).get('/v1/videos?=x').set(bearer());
    expect(expectError(res, 400, 'invalid_request_error', 'unknown_parameter', '').message).toMatch(/empty name/);
  });

  it("a '+' in a query value is a space, not a problem", async () => {
    const sim = makeSim();
    const res = await request(sim.app).get('/v1/videos?after=vid+x').set(bearer());
    expect(expectError(res, 400, 'invalid_request_error', 'invalid_parameter', 'after').message).toBe(
      "'after' must be the id of one of your generations; 'vid x' is not.",
    );
  });

  it('an empty after is 400 invalid_parameter', async () => {
    const sim = makeSim();
    expectError(await request(sim.app).get('/v1/videos?after=').set(bearer()), 400, 'invalid_request_error', 'invalid_parameter', 'after');
  });

  it('an Idempotency-Key with a space is 400 invalid_parameter', async () => {
    const sim = makeSim();
    const res = await createVideo(sim).set('Idempotency-Key', 'two words');
    expectError(res, 400, 'invalid_request_error', 'invalid_parameter', 'Idempotency-Key');
  });
});

describe('malformed HTTP', () => {
  let close: (() => Promise<void>) | undefined;
  afterEach(async () => {
    await close?.();
    close = undefined;
  });

  async function exchange(raw: string): Promise<string> {
    const sim = makeSim();
    const url = new URL(await sim.listen(0));
    close = () => sim.close();
    return new Promise((resolve, reject) => {
      const socket = connect(Number(url.port), '127.0.0.1', () => socket.end(raw));
      let text = '';
      socket.on('data', (chunk) => (text += chunk.toString('utf8')));
      socket.on('end', () => resolve(text));
      socket.on('error', reject);
    });
  }

  it('bytes that are not HTTP get a 400 invalid_request in the error shape', async () => {
    const text = await exchange('HELLO THERE\r\n\r\n');
    expect(text.split('\r\n')[0]).toBe('HTTP/1.1 400 Bad Request');
    const body = JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4));
    expect(body).toEqual({ error: { type: 'invalid_request_error', code: 'invalid_request', message: expect.any(String), param: null } });
    expect(text).toMatch(/\r\nX-Request-Id: req_\d{10}\r\n/);
  });

  it('headers too large get a 400 request_too_large', async () => {
    const text = await exchange(`GET /v1/videos HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`);
    const body = JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4));
    expect(body.error.code).toBe('request_too_large');
  });
});

describe('POST /_sim/shutdown', () => {
  it('answers shutting_down, then closes the in-process server', async () => {
    const sim = makeSim();
    const url = await sim.listen(0);
    const res = await fetch(`${url}/_sim/shutdown`, { method: 'POST' });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: 'shutting_down' });
    await expect.poll(() => fetch(`${url}/_sim/health`).then(() => 'open', () => 'closed'), { timeout: 2000 }).toBe('closed');
  });
});
