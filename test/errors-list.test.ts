/**
 * GET /v1/videos query parameters, over HTTP: limit, status, after, unknown parameters.
 */
import { describe, expect, it } from 'vitest';
import { createVideo, expectError, listVideos, makeSim, withFreshSim } from './helpers.js';

type Sim = ReturnType<typeof makeSim>;

let sim: Sim;
withFreshSim((fresh) => (sim = fresh));

// ---------------------------------------------------------------------------------------------------
describe('GET /v1/videos query', () => {
  it.each(['0', '101', 'abc', '-1', '1.5', '', '1000', 'Infinity', '1e1000', '-Infinity'])('limit=%s is 400 invalid_parameter param limit', async (limit) => {
    const res = await listVideos(sim, 'sk_test_alice', `?limit=${limit}`);
    expectError(res, 400, 'invalid_request_error', 'invalid_parameter', 'limit');
  });

  it.each(['1', '100', '20'])('limit=%s succeeds', async (limit) => {
    const res = await listVideos(sim, 'sk_test_alice', `?limit=${limit}`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ object: 'list', data: [], has_more: false });
  });

  it('limit=1 returns one item and has_more when there are two', async () => {
    await createVideo(sim);
    await createVideo(sim);
    const res = await listVideos(sim, 'sk_test_alice', '?limit=1');
    expect(res.status).toBe(200);
    expect(res.body.data).toHaveLength(1);
    expect(res.body.has_more).toBe(true);
  });

  it.each(['bogus', 'QUEUED', 'cancelled', 'ready'])('status=%s is 400 invalid_parameter param status', async (status) => {
    const res = await listVideos(sim, 'sk_test_alice', `?status=${status}`);
    expectError(res, 400, 'invalid_request_error', 'invalid_parameter', 'status');
  });

  it.each(['queued', 'processing', 'verifying', 'succeeded', 'failed', 'canceled'])('status=%s succeeds', async (status) => {
    const res = await listVideos(sim, 'sk_test_alice', `?status=${status}`);
    expect(res.status).toBe(200);
  });

  it('an unknown query parameter is 400 unknown_parameter with param naming it', async () => {
    const res = await listVideos(sim, 'sk_test_alice', '?foo=1');
    expectError(res, 400, 'invalid_request_error', 'unknown_parameter', 'foo');
  });

  it('an unknown query parameter comes before an invalid limit', async () => {
    const res = await listVideos(sim, 'sk_test_alice', '?limit=0&foo=1');
    expectError(res, 400, 'invalid_request_error', 'unknown_parameter', 'foo');
  });

  it('after=unknown is 400 invalid_parameter param after', async () => {
    const res = await listVideos(sim, 'sk_test_alice', '?after=unknown');
    expectError(res, 400, 'invalid_request_error', 'invalid_parameter', 'after');
  });

  it("after= another account's generation is 400 invalid_parameter param after", async () => {
    const bobs = await createVideo(sim, {}, 'sk_test_bob');
    expect(bobs.status).toBe(200);
    const res = await listVideos(sim, 'sk_test_alice', `?after=${bobs.body.id}`);
    expectError(res, 400, 'invalid_request_error', 'invalid_parameter', 'after');
  });

  it('after= an own generation succeeds', async () => {
    const a = await createVideo(sim);
    const b = await createVideo(sim);
    const res = await listVideos(sim, 'sk_test_alice', `?after=${a.body.id}`);
    expect(res.status).toBe(200);
    expect(res.body.data.map((v: { id: string }) => v.id)).toEqual([b.body.id]);
  });
});
