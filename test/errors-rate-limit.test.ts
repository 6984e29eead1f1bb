/**
 * Rate limiting over HTTP: 429 rate_limit_exceeded with Retry-After and the X-RateLimit-* headers,
 * recovery on the account's clock, its place in the order of checks, per-account buckets.
 */
import request from 'supertest';
import { beforeEach, describe, expect, it } from 'vitest';
import { advance, bearer, createVideo, expectError, fastWith, listVideos, makeSim, rateLimitHeaders } from './helpers.js';

type Sim = ReturnType<typeof makeSim>;

// ---------------------------------------------------------------------------------------------------
describe('rate limiting (429)', () => {
  let limited: Sim;
  beforeEach(() => {
    limited = makeSim({ scenario: fastWith({ rate_limits: { capacity: 2, refill_per_second: 1 } }) });
  });

  it('the third request in the same instant is 429 rate_limit_error/rate_limit_exceeded with Retry-After and Remaining 0', async () => {
    const a = await listVideos(limited);
    const b = await listVideos(limited);
    expect(a.status).toBe(200);
    expect(b.status).toBe(200);
    expect(a.headers['x-ratelimit-limit']).toBe('2');
    expect(a.headers['x-ratelimit-remaining']).toBe('1');
    expect(b.headers['x-ratelimit-remaining']).toBe('0');
    const c = await listVideos(limited);
    expectError(c, 429, 'rate_limit_error', 'rate_limit_exceeded');
    // One token comes back per second; the bucket is full again 2 s after the two were spent.
    expect(c.headers['retry-after']).toBe('1');
    expect(rateLimitHeaders(c)).toEqual({ 'x-ratelimit-limit': '2', 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': '2' });
  });

  it('after advancing the account clock by Retry-After seconds, a request succeeds again', async () => {
    await listVideos(limited);
    await listVideos(limited);
    const refused = await listVideos(limited);
    expect(refused.status).toBe(429);
    expect(refused.headers['retry-after']).toBe('1');
    const adv = await advance(limited, 1, 'sk_test_alice');
    expect(adv.status).toBe(200);
    const again = await listVideos(limited);
    expect(again.status).toBe(200);
  });

  it('a 429 on a create stores nothing', async () => {
    await listVideos(limited);
    await listVideos(limited);
    const res = await createVideo(limited);
    expectError(res, 429, 'rate_limit_error', 'rate_limit_exceeded');
    await advance(limited, 10, 'sk_test_alice');
    const after = await listVideos(limited);
    expect(after.status).toBe(200);
    expect(after.body.data).toEqual([]);
  });

  it('rate limiting comes before parameter checks and body parsing', async () => {
    await listVideos(limited);
    await listVideos(limited);
    expectError(await createVideo(limited, { bogus: 1 }), 429, 'rate_limit_error', 'rate_limit_exceeded');
    const badJson = await request(limited.app).post('/v1/videos').set(bearer()).set('Content-Type', 'application/json').send('{');
    expectError(badJson, 429, 'rate_limit_error', 'rate_limit_exceeded');
    expectError(await request(limited.app).get('/v1/nope').set(bearer()), 429, 'rate_limit_error', 'rate_limit_exceeded');
  });

  it('buckets are per account: another key is not limited', async () => {
    await listVideos(limited);
    await listVideos(limited);
    expect((await listVideos(limited)).status).toBe(429);
    expect((await listVideos(limited, 'sk_test_bob')).status).toBe(200);
  });

  it('401 comes before 429: an empty bucket does not turn a bad key into 429', async () => {
    await listVideos(limited);
    await listVideos(limited);
    expectError(await request(limited.app).get('/v1/videos'), 401, 'authentication_error', 'missing_api_key');
  });

  it('/_sim endpoints are never rate limited', async () => {
    for (let i = 0; i < 5; i++) {
      const res = await request(limited.app).get('/_sim/health');
      expect(res.status).toBe(200);
      expect(rateLimitHeaders(res)).toEqual({});
    }
  });
});
