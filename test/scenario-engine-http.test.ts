/**
 * The scenario engine, key by key: every key of a scenario does something a client can observe over
 * HTTP, on the manual clock. Each test builds a scenario object from `fast`, changes one key (or a
 * few that belong together), runs a simulator on it and measures the effect through /v1 and /_sim,
 * never by sampling the distribution functions directly.
 *
 * Here: http.faults (injected errors by method, path and probability) and rate_limits (buckets,
 * groups, Retry-After, recovery on the account clock).
 */
import request from 'supertest';
import { beforeAll, describe, expect, it } from 'vitest';
import { PROMPT, advanceOk, bearer, createVideo, expectError, expectShare, fastWith, generationsOf, getVideo, journalOf, makeSim, share } from './helpers.js';

type Sim = ReturnType<typeof makeSim>;

// ---------------------------------------------------------------------------------------------

describe('http.faults', () => {
  let sim: Sim;
  beforeAll(() => {
    sim = makeSim({
      scenario: fastWith((s) => {
        s.name = 'faulty';
        s.rate_limits = { capacity: 1000, refill_per_second: 0.001 };
        s.http.faults = [
          { method: 'POST', path: '/v1/videos', status: 500, probability: 1 },
          { method: 'GET', path: '/v1/videos/*', status: 429, probability: 1 },
          { method: 'DELETE', path: '/v1/videos/*', status: 500, probability: 0.5 },
        ];
      }),
    });
  });

  it('a rule with method and path: only matching requests get the 500; a faulted create stores nothing and spends no token', async () => {
    const key = 'sk_test_faults1';
    const before = await request(sim.app).get('/v1/videos').set(bearer(key));
    expect(before.status).toBe(200);
    expect(before.headers['x-ratelimit-remaining']).toBe('999');
    for (let i = 0; i < 3; i++) {
      const err = expectError(await createVideo(sim, {}, key), 500, 'api_error', 'internal_error');
      expect(err.message).toContain("injected by scenario 'faulty'");
    }
    const after = await request(sim.app).get('/v1/videos').set(bearer(key));
    expect(after.status).toBe(200);
    expect(after.body.data).toEqual([]);
    expect(after.headers['x-ratelimit-remaining']).toBe('998'); // the three faulted creates spent nothing
    expect(await generationsOf(sim, key)).toEqual([]);
    // Another path is not matched.
    expect((await request(sim.app).post('/v1/images').set(bearer(key)).send({ prompt: PROMPT })).status).toBe(200);
    const faulted = (await journalOf(sim, key)).filter((e) => e.status === 500);
    expect(faulted).toHaveLength(3);
    for (const e of faulted) expect(e).toMatchObject({ method: 'POST', path: '/v1/videos', account: key });
  });

  it('a 429 rule with a path prefix: rate_limit_error with Retry-After, before the route runs; the bare path is not matched', async () => {
    const key = 'sk_test_faults2';
    const res = await getVideo(sim, 'vid_doesnotexist', key);
    expectError(res, 429, 'rate_limit_error', 'rate_limit_exceeded');
    expect(res.headers['retry-after']).toBe('1');
    expect(res.body.error.message).toContain("'faulty'");
    expect((await request(sim.app).get('/v1/videos').set(bearer(key))).status).toBe(200);
  });

  it('probability 0.5: about half of the matching requests fail', async () => {
    const key = 'sk_test_faults3';
    let faults = 0;
    for (let i = 0; i < 200; i++) {
      const res = await request(sim.app).delete('/v1/videos/vid_doesnotexist').set(bearer(key));
      if (res.status === 500) faults++;
      else expectError(res, 404, 'invalid_request_error', 'resource_not_found');
    }
    expectShare('500 share', share(faults, 200), 0.5, 0.1);
    expect(faults).toBe(105);
  });
});

describe('rate_limits', () => {
  it('groups: creates spend from their own bucket, with its own headers; other requests from the main one', async () => {
    const sim = makeSim({
      scenario: fastWith((s) => {
        s.rate_limits = {
          capacity: 100,
          refill_per_second: 1,
          groups: [{ name: 'creates', method: 'POST', path: '/v1/*', capacity: 2, refill_per_second: 0.5 }],
        };
      }),
    });
    const key = 'sk_test_groups';
    const first = await createVideo(sim, {}, key);
    expect(first.headers['x-ratelimit-limit']).toBe('2');
    expect(first.headers['x-ratelimit-remaining']).toBe('1');
    expect((await createVideo(sim, {}, key)).status).toBe(200);
    const refused = await createVideo(sim, {}, key);
    expectError(refused, 429, 'rate_limit_error', 'rate_limit_exceeded');
    expect(refused.headers['retry-after']).toBe('2');
    // Images are POSTs under /v1/* too: the same group.
    expect((await request(sim.app).post('/v1/images').set(bearer(key)).send({ prompt: PROMPT })).status).toBe(429);
    // Polls spend from the main bucket, untouched by the creates.
    const poll = await getVideo(sim, first.body.id as string, key);
    expect(poll.status).toBe(200);
    expect(poll.headers['x-ratelimit-limit']).toBe('100');
    expect(poll.headers['x-ratelimit-remaining']).toBe('99');
    await advanceOk(sim, 2, key);
    expect((await createVideo(sim, {}, key)).status).toBe(200);
  });

  it('capacity 3, refill 0.5/s: headers on every response, 429 with Retry-After, recovery after advancing Retry-After on the account clock', async () => {
    const sim = makeSim({ scenario: fastWith((s) => (s.rate_limits = { capacity: 3, refill_per_second: 0.5 })) });
    const key = 'sk_test_bucket';
    const get = () => request(sim.app).get('/v1/videos').set(bearer(key));
    for (const remaining of ['2', '1', '0']) {
      const res = await get();
      expect(res.status).toBe(200);
      expect(res.headers['x-ratelimit-limit']).toBe('3');
      expect(res.headers['x-ratelimit-remaining']).toBe(remaining);
      expect(Number(res.headers['x-ratelimit-reset'])).toBe((3 - Number(remaining)) * 2);
    }
    const limited = await get();
    expectError(limited, 429, 'rate_limit_error', 'rate_limit_exceeded');
    expect(limited.headers['retry-after']).toBe('2');
    expect(limited.headers['x-ratelimit-limit']).toBe('3');
    expect(limited.headers['x-ratelimit-remaining']).toBe('0');
    expect(limited.headers['x-ratelimit-reset']).toBe('6');
    // Another account has its own bucket.
    expect((await request(sim.app).get('/v1/videos').set(bearer('sk_test_other'))).status).toBe(200);
    // Half of Retry-After is not enough ...
    await advanceOk(sim, 1, key);
    const early = await get();
    expect(early.status).toBe(429);
    expect(early.headers['retry-after']).toBe('1');
    // ... the rest of it is.
    await advanceOk(sim, 1, key);
    const recovered = await get();
    expect(recovered.status).toBe(200);
    expect(recovered.headers['x-ratelimit-remaining']).toBe('0');
    expect((await get()).status).toBe(429);
    // A full refill after capacity / refill seconds.
    await advanceOk(sim, 6, key);
    for (let i = 0; i < 3; i++) expect((await get()).status).toBe(200);
    expect((await get()).status).toBe(429);
  });
});
