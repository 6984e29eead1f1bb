/**
 * Headers every JSON answer carries, over HTTP: X-Request-Id (deterministic, unique) and CORS.
 */
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { loadScenario } from '../src/index.js';
import { VALID_IMAGE, bearer, createVideo, fastBucket, fastWith, listVideos, makeSim, postFault, queueFault, rateLimitHeaders, withFreshSim } from './helpers.js';

type Sim = ReturnType<typeof makeSim>;

let sim: Sim;
withFreshSim((fresh) => (sim = fresh));

// ---------------------------------------------------------------------------------------------------
describe('X-Request-Id', () => {
  it('is present and unique on successes and errors of every kind, inside and outside /v1', async () => {
    const created = await createVideo(sim);
    const responses = [
      ['200 create', created],
      ['200 list', await listVideos(sim)],
      ['200 retrieve', await request(sim.app).get(`/v1/videos/${created.body.id}`).set(bearer())],
      ['200 cancel', await request(sim.app).delete(`/v1/videos/${created.body.id}`).set(bearer())],
      ['200 image', await request(sim.app).post('/v1/images').set(bearer()).send(VALID_IMAGE)],
      ['400 parameter', await createVideo(sim, { bogus: 1 })],
      ['400 json', await request(sim.app).post('/v1/videos').set(bearer()).set('Content-Type', 'application/json').send('{')],
      ['401 missing', await request(sim.app).get('/v1/videos')],
      ['401 invalid', await request(sim.app).get('/v1/videos').set('Authorization', 'Bearer nope')],
      ['404 id', await request(sim.app).get('/v1/videos/foo').set(bearer())],
      ['404 /v1 route', await request(sim.app).get('/v1/nope').set(bearer())],
      ['404 outside /v1', await request(sim.app).get('/nope')],
      ['404 /_sim', await request(sim.app).get('/_sim/nope')],
      ['200 /_sim/health', await request(sim.app).get('/_sim/health')],
      ['400 /_sim', await postFault(sim, { path: '/v1/videos', status: 418 })],
      ['204 preflight', await request(sim.app).options('/v1/videos').set('Origin', 'http://localhost:5173').set('Access-Control-Request-Method', 'POST')],
    ] as const;
    // An authenticated request takes the next id of its account (req_ + a tag of the key + its
    // count); any other request the next id of the simulator.
    const alice = (n: number) => `req_10a88487_${String(n).padStart(6, '0')}`;
    const global = (n: number) => `req_${String(n).padStart(10, '0')}`;
    expect(responses.map(([label, res]) => [label, res.headers['x-request-id']])).toEqual([
      ['200 create', alice(1)],
      ['200 list', alice(2)],
      ['200 retrieve', alice(3)],
      ['200 cancel', alice(4)],
      ['200 image', alice(5)],
      ['400 parameter', alice(6)],
      ['400 json', alice(7)],
      ['401 missing', global(1)],
      ['401 invalid', global(2)],
      ['404 id', alice(8)],
      ['404 /v1 route', alice(9)],
      ['404 outside /v1', global(3)],
      ['404 /_sim', global(4)],
      ['200 /_sim/health', global(5)],
      ['400 /_sim', global(6)],
      ['204 preflight', global(7)],
    ]);
  });

  it('is present on 429, 402, 422 and 500 responses', async () => {
    const poor = makeSim({
      scenario: fastWith({
        accounts: { sk_test_poor: { balance_cents: 50 } },
        rate_limits: { capacity: 1, refill_per_second: 0.001 },
        compliance: {
          ...loadScenario('fast').compliance,
          claim_linking: { rules: [{ pattern: 'forbidden' }], probability: 0 },
        },
      }),
    });
    const r402 = await createVideo(poor, {}, 'sk_test_poor');
    expect(r402.status).toBe(402);
    const r422 = await createVideo(poor, { prompt: 'forbidden things' }, 'sk_test_carol');
    expect(r422.status).toBe(422);
    const r429 = await createVideo(poor, {}, 'sk_test_poor');
    expect(r429.status).toBe(429);
    await queueFault(poor, { path: '/v1/videos', status: 500 });
    const r500 = await createVideo(poor, {}, 'sk_test_dave');
    expect(r500.status).toBe(500);
    expect([r402, r422, r429, r500].map((res) => res.headers['x-request-id'])).toEqual([
      'req_3261727d_000001', // sk_test_poor's first request
      'req_f30968b2_000001', // sk_test_carol's
      'req_3261727d_000002', // sk_test_poor's second
      'req_72f254ff_000001', // sk_test_dave's
    ]);
  });
});

// ---------------------------------------------------------------------------------------------------
describe('CORS', () => {
  const ORIGIN = 'http://localhost:5173';

  const ALLOW_METHODS = 'GET,HEAD,POST,DELETE,OPTIONS';
  const ALLOW_HEADERS = 'Authorization,Content-Type,Idempotency-Key,Range,If-None-Match';
  const EXPOSE_HEADERS =
    'X-Request-Id,X-RateLimit-Limit,X-RateLimit-Remaining,X-RateLimit-Reset,Retry-After,Idempotent-Replayed,Content-Range,Content-Length,Accept-Ranges,ETag';

  it('a preflight for POST /v1/videos without a key is 204 and allows authorization, content-type and idempotency-key', async () => {
    const res = await request(sim.app)
      .options('/v1/videos')
      .set('Origin', ORIGIN)
      .set('Access-Control-Request-Method', 'POST')
      .set('Access-Control-Request-Headers', 'authorization,content-type,idempotency-key');
    expect(res.status).toBe(204);
    // Any origin: the simulator takes no cookies, the key travels in the Authorization header.
    expect(res.headers['access-control-allow-origin']).toBe('*');
    expect(res.headers['access-control-allow-methods']).toBe(ALLOW_METHODS);
    expect(res.headers['access-control-allow-headers']).toBe(ALLOW_HEADERS);
    expect(res.headers['access-control-max-age']).toBe('600');
    // The simulator's first request id (no account: a preflight is answered before authentication).
    expect(res.headers['x-request-id']).toBe('req_0000000001');
  });

  it('a preflight for DELETE /v1/videos/{id} without a key is 204 and allows DELETE', async () => {
    const res = await request(sim.app)
      .options('/v1/videos/vid_whatever')
      .set('Origin', ORIGIN)
      .set('Access-Control-Request-Method', 'DELETE')
      .set('Access-Control-Request-Headers', 'authorization');
    expect(res.status).toBe(204);
    expect(res.headers['access-control-allow-origin']).toBe('*');
    expect(res.headers['access-control-allow-methods']).toBe(ALLOW_METHODS);
    expect(res.headers['access-control-allow-headers']).toBe(ALLOW_HEADERS);
  });

  it('a preflight is not journaled as an authenticated request and spends no token', async () => {
    await request(sim.app).options('/v1/videos').set('Origin', ORIGIN).set('Access-Control-Request-Method', 'POST').set(bearer());
    const first = await listVideos(sim);
    expect(first.status).toBe(200);
    // The first authenticated request sees the full bucket minus itself.
    expect(rateLimitHeaders(first)).toEqual(fastBucket(1));
    expect(first.headers['x-request-id']).toBe('req_10a88487_000001');
  });

  it('a GET with Origin gets Access-Control-Allow-Origin and exposes X-Request-Id, Retry-After and the X-RateLimit-* headers', async () => {
    const res = await listVideos(sim).set('Origin', ORIGIN);
    expect(res.status).toBe(200);
    expect(res.headers['access-control-allow-origin']).toBe('*');
    expect(res.headers['access-control-expose-headers']).toBe(EXPOSE_HEADERS);
  });

  it('an error response (401) with Origin also carries Access-Control-Allow-Origin', async () => {
    const res = await request(sim.app).get('/v1/videos').set('Origin', ORIGIN);
    expect(res.status).toBe(401);
    expect(res.headers['access-control-allow-origin']).toBe('*');
    expect(res.headers['access-control-expose-headers']).toBe(EXPOSE_HEADERS);
  });
});
