/**
 * What clients send cannot grow the simulator's memory without bound (docs/limits.md): the fault
 * queue is capped and adding to it costs the same at any length, a fault's strings have a maximum
 * length, and no answer echoes a client's value of unbounded size. (The store's and the
 * idempotency keys' bounds have their own files: limits.test.ts, idempotency.test.ts; resident
 * memory of the real process is measured by `npm run soak:bounds`.)
 */
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { FaultQueue } from '../src/core/faults/faults.js';
import { bearer, expectError, fastWith, makeSim, postFault, queueFault } from './helpers.js';

/** A value far longer than anything an answer may echo. */
const HUGE = 'x'.repeat(900 * 1024);

describe('limits.max_queued_faults', () => {
  const withCap = (max_queued_faults: number) => makeSim({ scenario: fastWith((s) => (s.limits = { ...s.limits, max_queued_faults })) });
  const fault = { path: '/v1/videos', method: 'POST', status: 500 };

  it('refuses a fault past the cap with 400 invalid_request naming the limit, counting faults rather than their shots', async () => {
    const sim = withCap(3);
    for (let i = 0; i < 3; i++) await queueFault(sim, { ...fault, times: 10 });
    const refused = await postFault(sim, fault);
    const error = expectError(refused, 400, 'invalid_request_error', 'invalid_request', null);
    expect(error.message).toBe(
      "The fault queue is full: it holds 3 faults, the scenario's limits.max_queued_faults. Clear it (DELETE /_sim/faults), let requests take the faults, or raise the limit.",
    );
    expect((await request(sim.app).get('/_sim/faults')).body.queued).toBe(30);
  });

  it('takes a fault again once one has left the queue', async () => {
    const sim = withCap(1);
    await queueFault(sim, fault);
    expect((await postFault(sim, fault)).status).toBe(400);
    expect((await request(sim.app).post('/v1/videos').set(bearer()).send({ model: 'video-3.2', prompt: 'a boat' })).status).toBe(500);
    expect((await postFault(sim, fault)).body).toEqual({ queued: 1 });
  });

  it('is 10,000 by default', async () => {
    const sim = makeSim({ scenario: 'default' });
    expect((await request(sim.app).get('/_sim/scenario')).body.limits.max_queued_faults).toBe(10_000);
  });

  it('adds a fault without reading the faults already queued (the same cost at any queue length)', () => {
    const queue = new FaultQueue(20_000);
    for (let i = 0; i < 10_000; i++) queue.add({ path: '/v1/videos', status: 500, times: 2 });
    // Count every read of a queued fault while one more is added: the queue's order of them, and
    // the bucket (path, method, account, status) that files them.
    let reads = 0;
    const counted = <T extends object>(list: T): T =>
      new Proxy(list, {
        get(target, property, receiver) {
          if (typeof property === 'string' && /^\d+$/.test(property)) reads++;
          return Reflect.get(target, property, receiver) as unknown;
        },
      });
    const order = (queue as unknown as { order: { items: object[] } }).order;
    order.items = counted(order.items);
    const bucket = (queue as unknown as { exact: Map<string, Map<null, Map<null, Map<number, { entries: object[] }>>>> }).exact.get('/v1/videos')?.get(null)?.get(null)?.get(500);
    expect(bucket?.entries).toHaveLength(10_000);
    bucket!.entries = counted(bucket!.entries);
    expect(queue.add({ path: '/v1/videos', status: 500, times: 3 })).toBe(20_003);
    expect(reads).toBe(0);
    expect(queue.waiting()).toBe(20_003);
  });
});

describe("a fault's strings", () => {
  it('refuses a message over 1,000 characters (400 invalid_parameter, param message)', async () => {
    const sim = makeSim();
    const res = await postFault(sim, { path: '/v1/videos', status: 500, message: 'm'.repeat(1001) });
    expect(expectError(res, 400, 'invalid_request_error', 'invalid_parameter', 'message').message).toBe("Invalid value for 'message': must be at most 1000 characters long.");
    await queueFault(sim, { path: '/v1/videos', status: 500, message: 'm'.repeat(1000) });
  });

  it.each([
    ['path', { path: `/v1/videos/${'v'.repeat(190)}` }],
    ['api_key', { api_key: `sk_test_${'k'.repeat(1000)}` }],
    ['outcome/flags/0/message', { status: null, outcome: { flags: [{ code: 'c', severity: 'info', message: 'm'.repeat(201) }] } }],
    ['outcome/flags', { status: null, outcome: { flags: Array.from({ length: 4 }, () => ({ code: 'c', severity: 'info', message: 'm' })) } }],
  ])('refuses a %s past its maximum length', async (param, fields) => {
    const sim = makeSim();
    const res = await postFault(sim, { path: '/v1/videos', status: 500, ...fields });
    expectError(res, 400, 'invalid_request_error', 'invalid_parameter', param);
  });
});

describe('no answer echoes an unbounded client value', () => {
  /** The message names at most the first 100 characters of the value, then an ellipsis. */
  const namesAtMost100 = (text: string) => {
    expect(text.length).toBeLessThan(400);
    expect(text).toContain(`${'x'.repeat(100)}…`);
    expect(text).not.toContain('x'.repeat(101));
  };

  it('an unknown code of POST /_sim/generations/{id}/fail', async () => {
    const sim = makeSim();
    const created = await request(sim.app).post('/v1/videos').set(bearer()).send({ model: 'video-3.2', prompt: 'a boat' });
    // Out of the queue, into a stage that can fail.
    expect((await request(sim.app).post(`/_sim/generations/${created.body.id}/advance`).send({})).status).toBe(200);
    const res = await request(sim.app).post(`/_sim/generations/${created.body.id}/fail`).send({ code: HUGE });
    namesAtMost100(expectError(res, 400, 'invalid_request_error', 'invalid_parameter', 'code').message as string);
  });

  it('an unknown model, an unknown keyframe and a body field of unknown name', async () => {
    const sim = makeSim();
    const create = (body: Record<string, unknown>) => request(sim.app).post('/v1/videos').set(bearer()).send({ model: 'video-3.2', prompt: 'a boat', ...body });
    namesAtMost100(expectError(await create({ model: HUGE }), 400, 'invalid_request_error', 'model_not_found', 'model').message as string);
    namesAtMost100(expectError(await create({ keyframe_id: HUGE }), 400, 'invalid_request_error', 'keyframe_not_found', 'keyframe_id').message as string);
    const unknown = expectError(await create({ [HUGE]: 1 }), 400, 'invalid_request_error', 'unknown_parameter');
    namesAtMost100(unknown.message as string);
    expect(unknown.param).toBe(`${'x'.repeat(100)}…`);
  });

  it('never cuts a character written as two UTF-16 units in half', async () => {
    const sim = makeSim();
    const model = `${'x'.repeat(99)}${'\u{1F600}'.repeat(10)}`;
    const res = await request(sim.app).post('/v1/videos').set(bearer()).send({ model, prompt: 'a boat' });
    expect(expectError(res, 400, 'invalid_request_error', 'model_not_found', 'model').message).toContain(`'${'x'.repeat(99)}…'`);
  });
});

describe('API keys are at most 255 characters long', () => {
  const keyOf = (length: number) => `sk_test_${'k'.repeat(length - 'sk_test_'.length)}`;

  it('a /v1 request with a longer key is 401 invalid_api_key, and makes no account', async () => {
    const sim = makeSim();
    expect((await request(sim.app).get('/v1/videos').set(bearer(keyOf(255)))).status).toBe(200);
    const refused = await request(sim.app).get('/v1/videos').set(bearer(keyOf(256)));
    expect(expectError(refused, 401, 'authentication_error', 'invalid_api_key').message).toBe(
      'Invalid API key: a key is at most 255 characters long; this one has 256.',
    );
    expect((await request(sim.app).get('/_sim/health')).body.limits.accounts).toBe(1);
  });

  it('a control call naming a longer key is 400, and makes no account', async () => {
    const sim = makeSim();
    expectError(await request(sim.app).post('/_sim/clock/advance').send({ seconds: 1, api_key: keyOf(256) }), 400, 'invalid_request_error', 'invalid_parameter', 'api_key');
    expectError(await request(sim.app).post('/_sim/clock/advance').query({ api_key: keyOf(256) }).send({ seconds: 1 }), 400, 'invalid_request_error', 'invalid_parameter', 'api_key');
    expect((await request(sim.app).get('/_sim/health')).body.limits.accounts).toBe(0);
  });
});
