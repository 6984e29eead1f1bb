import request from 'supertest';
import { afterEach, describe, expect, it } from 'vitest';
import { responseValidation } from '../src/http/errors.js';
import { createVideo, expectError, getVideo, makeSim } from './helpers.js';

describe('response validation against openapi.yaml', () => {
  afterEach(() => responseValidation.reset());

  it('a planted response that breaks the contract becomes a logged 500 api_error and is counted', async () => {
    const sim = makeSim();
    const created = await createVideo(sim);
    expect(created.status).toBe(200);
    expect(responseValidation.failures).toBe(0);

    // Plant a bug: a status the contract does not allow.
    const generation = sim.core.findGeneration(created.body.id);
    if (!generation) throw new Error('generation not stored');
    generation.status = 'exploded' as never;

    const res = await getVideo(sim, created.body.id);
    expectError(res, 500, 'api_error', 'internal_error');
    expect(responseValidation.failures).toBe(1);
    expect(responseValidation.last[0]).toMatchObject({ method: 'GET', path: `/v1/videos/${created.body.id}` });
    expect(sim.logs.join('\n')).toMatch(/response validation failed: GET \/v1\/videos\/vid_\w+ \(status 200\)/);
  });

  it('a valid response passes without being counted', async () => {
    const sim = makeSim();
    const res = await request(sim.app).get('/_sim/health');
    expect(res.status).toBe(200);
    expect(responseValidation.failures).toBe(0);
  });
});
