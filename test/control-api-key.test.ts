/**
 * Account-scoped control calls take `api_key` in the query string as well as in the body
 * (README, "Control endpoints"), so that a proxy can route them without reading the body.
 */
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { createMany, createVideo, expectError, generationsOf, makeSim, withFreshSim } from './helpers.js';

const START = '2026-01-01T00:00:00.000Z';

let sim: ReturnType<typeof makeSim>;
withFreshSim((fresh) => (sim = fresh));

const clockOf = async (key?: string) => (await request(sim.app).get('/_sim/clock').query(key ? { api_key: key } : {})).body.now as string;

describe('POST /_sim/clock/advance?api_key=', () => {
  it("moves only that account's clock, as api_key in the body does", async () => {
    await createMany(sim, 1, {}, 'sk_test_alice');
    const res = await request(sim.app).post('/_sim/clock/advance?api_key=sk_test_alice').send({ seconds: 2 });
    expect(res.status).toBe(200);
    expect(res.body.now).toBe('2026-01-01T00:00:02.000Z');
    expect(await clockOf('sk_test_alice')).toBe('2026-01-01T00:00:02.000Z');
    expect(await clockOf()).toBe(START);
  });

  it('accepts the same key in both places', async () => {
    const res = await request(sim.app).post('/_sim/clock/advance?api_key=sk_test_alice').send({ seconds: 1, api_key: 'sk_test_alice' });
    expect(res.status).toBe(200);
    expect(await clockOf('sk_test_alice')).toBe('2026-01-01T00:00:01.000Z');
  });

  it('answers 400 invalid_parameter (param api_key) for two different keys, and moves nothing', async () => {
    await createMany(sim, 1, {}, 'sk_test_alice');
    const res = await request(sim.app).post('/_sim/clock/advance?api_key=sk_test_alice').send({ seconds: 1, api_key: 'sk_test_bob' });
    expectError(res, 400, 'invalid_request_error', 'invalid_parameter', 'api_key');
    expect([await clockOf('sk_test_alice'), await clockOf('sk_test_bob'), await clockOf()]).toEqual([START, START, START]);
  });
});

describe('POST /_sim/reset?api_key=', () => {
  it("drops only that account's state", async () => {
    await createMany(sim, 2, {}, 'sk_test_alice');
    await createMany(sim, 1, {}, 'sk_test_bob');
    const res = await request(sim.app).post('/_sim/reset?api_key=sk_test_alice');
    expect(res.status).toBe(200);
    expect(await generationsOf(sim, 'sk_test_alice')).toEqual([]);
    expect(await generationsOf(sim, 'sk_test_bob')).toHaveLength(1);
  });

  it('refuses a scenario in the body beside an api_key in the query (400, param scenario)', async () => {
    await createMany(sim, 1, {}, 'sk_test_alice');
    const res = await request(sim.app).post('/_sim/reset?api_key=sk_test_alice').send({ scenario: 'default' });
    expectError(res, 400, 'invalid_request_error', 'invalid_parameter', 'scenario');
    expect(await generationsOf(sim, 'sk_test_alice')).toHaveLength(1);
  });

  it('answers 400 invalid_parameter (param api_key) for two different keys, and drops nothing', async () => {
    await createMany(sim, 1, {}, 'sk_test_alice');
    const res = await request(sim.app).post('/_sim/reset?api_key=sk_test_alice').send({ api_key: 'sk_test_bob' });
    expectError(res, 400, 'invalid_request_error', 'invalid_parameter', 'api_key');
    expect(await generationsOf(sim, 'sk_test_alice')).toHaveLength(1);
  });
});

describe('POST /_sim/faults?api_key=', () => {
  it("queues a fault for that account's requests only", async () => {
    const res = await request(sim.app).post('/_sim/faults?api_key=sk_test_alice').send({ path: '/v1/videos', method: 'POST', status: 500 });
    expect(res.status).toBe(200);
    expect((await request(sim.app).get('/_sim/faults')).body.faults).toEqual([
      { path: '/v1/videos', method: 'POST', status: 500, times_left: 1, api_key: 'sk_test_alice' },
    ]);
    expect((await createVideo(sim, {}, 'sk_test_bob')).status).toBe(200);
    expectError(await createVideo(sim, {}, 'sk_test_alice'), 500, 'api_error', 'internal_error');
  });

  it('answers 400 invalid_parameter (param api_key) for two different keys, and queues nothing', async () => {
    const res = await request(sim.app)
      .post('/_sim/faults?api_key=sk_test_alice')
      .send({ path: '/v1/videos', status: 500, api_key: 'sk_test_bob' });
    expectError(res, 400, 'invalid_request_error', 'invalid_parameter', 'api_key');
    expect((await request(sim.app).get('/_sim/faults')).body).toEqual({ queued: 0, faults: [] });
  });
});

describe('a control call never makes an account for a key the scenario refuses', () => {
  it.each(['constructor', '__proto__', 'toString', 'not_a_key', 'sk_test_', 'sk_test_revoked'])(
    'POST /_sim/clock/advance?api_key=%s is 400 invalid_parameter (param api_key), and no account or clock moves',
    async (key) => {
      for (const res of [
        await request(sim.app).post('/_sim/clock/advance').query({ api_key: key }).send({ seconds: 5 }),
        await request(sim.app).post('/_sim/clock/advance').send({ seconds: 5, api_key: key }),
      ]) {
        const error = expectError(res, 400, 'invalid_request_error', 'invalid_parameter', 'api_key');
        expect(error.message).toMatch(new RegExp(`^Scenario 'fast' refuses the API key '${key}' \\((invalid|revoked)_api_key\\), so it has no account whose clock could move`));
      }
      expect((await request(sim.app).get('/_sim/health')).body.limits.accounts).toBe(0);
      expect([await clockOf(key), await clockOf()]).toEqual([START, START]);
    },
  );

  it('a key the scenario accepts gets its account and its own clock, before its first request', async () => {
    expect((await request(sim.app).post('/_sim/clock/advance').query({ api_key: 'sk_test_new' }).send({ seconds: 5 })).status).toBe(200);
    expect((await request(sim.app).get('/_sim/health')).body.limits.accounts).toBe(1);
    expect(await clockOf('sk_test_new')).toBe('2026-01-01T00:00:05.000Z');
  });
});

describe('a control call refuses an api_key longer than a key can be', () => {
  const long = `sk_test_${'k'.repeat(248)}`; // 256 characters

  it.each([
    ['GET', '/_sim/clock'],
    ['GET', '/_sim/generations'],
    ['GET', '/_sim/requests'],
    ['GET', '/_sim/report'],
    ['DELETE', '/_sim/faults'],
    ['POST', '/_sim/clock/advance'],
    ['POST', '/_sim/reset'],
  ])('%s %s?api_key= of 256 characters is 400 invalid_parameter (param api_key), not echoed, and keeps no count for it', async (method, path) => {
    const req = request(sim.app)[method.toLowerCase() as 'get' | 'post' | 'delete'](path).query({ api_key: long });
    const res = method === 'POST' ? await req.send(path.endsWith('advance') ? { seconds: 1 } : {}) : await req;
    const error = expectError(res, 400, 'invalid_request_error', 'invalid_parameter', 'api_key');
    expect(error.message).toBe("Invalid value for 'api_key': must be at most 255 characters long.");
    // Counted globally: a key the call refused gets no count of its own to keep.
    expect(res.headers['x-request-id']).toMatch(/^req_\d{10}$/);
    expect((await request(sim.app).get('/_sim/health')).body.limits.accounts).toBe(0);
  });

  it('a key of 255 characters is one', async () => {
    const res = await request(sim.app).get('/_sim/clock').query({ api_key: long.slice(0, 255) });
    expect(res.status).toBe(200);
    expect(res.headers['x-request-id']).toMatch(/^req_[0-9a-z]+_sim_000001$/);
  });
});
