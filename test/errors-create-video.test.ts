/**
 * POST /v1/videos parameters, over HTTP: unknown, missing and invalid fields in the order of checks,
 * the bounds of each field, null as leaving a field out, model_not_found and keyframe_not_found.
 */
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { PROMPT, VALID_IMAGE, bearer, createVideo, expectError, listVideos, makeSim, withFreshSim } from './helpers.js';

type Sim = ReturnType<typeof makeSim>;

let sim: Sim;
withFreshSim((fresh) => (sim = fresh));

// ---------------------------------------------------------------------------------------------------
describe('POST /v1/videos parameters', () => {
  it('an unknown field is 400 unknown_parameter with param naming it', async () => {
    const res = await createVideo(sim, { bogus: 1 });
    expectError(res, 400, 'invalid_request_error', 'unknown_parameter', 'bogus');
  });

  it('an unknown field that looks like an image field (aspect_ratio) is unknown_parameter', async () => {
    const res = await createVideo(sim, { aspect_ratio: '16:9' });
    expectError(res, 400, 'invalid_request_error', 'unknown_parameter', 'aspect_ratio');
  });

  it('unknown_parameter comes before missing_parameter', async () => {
    const res = await request(sim.app).post('/v1/videos').set(bearer()).send({ bogus: 1 });
    expectError(res, 400, 'invalid_request_error', 'unknown_parameter', 'bogus');
  });

  it('unknown_parameter comes before invalid_parameter', async () => {
    const res = await createVideo(sim, { bogus: 1, duration_seconds: 99, prompt: 5 });
    expectError(res, 400, 'invalid_request_error', 'unknown_parameter', 'bogus');
  });

  it('missing_parameter comes before invalid_parameter', async () => {
    const res = await request(sim.app)
      .post('/v1/videos')
      .set(bearer())
      .send({ model: 42, duration_seconds: 3, resolution: '480p' });
    expectError(res, 400, 'invalid_request_error', 'missing_parameter', 'prompt');
  });

  it('an empty object is 400 missing_parameter param model (model before prompt)', async () => {
    const res = await request(sim.app).post('/v1/videos').set(bearer()).send({});
    expectError(res, 400, 'invalid_request_error', 'missing_parameter', 'model');
  });

  it('without model is 400 missing_parameter param model', async () => {
    const res = await request(sim.app).post('/v1/videos').set(bearer()).send({ prompt: PROMPT });
    expectError(res, 400, 'invalid_request_error', 'missing_parameter', 'model');
  });

  it('without prompt is 400 missing_parameter param prompt', async () => {
    const res = await request(sim.app).post('/v1/videos').set(bearer()).send({ model: 'video-3.2' });
    expectError(res, 400, 'invalid_request_error', 'missing_parameter', 'prompt');
  });

  it('with only optional fields, the first missing field reported is model', async () => {
    const res = await request(sim.app).post('/v1/videos').set(bearer()).send({ duration_seconds: 8, resolution: '720p' });
    expectError(res, 400, 'invalid_request_error', 'missing_parameter', 'model');
  });

  it.each<[string, unknown]>([
    ['model', 123],
    ['model', true],
    ['model', ['video-3.2']],
    ['model', { name: 'video-3.2' }],
    ['prompt', 42],
    ['prompt', false],
    ['prompt', ['a prompt']],
    ['prompt', { text: PROMPT }],
    ['negative_prompt', 5],
    ['negative_prompt', ['blur']],
    ['negative_prompt', true],
    ['duration_seconds', '8'],
    ['duration_seconds', true],
    ['duration_seconds', [8]],
    ['duration_seconds', 8.5],
    ['resolution', 1080],
    ['resolution', true],
    ['resolution', ['1080p']],
    ['keyframe_id', 123],
    ['keyframe_id', { id: 'img_x' }],
    ['keyframe_id', false],
  ])('%s of the wrong type (%j) is 400 invalid_parameter with param the field name', async (field, value) => {
    const res = await createVideo(sim, { [field]: value });
    expectError(res, 400, 'invalid_request_error', 'invalid_parameter', field);
  });

  it('when several fields are invalid, param is the first in the interface document\'s order', async () => {
    const res = await createVideo(sim, { resolution: '480p', duration_seconds: 3, prompt: '   ' });
    expectError(res, 400, 'invalid_request_error', 'invalid_parameter', 'prompt');
  });

  it.each([3, 17, 8.5, 0, -8, 4.5])('duration_seconds %j is 400 invalid_parameter param duration_seconds', async (d) => {
    const res = await createVideo(sim, { duration_seconds: d });
    expectError(res, 400, 'invalid_request_error', 'invalid_parameter', 'duration_seconds');
  });

  it.each([4, 16])('duration_seconds %j succeeds and is echoed', async (d) => {
    const res = await createVideo(sim, { duration_seconds: d });
    expect(res.status).toBe(200);
    expect(res.body.duration_seconds).toBe(d);
  });

  it.each(['480p', '4k', '1080P', '720', ''])('resolution %j is 400 invalid_parameter param resolution', async (r) => {
    const res = await createVideo(sim, { resolution: r });
    expectError(res, 400, 'invalid_request_error', 'invalid_parameter', 'resolution');
  });

  it.each(['720p', '1080p'])('resolution %j succeeds and is echoed', async (r) => {
    const res = await createVideo(sim, { resolution: r });
    expect(res.status).toBe(200);
    expect(res.body.resolution).toBe(r);
  });

  it.each([
    ['empty', ''],
    ['spaces only', '   '],
    ['white space of several kinds', ' \t\n\r '],
  ])('a prompt that is %s is 400 invalid_parameter param prompt', async (_label, prompt) => {
    const res = await createVideo(sim, { prompt });
    expectError(res, 400, 'invalid_request_error', 'invalid_parameter', 'prompt');
  });

  it('a prompt of 4000 characters succeeds', async () => {
    const prompt = 'a'.repeat(4000);
    const res = await createVideo(sim, { prompt });
    expect(res.status).toBe(200);
    expect(res.body.prompt).toBe(prompt);
  });

  it('a prompt of 4001 characters is 400 invalid_parameter param prompt', async () => {
    const res = await createVideo(sim, { prompt: 'a'.repeat(4001) });
    expectError(res, 400, 'invalid_request_error', 'invalid_parameter', 'prompt');
  });

  it('a one-character prompt succeeds (25-500 is only recommended)', async () => {
    const res = await createVideo(sim, { prompt: 'x' });
    expect(res.status).toBe(200);
  });

  it('null for every optional field means leaving it out: 200 with the defaults', async () => {
    const res = await createVideo(sim, {
      negative_prompt: null,
      duration_seconds: null,
      resolution: null,
      keyframe_id: null,
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      status: 'queued',
      duration_seconds: 8,
      resolution: '1080p',
      negative_prompt: null,
    });
  });

  it.each(['negative_prompt', 'duration_seconds', 'resolution', 'keyframe_id'])(
    'null for %s alone succeeds like leaving it out',
    async (field) => {
      const withNull = await createVideo(sim, { [field]: null });
      expect(withNull.status).toBe(200);
      expect(withNull.body).toMatchObject({ duration_seconds: 8, resolution: '1080p', negative_prompt: null });
    },
  );

  it('null for a required field means leaving it out: model: null is 400 missing_parameter param model', async () => {
    const res = await createVideo(sim, { model: null });
    expectError(res, 400, 'invalid_request_error', 'missing_parameter', 'model');
  });

  it('an unknown model is 400 model_not_found param model', async () => {
    const res = await createVideo(sim, { model: 'video-9.9' });
    expectError(res, 400, 'invalid_request_error', 'model_not_found', 'model');
  });

  it('the keyframe model is not a video model: 400 model_not_found', async () => {
    const res = await createVideo(sim, { model: 'video-3.2-keyframe' });
    expectError(res, 400, 'invalid_request_error', 'model_not_found', 'model');
  });

  it.each(['video-3.0', 'video-3.1', 'video-3.2'])('model %s succeeds', async (model) => {
    const res = await createVideo(sim, { model });
    expect(res.status).toBe(200);
    expect(res.body.model).toBe(model);
  });

  it('invalid_parameter comes before model_not_found', async () => {
    const res = await createVideo(sim, { model: 'video-9.9', duration_seconds: 3 });
    expectError(res, 400, 'invalid_request_error', 'invalid_parameter', 'duration_seconds');
  });

  it('keyframe_id foo is 400 keyframe_not_found param keyframe_id (looked up, not pattern-checked)', async () => {
    const res = await createVideo(sim, { keyframe_id: 'foo' });
    expectError(res, 400, 'invalid_request_error', 'keyframe_not_found', 'keyframe_id');
  });

  it('a well-formed but unknown keyframe_id is 400 keyframe_not_found', async () => {
    const res = await createVideo(sim, { keyframe_id: 'img_doesnotexist0000000000' });
    expectError(res, 400, 'invalid_request_error', 'keyframe_not_found', 'keyframe_id');
  });

  it("another account's image as keyframe_id is 400 keyframe_not_found", async () => {
    const image = await request(sim.app).post('/v1/images').set(bearer('sk_test_bob')).send(VALID_IMAGE);
    expect(image.status).toBe(200);
    const res = await createVideo(sim, { keyframe_id: image.body.id });
    expectError(res, 400, 'invalid_request_error', 'keyframe_not_found', 'keyframe_id');
  });

  it('model_not_found comes before keyframe_not_found', async () => {
    const res = await createVideo(sim, { model: 'video-9.9', keyframe_id: 'foo' });
    expectError(res, 400, 'invalid_request_error', 'model_not_found', 'model');
  });

  it('a parameter error stores nothing', async () => {
    await createVideo(sim, { bogus: 1 });
    await createVideo(sim, { duration_seconds: 3 });
    await createVideo(sim, { model: 'video-9.9' });
    await createVideo(sim, { keyframe_id: 'foo' });
    const res = await listVideos(sim);
    expect(res.body.data).toEqual([]);
  });
});
