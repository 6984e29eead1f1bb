/**
 * POST /_sim/faults over HTTP: queued faults on /v1 requests (status, code, times, method, api_key,
 * path prefixes) in the section-7 error shape, and the fault bodies it refuses.
 */
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { VALID_IMAGE, bearer, createVideo, expectError, listVideos, makeSim, postFault, queueFault, withFreshSim } from './helpers.js';

type Sim = ReturnType<typeof makeSim>;

let sim: Sim;
withFreshSim((fresh) => (sim = fresh));

// ---------------------------------------------------------------------------------------------------
describe('POST /_sim/faults and injected faults', () => {
  it('a 500 fault on POST /v1/videos makes the next create 500 api_error/internal_error, and the one after succeed', async () => {
    const queued = await postFault(sim, { path: '/v1/videos', method: 'POST', status: 500 });
    expect(queued.status).toBe(200);
    expect(queued.body).toEqual({ queued: 1 });
    const first = await createVideo(sim);
    const error = expectError(first, 500, 'api_error', 'internal_error');
    expect(Object.keys(error).sort()).toEqual(['code', 'message', 'type']);
    const second = await createVideo(sim);
    expect(second.status).toBe(200);
  });

  it('a faulted create stores nothing', async () => {
    await queueFault(sim, { path: '/v1/videos', method: 'POST', status: 500 });
    expect((await createVideo(sim)).status).toBe(500);
    const res = await listVideos(sim);
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual([]);
  });

  it('a 429 fault is rate_limit_error/rate_limit_exceeded with Retry-After: 1', async () => {
    await queueFault(sim, { path: '/v1/videos', method: 'GET', status: 429 });
    const res = await listVideos(sim);
    expectError(res, 429, 'rate_limit_error', 'rate_limit_exceeded');
    expect(res.headers['retry-after']).toBe('1');
  });

  it('a fault with method POST does not hit a GET on the same path', async () => {
    await queueFault(sim, { path: '/v1/videos', method: 'POST', status: 500 });
    expect((await listVideos(sim)).status).toBe(200);
    expect((await createVideo(sim)).status).toBe(500);
  });

  it('times: 2 hits the next two matching requests, then stops', async () => {
    const queued = await postFault(sim, { path: '/v1/videos', method: 'POST', status: 500, times: 2 });
    expect(queued.body).toEqual({ queued: 2 });
    expect((await createVideo(sim)).status).toBe(500);
    expect((await createVideo(sim)).status).toBe(500);
    expect((await createVideo(sim)).status).toBe(200);
  });

  it('a fault with api_key hits only that account', async () => {
    await queueFault(sim, { path: '/v1/videos', method: 'POST', status: 500, api_key: 'sk_test_bob' });
    expect((await createVideo(sim, {}, 'sk_test_alice')).status).toBe(200);
    expectError(await createVideo(sim, {}, 'sk_test_bob'), 500, 'api_error', 'internal_error');
    expect((await createVideo(sim, {}, 'sk_test_bob')).status).toBe(200);
  });

  it("path '/v1/*' matches every /v1 path as a prefix", async () => {
    await queueFault(sim, { path: '/v1/*', status: 500, times: 3 });
    expectError(await listVideos(sim), 500, 'api_error', 'internal_error');
    expectError(await request(sim.app).get('/v1/videos/vid_x').set(bearer()), 500, 'api_error', 'internal_error');
    expectError(await request(sim.app).post('/v1/images').set(bearer()).send(VALID_IMAGE), 500, 'api_error', 'internal_error');
    expect((await listVideos(sim)).status).toBe(200);
  });

  it('an exact path does not match a longer path', async () => {
    await queueFault(sim, { path: '/v1/videos', status: 500 });
    const res = await request(sim.app).get('/v1/videos/vid_x').set(bearer());
    expectError(res, 404, 'invalid_request_error', 'resource_not_found', 'id');
    expectError(await listVideos(sim), 500, 'api_error', 'internal_error');
  });

  it('faults apply after authentication: an unauthenticated request is 401 and does not use the shot', async () => {
    await queueFault(sim, { path: '/v1/videos', status: 500 });
    expectError(await request(sim.app).get('/v1/videos'), 401, 'authentication_error', 'missing_api_key');
    expectError(await listVideos(sim), 500, 'api_error', 'internal_error');
  });

  it.each<[number, string, string]>([
    [400, 'invalid_request_error', 'invalid_parameter'],
    [401, 'authentication_error', 'invalid_api_key'],
    [402, 'insufficient_balance', 'insufficient_balance'],
    [404, 'invalid_request_error', 'resource_not_found'],
    [422, 'compliance_error', 'claim_linking_rejected'],
    [429, 'rate_limit_error', 'rate_limit_exceeded'],
    [500, 'api_error', 'internal_error'],
  ])('a %i fault without type or code answers %s/%s in the section-7 shape', async (status, type, code) => {
    // POST /v1/videos documents every status of section 7.2 (a GET documents neither 402 nor 422).
    await queueFault(sim, { path: '/v1/videos', method: 'POST', status });
    const res = await createVideo(sim);
    expectError(res, status, type, code);
  });

  it('a fault with an explicit code answers that code', async () => {
    await queueFault(sim, { path: '/v1/videos', method: 'POST', status: 500, code: 'upstream_timeout' });
    expectError(await createVideo(sim), 500, 'api_error', 'upstream_timeout');
  });

  it('a fault body with status 418 is 400 invalid_parameter param status', async () => {
    const res = await postFault(sim, { path: '/v1/videos', status: 418 });
    expectError(res, 400, 'invalid_request_error', 'invalid_parameter', 'status');
  });

  it("a fault body with code 'nope' is 400 invalid_parameter param code", async () => {
    const res = await postFault(sim, { path: '/v1/videos', status: 500, code: 'nope' });
    expectError(res, 400, 'invalid_request_error', 'invalid_parameter', 'code');
  });

  it('a fault body whose type does not match the status is 400 invalid_parameter param type', async () => {
    const res = await postFault(sim, { path: '/v1/videos', status: 500, type: 'invalid_request_error' });
    expectError(res, 400, 'invalid_request_error', 'invalid_parameter', 'type');
  });

  it('a fault body whose code does not match the status is 400', async () => {
    const res = await postFault(sim, { path: '/v1/videos', status: 500, code: 'missing_parameter' });
    expect(res.status).toBe(400);
    expect(res.body.error.type).toBe('invalid_request_error');
    expect(res.body.error.code).toBe('invalid_parameter');
  });

  it('a fault body without path is 400 missing_parameter param path', async () => {
    const res = await postFault(sim, { status: 500 });
    expectError(res, 400, 'invalid_request_error', 'missing_parameter', 'path');
  });

  it('a fault body with an unknown field is 400 unknown_parameter', async () => {
    const res = await postFault(sim, { path: '/v1/videos', status: 500, bogus: 1 });
    expectError(res, 400, 'invalid_request_error', 'unknown_parameter', 'bogus');
  });

  it('a path that matches no route is quoted back at most 100 characters long, as every client value is', async () => {
    const path = `/v1/${'x'.repeat(190)}`;
    const res = await postFault(sim, { path, status: 500 });
    const error = expectError(res, 400, 'invalid_request_error', 'invalid_parameter', 'path');
    const quoted = /^'([^']*)'/.exec(error.message as string)?.[1] as string;
    expect(quoted).toBe(`${path.slice(0, 100)}…`);
  });

  it('a rejected fault body queues nothing', async () => {
    await postFault(sim, { path: '/v1/videos', status: 418 });
    await postFault(sim, { path: '/v1/videos', status: 500, code: 'nope' });
    await postFault(sim, { path: '/v1/videos', status: 500, type: 'invalid_request_error' });
    expect((await listVideos(sim)).status).toBe(200);
    expect((await createVideo(sim)).status).toBe(200);
  });
});
