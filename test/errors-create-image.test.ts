/**
 * POST /v1/images parameters, over HTTP: unknown, missing and invalid fields, prompt bounds, null.
 */
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { PROMPT, bearer, expectError, makeSim, withFreshSim } from './helpers.js';

type Sim = ReturnType<typeof makeSim>;

let sim: Sim;
withFreshSim((fresh) => (sim = fresh));

// ---------------------------------------------------------------------------------------------------
describe('POST /v1/images parameters', () => {
  const postImage = (body: Record<string, unknown>) => request(sim.app).post('/v1/images').set(bearer()).send(body);

  it('without prompt is 400 missing_parameter param prompt', async () => {
    const res = await postImage({ aspect_ratio: '16:9' });
    expectError(res, 400, 'invalid_request_error', 'missing_parameter', 'prompt');
  });

  it('an empty object is 400 missing_parameter param prompt', async () => {
    const res = await postImage({});
    expectError(res, 400, 'invalid_request_error', 'missing_parameter', 'prompt');
  });

  it.each(['4:3', '16:10', '', '16x9'])('aspect_ratio %j is 400 invalid_parameter param aspect_ratio', async (ratio) => {
    const res = await postImage({ prompt: PROMPT, aspect_ratio: ratio });
    expectError(res, 400, 'invalid_request_error', 'invalid_parameter', 'aspect_ratio');
  });

  it.each<[string, unknown]>([
    ['prompt', 42],
    ['prompt', ['x']],
    ['aspect_ratio', 1.78],
    ['aspect_ratio', true],
  ])('%s of the wrong type (%j) is 400 invalid_parameter with param the field name', async (field, value) => {
    const res = await postImage({ prompt: PROMPT, [field]: value });
    expectError(res, 400, 'invalid_request_error', 'invalid_parameter', field);
  });

  it('an unknown field is 400 unknown_parameter with param naming it', async () => {
    const res = await postImage({ prompt: PROMPT, model: 'video-3.2-keyframe' });
    expectError(res, 400, 'invalid_request_error', 'unknown_parameter', 'model');
  });

  it('unknown_parameter comes before missing_parameter', async () => {
    const res = await postImage({ size: 'large' });
    expectError(res, 400, 'invalid_request_error', 'unknown_parameter', 'size');
  });

  it.each(['', '   '])('a prompt %j is 400 invalid_parameter param prompt', async (prompt) => {
    const res = await postImage({ prompt });
    expectError(res, 400, 'invalid_request_error', 'invalid_parameter', 'prompt');
  });

  it('a prompt of 4000 characters succeeds; 4001 is 400 invalid_parameter param prompt', async () => {
    expect((await postImage({ prompt: 'b'.repeat(4000) })).status).toBe(200);
    const res = await postImage({ prompt: 'b'.repeat(4001) });
    expectError(res, 400, 'invalid_request_error', 'invalid_parameter', 'prompt');
  });

  it('aspect_ratio null means the default and succeeds', async () => {
    const res = await postImage({ prompt: PROMPT, aspect_ratio: null });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ object: 'image', status: 'ready' });
  });
});
