import request from 'supertest';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { SimError } from '../src/core/errors.js';
import { takeResponseFailures } from './crossCheck.js';
import { createVideo, expectError, getVideo, makeSim } from './helpers.js';

describe('response validation against openapi.yaml', () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it('a planted response that breaks the contract becomes a logged 500 api_error and is counted', async () => {
    const sim = makeSim();
    const created = await createVideo(sim);
    expect(created.status).toBe(200);
    expect(sim.app.responseFailures).toEqual([]);

    // Plant a bug: a status the contract does not allow.
    const generation = sim.core.findGeneration(created.body.id);
    if (!generation) throw new Error('generation not stored');
    generation.status = 'exploded' as never;

    const res = await getVideo(sim, created.body.id);
    expectError(res, 500, 'api_error', 'internal_error');
    const failures = takeResponseFailures(sim);
    expect(failures).toHaveLength(1);
    expect(failures[0]).toMatchObject({ method: 'GET', path: `/v1/videos/${created.body.id}`, status: 200 });
    expect(sim.logs.join('\n')).toMatch(/response validation failed: GET \/v1\/videos\/vid_\w+ \(status 200\)/);
  });

  it.each([
    ['a 401 of the authentication check', (sim: ReturnType<typeof makeSim>) => request(sim.app).get('/v1/videos'), 401, 'GET /v1/videos'],
    [
      'a 400 for a body that is not JSON',
      (sim: ReturnType<typeof makeSim>) =>
        request(sim.app).post('/v1/videos').set('Authorization', 'Bearer sk_test_a').set('Content-Type', 'application/json').send('{'),
      400,
      'POST /v1/videos',
    ],
    [
      'a 400 for a control request whose body is not JSON',
      (sim: ReturnType<typeof makeSim>) => request(sim.app).post('/_sim/clock/advance').set('Content-Type', 'application/json').send('{'),
      400,
      'POST /_sim/clock/advance',
    ],
  ] as const)('%s, answered before the parameters are validated, is validated against openapi.yaml too', async (_name, send, status, route) => {
    const sim = makeSim();
    // Plant a bug in the error shape: a field the contract does not have.
    const toBody = SimError.prototype.toBody;
    vi.spyOn(SimError.prototype, 'toBody').mockImplementation(function (this: SimError) {
      const body = toBody.call(this);
      return { error: { ...body.error, planted: true } } as never;
    });
    const res = await send(sim);
    expect(res.status).toBe(500);
    expect(res.body.error).toMatchObject({ type: 'api_error', code: 'internal_error' });
    const failures = takeResponseFailures(sim);
    expect(failures).toHaveLength(1);
    const [method, path] = route.split(' ');
    expect(failures[0]).toMatchObject({ method, path, status });
  });

  it('a valid response passes without being counted', async () => {
    const sim = makeSim();
    const res = await request(sim.app).get('/_sim/health');
    expect(res.status).toBe(200);
    expect(sim.app.responseFailures).toEqual([]);
  });
});
