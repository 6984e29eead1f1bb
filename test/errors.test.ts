/**
 * Every error the JSON API can answer with, over HTTP: status, type, code, param (and stage), in the
 * order of checks contract.md fixes; plus the headers every response carries (X-Request-Id, CORS,
 * X-RateLimit-*), rate limiting, balance, claim linking and injected faults.
 */
import { request as httpRequest } from 'node:http';
import request from 'supertest';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadScenario, type Scenario } from '../src/index.js';
import { PROMPT, advance, bearer, createVideo, expectError, makeSim } from './helpers.js';

type Sim = ReturnType<typeof makeSim>;

const VALID_VIDEO = { model: 'video-3.2', prompt: PROMPT };
const VALID_IMAGE = { prompt: PROMPT };
const VALID_BODY: Record<string, Record<string, unknown>> = {
  '/v1/videos': VALID_VIDEO,
  '/v1/images': VALID_IMAGE,
};

let sim: Sim;
beforeEach(() => {
  sim = makeSim();
});

/** The X-RateLimit-* headers a response carries (none: `{}`). */
function rateLimitHeaders(res: { headers: Record<string, string | undefined> }): Record<string, string> {
  const found: Record<string, string> = {};
  for (const name of ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset']) {
    const value = res.headers[name];
    if (value !== undefined) found[name] = value;
  }
  return found;
}

/** The X-RateLimit-* headers of `fast` (capacity and refill 10^9) after `spent` requests in one instant. */
function fastBucket(spent: number): Record<string, string> {
  return { 'x-ratelimit-limit': '1000000000', 'x-ratelimit-remaining': String(1_000_000_000 - spent), 'x-ratelimit-reset': '1' };
}

/** POSTs raw bytes with exactly the headers given (no Content-Type unless named), over a real socket. */
async function rawPost(
  target: Sim,
  path: string,
  body: Buffer,
  headers: Record<string, string>,
): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: unknown }> {
  const base = await target.listen(0);
  try {
    return await new Promise((resolve, reject) => {
      const req = httpRequest(
        `${base}${path}`,
        { method: 'POST', headers: { ...headers, 'Content-Length': String(body.length) } },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text ? JSON.parse(text) : undefined });
          });
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  } finally {
    await target.close();
  }
}

function list(target: Sim, key = 'sk_test_alice', query = '') {
  return request(target.app).get(`/v1/videos${query}`).set(bearer(key));
}

function fastWith(overrides: Partial<Scenario>): Scenario {
  return { ...loadScenario('fast'), ...overrides };
}

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
    expect(sim.core.controlGenerations({}).data).toEqual([]);
  });

  it('a valid sk_test_ key is accepted (200)', async () => {
    const res = await list(sim);
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
    const ok = await list(sim);
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
    expect((await list(sim)).headers['x-ratelimit-remaining']).toBe('999999999');
    expect((await list(sim)).headers['x-ratelimit-remaining']).toBe('999999998');
  });
});

// ---------------------------------------------------------------------------------------------------
describe.each(['/v1/videos', '/v1/images'])('POST %s body parsing', (path) => {
  const post = () => request(sim.app).post(path).set(bearer());

  it('malformed JSON is 400 invalid_json param null', async () => {
    const res = await post().set('Content-Type', 'application/json').send('{"model": "video-3.2", ');
    expectError(res, 400, 'invalid_request_error', 'invalid_json', null);
  });

  it('an empty body with Content-Type application/json is 400 invalid_json param null', async () => {
    const res = await rawPost(sim, path, Buffer.alloc(0), { ...bearer(), 'Content-Type': 'application/json' });
    expectError(res, 400, 'invalid_request_error', 'invalid_json', null);
  });

  it.each([
    ['an array', '[]'],
    ['an array of a valid body', JSON.stringify([{ model: 'video-3.2', prompt: PROMPT }])],
    ['a number', '42'],
    ['null', 'null'],
    ['a string', '"hello"'],
    ['true', 'true'],
  ])('a JSON value that is not an object (%s) is 400 invalid_json param null', async (_label, text) => {
    const res = await post().set('Content-Type', 'application/json').send(text);
    expectError(res, 400, 'invalid_request_error', 'invalid_json', null);
  });

  it('invalid UTF-8 bytes are 400 invalid_json param null', async () => {
    const bytes = Buffer.concat([Buffer.from('{"prompt": "'), Buffer.from([0xff, 0xfe, 0xc3]), Buffer.from('"}')]);
    const res = await rawPost(sim, path, bytes, { ...bearer(), 'Content-Type': 'application/json' });
    expectError(res, 400, 'invalid_request_error', 'invalid_json', null);
  });

  it('valid multi-byte UTF-8 in a JSON body is accepted (200) and echoed', async () => {
    const prompt = 'Une ruelle sous la pluie, néons reflétés, 雨の夜 🌧';
    const res = await rawPost(sim, path, Buffer.from(JSON.stringify({ ...VALID_BODY[path], prompt }), 'utf8'), {
      ...bearer(),
      'Content-Type': 'application/json',
    });
    expect(res.status).toBe(200);
    expect((res.body as { prompt: string }).prompt).toBe(prompt);
  });

  it('Content-Type text/plain (with a valid JSON body) is 400 unsupported_content_type param null', async () => {
    const res = await post().set('Content-Type', 'text/plain').send(JSON.stringify(VALID_BODY[path]));
    expectError(res, 400, 'invalid_request_error', 'unsupported_content_type', null);
  });

  it('Content-Type application/x-www-form-urlencoded is 400 unsupported_content_type param null', async () => {
    const res = await post().type('form').send('model=video-3.2&prompt=hello');
    expectError(res, 400, 'invalid_request_error', 'unsupported_content_type', null);
  });

  it('no Content-Type at all (with a valid JSON body) is 400 unsupported_content_type param null', async () => {
    const res = await rawPost(sim, path, Buffer.from(JSON.stringify(VALID_BODY[path])), bearer());
    expectError(res, 400, 'invalid_request_error', 'unsupported_content_type', null);
  });

  it('no Content-Type and no body is 400 unsupported_content_type param null (the content type is judged before the body)', async () => {
    const res = await rawPost(sim, path, Buffer.alloc(0), bearer());
    expectError(res, 400, 'invalid_request_error', 'unsupported_content_type', null);
  });

  it('Content-Type application/json; charset=utf-8 is accepted (200)', async () => {
    const res = await post().set('Content-Type', 'application/json; charset=utf-8').send(JSON.stringify(VALID_BODY[path]));
    expect(res.status).toBe(200);
  });

  it('a body over 1 MiB is 400 request_too_large param null (never 413)', async () => {
    const body = JSON.stringify({ ...VALID_BODY[path], prompt: 'x'.repeat(1024 * 1024 + 1) });
    const res = await post().set('Content-Type', 'application/json').send(body);
    expect(res.status).not.toBe(413);
    expectError(res, 400, 'invalid_request_error', 'request_too_large', null);
  });

  it('a body over 1 MiB with a non-JSON content type is 400 request_too_large (the size is judged first), never 413', async () => {
    const res = await post().set('Content-Type', 'text/plain').send('x'.repeat(2 * 1024 * 1024));
    expectError(res, 400, 'invalid_request_error', 'request_too_large', null);
  });

  it('a body of exactly 1 MiB is not request_too_large', async () => {
    // Pad with white space (valid JSON) up to exactly 1 MiB; the prompt stays valid.
    const text = JSON.stringify(VALID_BODY[path]);
    const padded = text + ' '.repeat(1024 * 1024 - Buffer.byteLength(text));
    expect(Buffer.byteLength(padded)).toBe(1024 * 1024);
    const res = await post().set('Content-Type', 'application/json').send(padded);
    expect(res.status).toBe(200);
  });

  it('a body error stores nothing', async () => {
    await post().set('Content-Type', 'application/json').send('{');
    await post().set('Content-Type', 'text/plain').send('{}');
    expect(sim.core.controlGenerations({}).data).toEqual([]);
    expect(sim.core.account('sk_test_alice').images.size).toBe(0);
  });
});

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
    const res = await list(sim);
    expect(res.body.data).toEqual([]);
  });
});

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

// ---------------------------------------------------------------------------------------------------
describe('GET /v1/videos query', () => {
  it.each(['0', '101', 'abc', '-1', '1.5', '', '1000', 'Infinity', '1e1000', '-Infinity'])('limit=%s is 400 invalid_parameter param limit', async (limit) => {
    const res = await list(sim, 'sk_test_alice', `?limit=${limit}`);
    expectError(res, 400, 'invalid_request_error', 'invalid_parameter', 'limit');
  });

  it.each(['1', '100', '20'])('limit=%s succeeds', async (limit) => {
    const res = await list(sim, 'sk_test_alice', `?limit=${limit}`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ object: 'list', data: [], has_more: false });
  });

  it('limit=1 returns one item and has_more when there are two', async () => {
    await createVideo(sim);
    await createVideo(sim);
    const res = await list(sim, 'sk_test_alice', '?limit=1');
    expect(res.status).toBe(200);
    expect(res.body.data).toHaveLength(1);
    expect(res.body.has_more).toBe(true);
  });

  it.each(['bogus', 'QUEUED', 'cancelled', 'ready'])('status=%s is 400 invalid_parameter param status', async (status) => {
    const res = await list(sim, 'sk_test_alice', `?status=${status}`);
    expectError(res, 400, 'invalid_request_error', 'invalid_parameter', 'status');
  });

  it.each(['queued', 'processing', 'verifying', 'succeeded', 'failed', 'canceled'])('status=%s succeeds', async (status) => {
    const res = await list(sim, 'sk_test_alice', `?status=${status}`);
    expect(res.status).toBe(200);
  });

  it('an unknown query parameter is 400 unknown_parameter with param naming it', async () => {
    const res = await list(sim, 'sk_test_alice', '?foo=1');
    expectError(res, 400, 'invalid_request_error', 'unknown_parameter', 'foo');
  });

  it('an unknown query parameter comes before an invalid limit', async () => {
    const res = await list(sim, 'sk_test_alice', '?limit=0&foo=1');
    expectError(res, 400, 'invalid_request_error', 'unknown_parameter', 'foo');
  });

  it('after=unknown is 400 invalid_parameter param after', async () => {
    const res = await list(sim, 'sk_test_alice', '?after=unknown');
    expectError(res, 400, 'invalid_request_error', 'invalid_parameter', 'after');
  });

  it("after= another account's generation is 400 invalid_parameter param after", async () => {
    const bobs = await createVideo(sim, {}, 'sk_test_bob');
    expect(bobs.status).toBe(200);
    const res = await list(sim, 'sk_test_alice', `?after=${bobs.body.id}`);
    expectError(res, 400, 'invalid_request_error', 'invalid_parameter', 'after');
  });

  it('after= an own generation succeeds', async () => {
    const a = await createVideo(sim);
    const b = await createVideo(sim);
    const res = await list(sim, 'sk_test_alice', `?after=${a.body.id}`);
    expect(res.status).toBe(200);
    expect(res.body.data.map((v: { id: string }) => v.id)).toEqual([b.body.id]);
  });
});

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

// ---------------------------------------------------------------------------------------------------
describe('X-Request-Id', () => {
  it('is present and unique on successes and errors of every kind, inside and outside /v1', async () => {
    const created = await createVideo(sim);
    const responses = [
      ['200 create', created],
      ['200 list', await list(sim)],
      ['200 retrieve', await request(sim.app).get(`/v1/videos/${created.body.id}`).set(bearer())],
      ['200 cancel', await request(sim.app).delete(`/v1/videos/${created.body.id}`).set(bearer())],
      ['200 image', await request(sim.app).post('/v1/images').set(bearer()).send(VALID_IMAGE)],
      ['400 parameter', await createVideo(sim, { bogus: 1 })],
      ['400 json', await request(sim.app).post('/v1/videos').set(bearer()).set('Content-Type', 'application/json').send('{')],
      ['401 missing', await request(sim.app).get('/v1/videos')],
      ['401 invalid', await request(sim.app).get('/v1/videos').set('Authorization', 'Bearer nope')],
      ['404 id', await request(sim.app).get('/v1/videos/foo').set(bearer())],
      ['404 /v1 route', await request(sim.app).get('/v1/nope').set(bearer())],
      ['404 outside /v1', await request(sim.app).get('/nope')],
      ['404 /_sim', await request(sim.app).get('/_sim/nope')],
      ['200 /_sim/health', await request(sim.app).get('/_sim/health')],
      ['400 /_sim', await request(sim.app).post('/_sim/faults').send({ path: '/v1/videos', status: 418 })],
      ['204 preflight', await request(sim.app).options('/v1/videos').set('Origin', 'http://localhost:5173').set('Access-Control-Request-Method', 'POST')],
    ] as const;
    // An authenticated request takes the next id of its account (req_ + a tag of the key + its
    // count); any other request the next id of the simulator.
    const alice = (n: number) => `req_10a88487_${String(n).padStart(6, '0')}`;
    const global = (n: number) => `req_${String(n).padStart(10, '0')}`;
    expect(responses.map(([label, res]) => [label, res.headers['x-request-id']])).toEqual([
      ['200 create', alice(1)],
      ['200 list', alice(2)],
      ['200 retrieve', alice(3)],
      ['200 cancel', alice(4)],
      ['200 image', alice(5)],
      ['400 parameter', alice(6)],
      ['400 json', alice(7)],
      ['401 missing', global(1)],
      ['401 invalid', global(2)],
      ['404 id', alice(8)],
      ['404 /v1 route', alice(9)],
      ['404 outside /v1', global(3)],
      ['404 /_sim', global(4)],
      ['200 /_sim/health', global(5)],
      ['400 /_sim', global(6)],
      ['204 preflight', global(7)],
    ]);
  });

  it('is present on 429, 402, 422 and 500 responses', async () => {
    const poor = makeSim({
      scenario: fastWith({
        accounts: { sk_test_poor: { balance_cents: 50 } },
        rate_limits: { capacity: 1, refill_per_second: 0.001 },
        compliance: {
          ...loadScenario('fast').compliance,
          claim_linking: { rules: [{ pattern: 'forbidden' }], probability: 0 },
        },
      }),
    });
    const r402 = await createVideo(poor, {}, 'sk_test_poor');
    expect(r402.status).toBe(402);
    const r422 = await createVideo(poor, { prompt: 'forbidden things' }, 'sk_test_carol');
    expect(r422.status).toBe(422);
    const r429 = await createVideo(poor, {}, 'sk_test_poor');
    expect(r429.status).toBe(429);
    await request(poor.app).post('/_sim/faults').send({ path: '/v1/videos', status: 500 });
    const r500 = await createVideo(poor, {}, 'sk_test_dave');
    expect(r500.status).toBe(500);
    expect([r402, r422, r429, r500].map((res) => res.headers['x-request-id'])).toEqual([
      'req_3261727d_000001', // sk_test_poor's first request
      'req_f30968b2_000001', // sk_test_carol's
      'req_3261727d_000002', // sk_test_poor's second
      'req_72f254ff_000001', // sk_test_dave's
    ]);
  });
});

// ---------------------------------------------------------------------------------------------------
describe('CORS', () => {
  const ORIGIN = 'http://localhost:5173';

  const ALLOW_METHODS = 'GET,HEAD,POST,DELETE,OPTIONS';
  const ALLOW_HEADERS = 'Authorization,Content-Type,Idempotency-Key,Range,If-None-Match';
  const EXPOSE_HEADERS =
    'X-Request-Id,X-RateLimit-Limit,X-RateLimit-Remaining,X-RateLimit-Reset,Retry-After,Idempotent-Replayed,Content-Range,Content-Length,Accept-Ranges,ETag';

  it('a preflight for POST /v1/videos without a key is 204 and allows authorization, content-type and idempotency-key', async () => {
    const res = await request(sim.app)
      .options('/v1/videos')
      .set('Origin', ORIGIN)
      .set('Access-Control-Request-Method', 'POST')
      .set('Access-Control-Request-Headers', 'authorization,content-type,idempotency-key');
    expect(res.status).toBe(204);
    // Any origin: the simulator takes no cookies, the key travels in the Authorization header.
    expect(res.headers['access-control-allow-origin']).toBe('*');
    expect(res.headers['access-control-allow-methods']).toBe(ALLOW_METHODS);
    expect(res.headers['access-control-allow-headers']).toBe(ALLOW_HEADERS);
    expect(res.headers['access-control-max-age']).toBe('600');
    // The simulator's first request id (no account: a preflight is answered before authentication).
    expect(res.headers['x-request-id']).toBe('req_0000000001');
  });

  it('a preflight for DELETE /v1/videos/{id} without a key is 204 and allows DELETE', async () => {
    const res = await request(sim.app)
      .options('/v1/videos/vid_whatever')
      .set('Origin', ORIGIN)
      .set('Access-Control-Request-Method', 'DELETE')
      .set('Access-Control-Request-Headers', 'authorization');
    expect(res.status).toBe(204);
    expect(res.headers['access-control-allow-origin']).toBe('*');
    expect(res.headers['access-control-allow-methods']).toBe(ALLOW_METHODS);
    expect(res.headers['access-control-allow-headers']).toBe(ALLOW_HEADERS);
  });

  it('a preflight is not journaled as an authenticated request and spends no token', async () => {
    await request(sim.app).options('/v1/videos').set('Origin', ORIGIN).set('Access-Control-Request-Method', 'POST').set(bearer());
    const first = await list(sim);
    expect(first.status).toBe(200);
    // The first authenticated request sees the full bucket minus itself.
    expect(rateLimitHeaders(first)).toEqual(fastBucket(1));
    expect(first.headers['x-request-id']).toBe('req_10a88487_000001');
  });

  it('a GET with Origin gets Access-Control-Allow-Origin and exposes X-Request-Id, Retry-After and the X-RateLimit-* headers', async () => {
    const res = await list(sim).set('Origin', ORIGIN);
    expect(res.status).toBe(200);
    expect(res.headers['access-control-allow-origin']).toBe('*');
    expect(res.headers['access-control-expose-headers']).toBe(EXPOSE_HEADERS);
  });

  it('an error response (401) with Origin also carries Access-Control-Allow-Origin', async () => {
    const res = await request(sim.app).get('/v1/videos').set('Origin', ORIGIN);
    expect(res.status).toBe(401);
    expect(res.headers['access-control-allow-origin']).toBe('*');
    expect(res.headers['access-control-expose-headers']).toBe(EXPOSE_HEADERS);
  });
});

// ---------------------------------------------------------------------------------------------------
describe('rate limiting (429)', () => {
  let limited: Sim;
  beforeEach(() => {
    limited = makeSim({ scenario: fastWith({ rate_limits: { capacity: 2, refill_per_second: 1 } }) });
  });

  it('the third request in the same instant is 429 rate_limit_error/rate_limit_exceeded with Retry-After and Remaining 0', async () => {
    const a = await list(limited);
    const b = await list(limited);
    expect(a.status).toBe(200);
    expect(b.status).toBe(200);
    expect(a.headers['x-ratelimit-limit']).toBe('2');
    expect(a.headers['x-ratelimit-remaining']).toBe('1');
    expect(b.headers['x-ratelimit-remaining']).toBe('0');
    const c = await list(limited);
    expectError(c, 429, 'rate_limit_error', 'rate_limit_exceeded');
    // One token comes back per second; the bucket is full again 2 s after the two were spent.
    expect(c.headers['retry-after']).toBe('1');
    expect(rateLimitHeaders(c)).toEqual({ 'x-ratelimit-limit': '2', 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': '2' });
  });

  it('after advancing the account clock by Retry-After seconds, a request succeeds again', async () => {
    await list(limited);
    await list(limited);
    const refused = await list(limited);
    expect(refused.status).toBe(429);
    expect(refused.headers['retry-after']).toBe('1');
    const adv = await advance(limited, 1, 'sk_test_alice');
    expect(adv.status).toBe(200);
    const again = await list(limited);
    expect(again.status).toBe(200);
  });

  it('a 429 on a create stores nothing', async () => {
    await list(limited);
    await list(limited);
    const res = await createVideo(limited);
    expectError(res, 429, 'rate_limit_error', 'rate_limit_exceeded');
    await advance(limited, 10, 'sk_test_alice');
    const after = await list(limited);
    expect(after.status).toBe(200);
    expect(after.body.data).toEqual([]);
  });

  it('rate limiting comes before parameter checks and body parsing', async () => {
    await list(limited);
    await list(limited);
    expectError(await createVideo(limited, { bogus: 1 }), 429, 'rate_limit_error', 'rate_limit_exceeded');
    const badJson = await request(limited.app).post('/v1/videos').set(bearer()).set('Content-Type', 'application/json').send('{');
    expectError(badJson, 429, 'rate_limit_error', 'rate_limit_exceeded');
    expectError(await request(limited.app).get('/v1/nope').set(bearer()), 429, 'rate_limit_error', 'rate_limit_exceeded');
  });

  it('buckets are per account: another key is not limited', async () => {
    await list(limited);
    await list(limited);
    expect((await list(limited)).status).toBe(429);
    expect((await list(limited, 'sk_test_bob')).status).toBe(200);
  });

  it('401 comes before 429: an empty bucket does not turn a bad key into 429', async () => {
    await list(limited);
    await list(limited);
    expectError(await request(limited.app).get('/v1/videos'), 401, 'authentication_error', 'missing_api_key');
  });

  it('/_sim endpoints are never rate limited', async () => {
    for (let i = 0; i < 5; i++) {
      const res = await request(limited.app).get('/_sim/health');
      expect(res.status).toBe(200);
      expect(rateLimitHeaders(res)).toEqual({});
    }
  });
});

// ---------------------------------------------------------------------------------------------------
describe('insufficient balance (402)', () => {
  let poor: Sim;
  beforeEach(() => {
    poor = makeSim({ scenario: fastWith({ accounts: { sk_test_poor: { balance_cents: 50 } } }) });
  });

  it('a 1080p 8 s video (price 80 plus keyframe) with a balance of 50 is 402 insufficient_balance without param or stage', async () => {
    const res = await createVideo(poor, { resolution: '1080p', duration_seconds: 8 }, 'sk_test_poor');
    const error = expectError(res, 402, 'insufficient_balance', 'insufficient_balance');
    expect(Object.keys(error).sort()).toEqual(['code', 'message', 'type']);
  });

  it('a 402 stores nothing', async () => {
    await createVideo(poor, {}, 'sk_test_poor');
    const res = await list(poor, 'sk_test_poor');
    expect(res.body.data).toEqual([]);
  });

  it('a video the balance covers (720p 4 s = 20 + keyframe) succeeds', async () => {
    const res = await createVideo(poor, { resolution: '720p', duration_seconds: 4 }, 'sk_test_poor');
    expect(res.status).toBe(200);
  });

  it('parameter errors come before the balance check', async () => {
    expectError(await createVideo(poor, { duration_seconds: 3 }, 'sk_test_poor'), 400, 'invalid_request_error', 'invalid_parameter', 'duration_seconds');
    expectError(await createVideo(poor, { model: 'video-9.9' }, 'sk_test_poor'), 400, 'invalid_request_error', 'model_not_found', 'model');
    expectError(await createVideo(poor, { keyframe_id: 'foo' }, 'sk_test_poor'), 400, 'invalid_request_error', 'keyframe_not_found', 'keyframe_id');
  });

  it('other accounts keep an unlimited balance', async () => {
    const res = await createVideo(poor, { duration_seconds: 16 }, 'sk_test_rich');
    expect(res.status).toBe(200);
  });
});

// ---------------------------------------------------------------------------------------------------
describe('claim-linking rejection (422)', () => {
  let strict: Sim;
  const fast = loadScenario('fast');
  const rejecting = (extra: Partial<Scenario> = {}): Scenario =>
    fastWith({
      compliance: { ...fast.compliance, claim_linking: { ...fast.compliance.claim_linking, rules: [{ pattern: 'forbidden' }] } },
      ...extra,
    });
  beforeEach(() => {
    strict = makeSim({ scenario: rejecting() });
  });

  it("a create with 'forbidden' in the prompt is 422 compliance_error/claim_linking_rejected stage claim_linking, no param", async () => {
    const res = await createVideo(strict, { prompt: 'Something forbidden in a neon street.' });
    const error = expectError(res, 422, 'compliance_error', 'claim_linking_rejected');
    expect(error.stage).toBe('claim_linking');
    expect(Object.keys(error).sort()).toEqual(['code', 'message', 'stage', 'type']);
  });

  it('a rejected create stores nothing: the list stays empty', async () => {
    await createVideo(strict, { prompt: 'Something forbidden in a neon street.' });
    const res = await list(strict);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ object: 'list', data: [], has_more: false });
    expect(strict.core.controlGenerations({}).data).toEqual([]);
  });

  it('a prompt without the pattern succeeds', async () => {
    expect((await createVideo(strict)).status).toBe(200);
  });

  it("an image with 'forbidden' in the prompt is 422 claim_linking_rejected too, and stores nothing", async () => {
    const res = await request(strict.app).post('/v1/images').set(bearer()).send({ prompt: 'forbidden still' });
    const error = expectError(res, 422, 'compliance_error', 'claim_linking_rejected');
    expect(error.stage).toBe('claim_linking');
    expect(strict.core.account('sk_test_alice').images.size).toBe(0);
  });

  it('parameter errors come before claim linking', async () => {
    const res = await createVideo(strict, { prompt: 'forbidden', duration_seconds: 3 });
    expectError(res, 400, 'invalid_request_error', 'invalid_parameter', 'duration_seconds');
  });

  it('the balance check (402) comes before claim linking (422)', async () => {
    const both = makeSim({ scenario: rejecting({ accounts: { sk_test_poor: { balance_cents: 50 } } }) });
    const res = await createVideo(both, { prompt: 'forbidden' }, 'sk_test_poor');
    expectError(res, 402, 'insufficient_balance', 'insufficient_balance');
  });
});

// ---------------------------------------------------------------------------------------------------
describe('POST /_sim/faults and injected faults', () => {
  const queueFault = (target: Sim, body: Record<string, unknown>) => request(target.app).post('/_sim/faults').send(body);

  it('a 500 fault on POST /v1/videos makes the next create 500 api_error/internal_error, and the one after succeed', async () => {
    const queued = await queueFault(sim, { path: '/v1/videos', method: 'POST', status: 500 });
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
    const res = await list(sim);
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual([]);
  });

  it('a 429 fault is rate_limit_error/rate_limit_exceeded with Retry-After: 1', async () => {
    await queueFault(sim, { path: '/v1/videos', method: 'GET', status: 429 });
    const res = await list(sim);
    expectError(res, 429, 'rate_limit_error', 'rate_limit_exceeded');
    expect(res.headers['retry-after']).toBe('1');
  });

  it('a fault with method POST does not hit a GET on the same path', async () => {
    await queueFault(sim, { path: '/v1/videos', method: 'POST', status: 500 });
    expect((await list(sim)).status).toBe(200);
    expect((await createVideo(sim)).status).toBe(500);
  });

  it('times: 2 hits the next two matching requests, then stops', async () => {
    const queued = await queueFault(sim, { path: '/v1/videos', method: 'POST', status: 500, times: 2 });
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
    expectError(await list(sim), 500, 'api_error', 'internal_error');
    expectError(await request(sim.app).get('/v1/videos/vid_x').set(bearer()), 500, 'api_error', 'internal_error');
    expectError(await request(sim.app).post('/v1/images').set(bearer()).send(VALID_IMAGE), 500, 'api_error', 'internal_error');
    expect((await list(sim)).status).toBe(200);
  });

  it('an exact path does not match a longer path', async () => {
    await queueFault(sim, { path: '/v1/videos', status: 500 });
    const res = await request(sim.app).get('/v1/videos/vid_x').set(bearer());
    expectError(res, 404, 'invalid_request_error', 'resource_not_found', 'id');
    expectError(await list(sim), 500, 'api_error', 'internal_error');
  });

  it('faults apply after authentication: an unauthenticated request is 401 and does not use the shot', async () => {
    await queueFault(sim, { path: '/v1/videos', status: 500 });
    expectError(await request(sim.app).get('/v1/videos'), 401, 'authentication_error', 'missing_api_key');
    expectError(await list(sim), 500, 'api_error', 'internal_error');
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
    const res = await queueFault(sim, { path: '/v1/videos', status: 418 });
    expectError(res, 400, 'invalid_request_error', 'invalid_parameter', 'status');
  });

  it("a fault body with code 'nope' is 400 invalid_parameter param code", async () => {
    const res = await queueFault(sim, { path: '/v1/videos', status: 500, code: 'nope' });
    expectError(res, 400, 'invalid_request_error', 'invalid_parameter', 'code');
  });

  it('a fault body whose type does not match the status is 400 invalid_parameter param type', async () => {
    const res = await queueFault(sim, { path: '/v1/videos', status: 500, type: 'invalid_request_error' });
    expectError(res, 400, 'invalid_request_error', 'invalid_parameter', 'type');
  });

  it('a fault body whose code does not match the status is 400', async () => {
    const res = await queueFault(sim, { path: '/v1/videos', status: 500, code: 'missing_parameter' });
    expect(res.status).toBe(400);
    expect(res.body.error.type).toBe('invalid_request_error');
    expect(res.body.error.code).toBe('invalid_parameter');
  });

  it('a fault body without path is 400 missing_parameter param path', async () => {
    const res = await queueFault(sim, { status: 500 });
    expectError(res, 400, 'invalid_request_error', 'missing_parameter', 'path');
  });

  it('a fault body with an unknown field is 400 unknown_parameter', async () => {
    const res = await queueFault(sim, { path: '/v1/videos', status: 500, bogus: 1 });
    expectError(res, 400, 'invalid_request_error', 'unknown_parameter', 'bogus');
  });

  it('a rejected fault body queues nothing', async () => {
    await queueFault(sim, { path: '/v1/videos', status: 418 });
    await queueFault(sim, { path: '/v1/videos', status: 500, code: 'nope' });
    await queueFault(sim, { path: '/v1/videos', status: 500, type: 'invalid_request_error' });
    expect((await list(sim)).status).toBe(200);
    expect((await createVideo(sim)).status).toBe(200);
  });
});

afterEach(() => {
  // Every sim here is in-process (supertest) or closed by rawPost; nothing to tear down.
  expect(sim.logs.filter((l) => l.startsWith('internal error'))).toEqual([]);
});
