/**
 * Authentication on /v1, over HTTP: missing, malformed, invalid and revoked keys, and that it comes
 * before everything else in the order of checks (routes, bodies, parameters, ids); the X-RateLimit-*
 * headers that authenticated answers carry and 401s do not.
 */
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { controlGenerations } from '../src/core/generations/generationControl.js';
import { VALID_VIDEO, bearer, createVideo, expectError, fastBucket, listVideos, makeSim, rateLimitHeaders, withFreshSim } from './helpers.js';

type Sim = ReturnType<typeof makeSim>;

let sim: Sim;
withFreshSim((fresh) => (sim = fresh));

// ---------------------------------------------------------------------------------------------------
describe('authentication on /v1', () => {
  it('a request without an Authorization header is 401 authentication_error missing_api_key', async () => {
    const res = await request(sim.app).get('/v1/videos');
    expectError(res, 401, 'authentication_error', 'missing_api_key');
  });

  it('an empty Authorization header is 401 missing_api_key', async () => {
    const res = await request(sim.app).get('/v1/videos').set('Authorization', '');
    expectError(res, 401, 'authentication_error', 'missing_api_key');
  });

  it('Bearer with a token not starting with sk_test_ is 401 invalid_api_key', async () => {
    const res = await request(sim.app).get('/v1/videos').set('Authorization', 'Bearer nope');
    expectError(res, 401, 'authentication_error', 'invalid_api_key');
  });

  it.each([
    ['Basic x', 'Basic x'],
    ['Bearer alone', 'Bearer'],
    ['a key without a scheme', 'sk_test_x'],
    ['the bare prefix sk_test_', 'Bearer sk_test_'],
    ['Basic with an sk_test_ key', 'Basic sk_test_alice'],
  ])('a malformed Authorization header (%s) is 401 invalid_api_key', async (_label, header) => {
    const res = await request(sim.app).get('/v1/videos').set('Authorization', header);
    expectError(res, 401, 'authentication_error', 'invalid_api_key');
  });

  it('Bearer sk_test_revoked is 401 revoked_api_key', async () => {
    const res = await request(sim.app).get('/v1/videos').set(bearer('sk_test_revoked'));
    expectError(res, 401, 'authentication_error', 'revoked_api_key');
  });

  it('a revoked key is refused on a create too, and nothing is created', async () => {
    const res = await createVideo(sim, {}, 'sk_test_revoked');
    expectError(res, 401, 'authentication_error', 'revoked_api_key');
    expect(controlGenerations(sim.core, {}).data).toEqual([]);
  });

  it('a valid sk_test_ key is accepted (200)', async () => {
    const res = await listVideos(sim);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ object: 'list', data: [], has_more: false });
  });

  it('401 bodies carry exactly type, code and message: no param, no stage', async () => {
    for (const header of [undefined, 'Bearer nope', 'Bearer sk_test_revoked']) {
      const req = request(sim.app).post('/v1/videos').send(VALID_VIDEO);
      const res = await (header === undefined ? req : req.set('Authorization', header));
      expect(res.status).toBe(401);
      expect(Object.keys(res.body as object)).toEqual(['error']);
      expect(Object.keys((res.body as { error: object }).error).sort()).toEqual(['code', 'message', 'type']);
    }
  });

  it('GET /v1/nope without a key is 401 missing_api_key (auth comes before routing)', async () => {
    const res = await request(sim.app).get('/v1/nope');
    expectError(res, 401, 'authentication_error', 'missing_api_key');
  });

  it('GET /v1/nope with a bad key is 401 invalid_api_key', async () => {
    const res = await request(sim.app).get('/v1/nope').set('Authorization', 'Bearer nope');
    expectError(res, 401, 'authentication_error', 'invalid_api_key');
  });

  it('GET /v1/nope with a valid key is 404 unknown_route param null', async () => {
    const res = await request(sim.app).get('/v1/nope').set(bearer());
    expectError(res, 404, 'invalid_request_error', 'unknown_route', null);
  });

  it('a malformed JSON body without a key is 401 missing_api_key, not invalid_json', async () => {
    const res = await request(sim.app).post('/v1/videos').set('Content-Type', 'application/json').send('{"model":');
    expectError(res, 401, 'authentication_error', 'missing_api_key');
  });

  it('a malformed JSON body with a bad key is 401 invalid_api_key', async () => {
    const res = await request(sim.app)
      .post('/v1/videos')
      .set('Authorization', 'Bearer nope')
      .set('Content-Type', 'application/json')
      .send('{"model":');
    expectError(res, 401, 'authentication_error', 'invalid_api_key');
  });

  it('a text/plain body without a key is 401, not unsupported_content_type', async () => {
    const res = await request(sim.app).post('/v1/images').set('Content-Type', 'text/plain').send('hello');
    expectError(res, 401, 'authentication_error', 'missing_api_key');
  });

  it('a body over 1 MiB without a key is 401, not request_too_large', async () => {
    const res = await request(sim.app)
      .post('/v1/videos')
      .set('Content-Type', 'application/json')
      .send(JSON.stringify({ model: 'video-3.2', prompt: 'x'.repeat(1024 * 1024 + 10) }));
    expectError(res, 401, 'authentication_error', 'missing_api_key');
  });

  it('an unknown parameter without a key is 401, not unknown_parameter', async () => {
    const res = await request(sim.app).post('/v1/videos').send({ ...VALID_VIDEO, bogus: 1 });
    expectError(res, 401, 'authentication_error', 'missing_api_key');
  });

  it('a request for an unknown id without a key is 401, not 404', async () => {
    const res = await request(sim.app).get('/v1/videos/vid_doesnotexist');
    expectError(res, 401, 'authentication_error', 'missing_api_key');
    const del = await request(sim.app).delete('/v1/videos/vid_doesnotexist');
    expectError(del, 401, 'authentication_error', 'missing_api_key');
  });

  it('401 responses carry no X-RateLimit-* headers', async () => {
    expect(rateLimitHeaders(await request(sim.app).get('/v1/videos'))).toEqual({});
    expect(rateLimitHeaders(await request(sim.app).get('/v1/videos').set('Authorization', 'Bearer nope'))).toEqual({});
    expect(rateLimitHeaders(await request(sim.app).get('/v1/videos').set(bearer('sk_test_revoked')))).toEqual({});
    expect(rateLimitHeaders(await request(sim.app).get('/v1/nope'))).toEqual({});
  });

  it('authenticated /v1 responses carry X-RateLimit-* headers on 200, 400 and 404 alike', async () => {
    const ok = await listVideos(sim);
    expect(ok.status).toBe(200);
    expect(rateLimitHeaders(ok)).toEqual(fastBucket(1));
    const created = await createVideo(sim);
    expect(created.status).toBe(200);
    expect(rateLimitHeaders(created)).toEqual(fastBucket(2));
    const bad = await createVideo(sim, { bogus: true });
    expect(bad.status).toBe(400);
    expect(rateLimitHeaders(bad)).toEqual(fastBucket(3));
    const badJson = await request(sim.app).post('/v1/videos').set(bearer()).set('Content-Type', 'application/json').send('{');
    expect(badJson.status).toBe(400);
    expect(rateLimitHeaders(badJson)).toEqual(fastBucket(4));
    const missing = await request(sim.app).get('/v1/videos/vid_doesnotexist').set(bearer());
    expect(missing.status).toBe(404);
    expect(rateLimitHeaders(missing)).toEqual(fastBucket(5));
    const route = await request(sim.app).get('/v1/nope').set(bearer());
    expect(route.status).toBe(404);
    expect(rateLimitHeaders(route)).toEqual(fastBucket(6));
  });

  it('X-RateLimit-Remaining goes down by one per authenticated request', async () => {
    expect((await listVideos(sim)).headers['x-ratelimit-remaining']).toBe('999999999');
    expect((await listVideos(sim)).headers['x-ratelimit-remaining']).toBe('999999998');
  });
});
