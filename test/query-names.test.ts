/**
 * Query parameter names that are also names of Object.prototype's members (`__proto__`,
 * `constructor`): each is a parameter like any other, on every surface: unknown where the
 * endpoint does not take it (400 unknown_parameter naming it), given twice refused.
 */
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { VALID_IMAGE, VALID_VIDEO, bearer, createVideo, expectError, makeSim, withFreshSim } from './helpers.js';

type Sim = ReturnType<typeof makeSim>;

let sim: Sim;
withFreshSim((fresh) => (sim = fresh));

describe('a query parameter named __proto__', () => {
  it.each([
    ['GET', '/v1/videos'],
    ['POST', '/v1/videos'],
    ['GET', '/v1/videos/vid_unknown'],
    ['DELETE', '/v1/videos/vid_unknown'],
    ['POST', '/v1/images'],
    ['GET', '/_sim/generations'],
    ['GET', '/_sim/clock'],
    ['DELETE', '/_sim/faults'],
  ])('%s %s?__proto__=1 is 400 unknown_parameter naming it', async (method, path) => {
    const base = request(sim.app)[method === 'GET' ? 'get' : method === 'POST' ? 'post' : 'delete'](`${path}?__proto__=1`);
    const req = path.startsWith('/v1') ? base.set(bearer()) : base;
    const res = method === 'POST' ? await req.send(path === '/v1/images' ? VALID_IMAGE : VALID_VIDEO) : await req;
    expectError(res, 400, 'invalid_request_error', 'unknown_parameter', '__proto__');
  });

  it('given twice is refused too (the unknown parameter is reported first)', async () => {
    const res = await request(sim.app).get('/v1/videos?__proto__=a&__proto__=b').set(bearer());
    expectError(res, 400, 'invalid_request_error', 'unknown_parameter', '__proto__');
  });

  it('is reported before a known parameter given twice, as any unknown parameter is', async () => {
    await createVideo(sim);
    const res = await request(sim.app).get('/v1/videos?limit=1&__proto__=x&limit=2').set(bearer());
    expect(res.status).toBe(400);
    expect(res.body.error.param).toBe('__proto__');
  });

  it('constructor and toString are unknown parameters as well', async () => {
    for (const name of ['constructor', 'toString', 'hasOwnProperty']) {
      expectError(await request(sim.app).get(`/v1/videos?${name}=1`).set(bearer()), 400, 'invalid_request_error', 'unknown_parameter', name);
    }
  });
});
