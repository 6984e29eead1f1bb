/**
 * 404s over HTTP: unknown ids on GET and DELETE /v1/videos/{id} (resource_not_found), unknown routes
 * and methods (unknown_route; paths are exact: letter case and a trailing slash make another route).
 */
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { VALID_VIDEO, bearer, createVideo, expectError, makeSim, withFreshSim } from './helpers.js';

type Sim = ReturnType<typeof makeSim>;

let sim: Sim;
withFreshSim((fresh) => (sim = fresh));

// ---------------------------------------------------------------------------------------------------
describe('/v1/videos/{id} unknown ids', () => {
  const ids = ['foo', 'vid_doesnotexist', `vid_${'a'.repeat(8 * 1024)}`];

  it.each(ids.map((id) => [id.length > 40 ? `an id of ${id.length} characters` : id, id]))(
    'GET /v1/videos/%s is 404 resource_not_found param id',
    async (_label, id) => {
      const res = await request(sim.app).get(`/v1/videos/${id}`).set(bearer());
      expectError(res, 404, 'invalid_request_error', 'resource_not_found', 'id');
    },
  );

  it.each(ids.map((id) => [id.length > 40 ? `an id of ${id.length} characters` : id, id]))(
    'DELETE /v1/videos/%s is 404 resource_not_found param id',
    async (_label, id) => {
      const res = await request(sim.app).delete(`/v1/videos/${id}`).set(bearer());
      expectError(res, 404, 'invalid_request_error', 'resource_not_found', 'id');
    },
  );

  it("another account's generation is 404 resource_not_found on GET and DELETE, and stays untouched", async () => {
    const bobs = await createVideo(sim, {}, 'sk_test_bob');
    const get = await request(sim.app).get(`/v1/videos/${bobs.body.id}`).set(bearer());
    expectError(get, 404, 'invalid_request_error', 'resource_not_found', 'id');
    const del = await request(sim.app).delete(`/v1/videos/${bobs.body.id}`).set(bearer());
    expectError(del, 404, 'invalid_request_error', 'resource_not_found', 'id');
    const still = await request(sim.app).get(`/v1/videos/${bobs.body.id}`).set(bearer('sk_test_bob'));
    expect(still.status).toBe(200);
    expect(still.body.status).toBe('queued');
  });
});

// ---------------------------------------------------------------------------------------------------
describe('unknown routes and methods', () => {
  it.each([
    ['PUT', '/v1/videos'],
    ['PATCH', '/v1/videos/x'],
    ['PUT', '/v1/videos/x'],
    ['POST', '/v1/videos/x'],
    ['DELETE', '/v1/videos'],
    ['GET', '/v1/images'],
    ['DELETE', '/v1/images'],
    ['GET', '/v1/images/img_x'],
    ['GET', '/v1'],
    ['GET', '/v1/'],
    ['GET', '/v2/videos'],
    ['GET', '/v1/videos/'],
    ['POST', '/v1/videos/'],
    ['GET', '/V1/VIDEOS'],
  ])('%s %s with a valid key is 404 unknown_route param null', async (method, path) => {
    const res = await request(sim.app)[method.toLowerCase() as 'get' | 'put' | 'patch' | 'post' | 'delete'](path).set(bearer());
    expectError(res, 404, 'invalid_request_error', 'unknown_route', null);
  });

  it('PUT /v1/videos with a JSON body and a valid key is 404 unknown_route param null', async () => {
    const res = await request(sim.app).put('/v1/videos').set(bearer()).send(VALID_VIDEO);
    expectError(res, 404, 'invalid_request_error', 'unknown_route', null);
  });

  it.each([
    ['malformed JSON', 'application/json', '{'],
    ['a text/plain body', 'text/plain', 'hello'],
  ])('POST /v1/nope with %s and a valid key is 404 unknown_route, not a body error', async (_label, type, body) => {
    const res = await request(sim.app).post('/v1/nope').set(bearer()).set('Content-Type', type).send(body);
    expectError(res, 404, 'invalid_request_error', 'unknown_route', null);
  });

  it.each(['/nope', '/', '/_sim/nope', '/_sim/health/extra', '/videos', '/V1/VIDEOS'])('GET %s without a key is 404 unknown_route param null', async (path) => {
    const res = await request(sim.app).get(path);
    expectError(res, 404, 'invalid_request_error', 'unknown_route', null);
  });

  it('PUT /v1/videos without a key is 401 (authentication before routing)', async () => {
    const res = await request(sim.app).put('/v1/videos');
    expectError(res, 401, 'authentication_error', 'missing_api_key');
  });

  it('POST /_sim/nope is 404 unknown_route', async () => {
    const res = await request(sim.app).post('/_sim/nope').send({});
    expectError(res, 404, 'invalid_request_error', 'unknown_route', null);
  });
});
