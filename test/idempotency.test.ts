/**
 * Idempotency-Key on POST /v1/videos and POST /v1/images (interface document 7.3; openapi.yaml
 * Idempotency-Key): replays, what counts as the same request, conflicts, scope, failures that store
 * nothing, concurrent duplicates and retention.
 */
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readdressed } from '../src/core/requests/idempotency.js';
import { PROMPT, advance, bearer, createVideo, expectError, fastWith, makeSim, postFault, queueFault } from './helpers.js';

type Sim = ReturnType<typeof makeSim>;

function createWithKey(sim: Sim, key: string, body: Record<string, unknown> = {}, apiKey = 'sk_test_alice') {
  return createVideo(sim, body, apiKey).set('Idempotency-Key', key);
}

/** POST /v1/videos with a raw JSON text (to control key order and white space). */
function createRaw(sim: Sim, key: string, text: string, apiKey = 'sk_test_alice') {
  return request(sim.app)
    .post('/v1/videos')
    .set(bearer(apiKey))
    .set('Idempotency-Key', key)
    .set('Content-Type', 'application/json')
    .send(text);
}

async function listIds(sim: Sim, apiKey = 'sk_test_alice'): Promise<string[]> {
  const res = await request(sim.app).get('/v1/videos').query({ limit: 100 }).set(bearer(apiKey));
  expect(res.status).toBe(200);
  return res.body.data.map((v: { id: string }) => v.id);
}

describe('POST /v1/videos with Idempotency-Key: replays', () => {
  it('the same key and body replays the same 200 body with Idempotent-Replayed: true and creates no duplicate', async () => {
    const sim = makeSim();
    const first = await createWithKey(sim, 'key-1');
    expect(first.status).toBe(200);
    expect(first.headers['idempotent-replayed']).toBeUndefined();

    const second = await createWithKey(sim, 'key-1');
    expect(second.status).toBe(200);
    expect(second.headers['idempotent-replayed']).toBe('true');
    expect(second.text).toBe(first.text);
    expect(await listIds(sim)).toEqual([first.body.id]);
  });

  it('a replay returns the original body even after the generation has progressed', async () => {
    const sim = makeSim();
    const first = await createWithKey(sim, 'key-progress', { duration_seconds: 4 });
    sim.clock.advance(2);
    const midway = await createWithKey(sim, 'key-progress', { duration_seconds: 4 });
    sim.clock.advance(30);
    const current = await request(sim.app).get(`/v1/videos/${first.body.id}`).set(bearer());
    expect(current.body.status).toBe('succeeded');

    const late = await createWithKey(sim, 'key-progress', { duration_seconds: 4 });
    for (const replay of [midway, late]) {
      expect(replay.status).toBe(200);
      expect(replay.headers['idempotent-replayed']).toBe('true');
      expect(replay.text).toBe(first.text);
      expect(replay.body.status).toBe('queued');
    }
    expect(await listIds(sim)).toHaveLength(1);
  });

  it('key order and white space in the body do not matter', async () => {
    const sim = makeSim();
    const a = await createRaw(sim, 'key-order', `{"model":"video-3.2","prompt":${JSON.stringify(PROMPT)},"duration_seconds":6,"resolution":"720p"}`);
    expect(a.status).toBe(200);
    const b = await createRaw(
      sim,
      'key-order',
      `{\n  "resolution" : "720p",\n\t"duration_seconds": 6 ,  "prompt": ${JSON.stringify(PROMPT)},\n  "model":   "video-3.2"\n}\n`,
    );
    expect(b.status).toBe(200);
    expect(b.headers['idempotent-replayed']).toBe('true');
    expect(b.text).toBe(a.text);
    expect(await listIds(sim)).toHaveLength(1);
  });

  it('a null optional field is the same request as leaving it out (both ways round)', async () => {
    const sim = makeSim();
    const absent = await createRaw(sim, 'key-null', `{"model":"video-3.2","prompt":${JSON.stringify(PROMPT)}}`);
    const withNull = await createRaw(
      sim,
      'key-null',
      `{"negative_prompt":null,"model":"video-3.2","keyframe_id":null,"prompt":${JSON.stringify(PROMPT)},"resolution":null,"duration_seconds":null}`,
    );
    expect(withNull.status).toBe(200);
    expect(withNull.headers['idempotent-replayed']).toBe('true');
    expect(withNull.text).toBe(absent.text);

    const firstNull = await createRaw(sim, 'key-null-2', `{"model":"video-3.2","prompt":${JSON.stringify(PROMPT)},"negative_prompt":null}`);
    expect(firstNull.status).toBe(200);
    const thenAbsent = await createRaw(sim, 'key-null-2', `{"prompt":${JSON.stringify(PROMPT)},"model":"video-3.2"}`);
    expect(thenAbsent.headers['idempotent-replayed']).toBe('true');
    expect(thenAbsent.text).toBe(firstNull.text);
    expect(await listIds(sim)).toHaveLength(2);
  });

  it('an explicit default value is a different request from leaving the field out', async () => {
    // "The same request" is the same JSON value after dropping null optional fields; 8 is not null.
    const sim = makeSim();
    expect((await createWithKey(sim, 'key-default')).status).toBe(200);
    const res = await createWithKey(sim, 'key-default', { duration_seconds: 8 });
    expectError(res, 400, 'invalid_request_error', 'idempotency_key_reused', 'Idempotency-Key');
  });
});

describe('POST /v1/videos with Idempotency-Key: conflicts and scope', () => {
  it('the same key with a different body is 400 idempotency_key_reused, param Idempotency-Key, and creates nothing', async () => {
    const sim = makeSim();
    const first = await createWithKey(sim, 'key-conflict');
    const res = await createWithKey(sim, 'key-conflict', { prompt: `${PROMPT} At dawn instead.` });
    expectError(res, 400, 'invalid_request_error', 'idempotency_key_reused', 'Idempotency-Key');
    expect(res.headers['idempotent-replayed']).toBeUndefined();
    expect(await listIds(sim)).toEqual([first.body.id]);
    // The original is still replayable afterwards.
    const again = await createWithKey(sim, 'key-conflict');
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.text).toBe(first.text);
  });

  it('keys are scoped per account: another account with the same key creates its own generation', async () => {
    const sim = makeSim();
    const alice = await createWithKey(sim, 'shared-key', {}, 'sk_test_alice');
    const bob = await createWithKey(sim, 'shared-key', {}, 'sk_test_bob');
    expect(bob.status).toBe(200);
    expect(bob.headers['idempotent-replayed']).toBeUndefined();
    expect(bob.body.id).not.toBe(alice.body.id);
    expect(await listIds(sim, 'sk_test_alice')).toEqual([alice.body.id]);
    expect(await listIds(sim, 'sk_test_bob')).toEqual([bob.body.id]);
    // A different body from bob under the same key is no conflict with alice's.
    const carol = await createWithKey(sim, 'shared-key', { resolution: '720p' }, 'sk_test_carol');
    expect(carol.status).toBe(200);
  });

  it.each([
    ['/v1/videos/', 'trailing slash'],
    ['/V1/VIDEOS', 'other letter case'],
  ])('the same key and body sent to %s (%s) is 404 unknown_route, not a replay, and creates no duplicate', async (path) => {
    // Paths are exact: another spelling is another route, and no route of this API.
    const sim = makeSim();
    const first = await createWithKey(sim, 'spelling-key');
    const res = await request(sim.app)
      .post(path)
      .set(bearer())
      .set('Idempotency-Key', 'spelling-key')
      .send({ model: 'video-3.2', prompt: PROMPT });
    expectError(res, 404, 'invalid_request_error', 'unknown_route', null);
    expect(res.body.error.message).toBe(`Unknown route: POST ${path}. See openapi.yaml for the routes this API has.`);
    expect(res.headers['idempotent-replayed']).toBeUndefined();
    expect(await listIds(sim)).toEqual([first.body.id]);
  });

  it('keys are scoped per endpoint: the same key on /v1/images and /v1/videos creates both', async () => {
    const sim = makeSim();
    const image = await request(sim.app)
      .post('/v1/images')
      .set(bearer())
      .set('Idempotency-Key', 'endpoint-key')
      .send({ prompt: 'A neon street at night' });
    expect(image.status).toBe(200);
    expect(image.body.object).toBe('image');
    const video = await createWithKey(sim, 'endpoint-key');
    expect(video.status).toBe(200);
    expect(video.headers['idempotent-replayed']).toBeUndefined();
    expect(video.body.object).toBe('video');
    expect(await listIds(sim)).toEqual([video.body.id]);
  });

  it('POST /v1/images replays too, and conflicts on a different body', async () => {
    const sim = makeSim();
    const send = (body: Record<string, unknown>) =>
      request(sim.app).post('/v1/images').set(bearer()).set('Idempotency-Key', 'img-key').send(body);
    const first = await send({ prompt: 'A lighthouse at dawn' });
    const again = await send({ aspect_ratio: null, prompt: 'A lighthouse at dawn' });
    expect(again.status).toBe(200);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.text).toBe(first.text);
    expectError(await send({ prompt: 'A lighthouse at dusk' }), 400, 'invalid_request_error', 'idempotency_key_reused', 'Idempotency-Key');
    // Without the key, the same body creates a new image.
    const other = await request(sim.app).post('/v1/images').set(bearer()).send({ prompt: 'A lighthouse at dawn' });
    expect(other.body.id).not.toBe(first.body.id);
  });
});

describe('POST /v1/videos with Idempotency-Key: failed requests store nothing', () => {
  it('after a 400 model_not_found, the same key with a fixed body creates the generation', async () => {
    const sim = makeSim();
    const bad = await createWithKey(sim, 'retry-key', { model: 'video-9.9' });
    expectError(bad, 400, 'invalid_request_error', 'model_not_found', 'model');
    const fixed = await createWithKey(sim, 'retry-key');
    expect(fixed.status).toBe(200);
    expect(fixed.headers['idempotent-replayed']).toBeUndefined();
    expect(await listIds(sim)).toEqual([fixed.body.id]);
    // And now the success is what is stored.
    const replay = await createWithKey(sim, 'retry-key');
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.text).toBe(fixed.text);
  });

  it('after a 400 missing_parameter, the same key with a fixed body creates the generation', async () => {
    const sim = makeSim();
    const bad = await request(sim.app).post('/v1/videos').set(bearer()).set('Idempotency-Key', 'missing-key').send({ model: 'video-3.2' });
    expectError(bad, 400, 'invalid_request_error', 'missing_parameter', 'prompt');
    const fixed = await createWithKey(sim, 'missing-key');
    expect(fixed.status).toBe(200);
    expect(fixed.headers['idempotent-replayed']).toBeUndefined();
  });

  it('after an injected 500, retrying with the same key and body creates the generation once', async () => {
    const sim = makeSim();
    const queued = await postFault(sim, { path: '/v1/videos', method: 'POST', status: 500 });
    expect(queued.body).toEqual({ queued: 1 });
    const failed = await createWithKey(sim, 'fault-key');
    expectError(failed, 500, 'api_error', 'internal_error');
    expect(await listIds(sim)).toEqual([]);

    const retry = await createWithKey(sim, 'fault-key');
    expect(retry.status).toBe(200);
    expect(retry.headers['idempotent-replayed']).toBeUndefined();
    const replay = await createWithKey(sim, 'fault-key');
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.text).toBe(retry.text);
    expect(await listIds(sim)).toEqual([retry.body.id]);
  });

  it('after an injected 500, the same key with a different body is not a conflict', async () => {
    const sim = makeSim();
    await queueFault(sim, { path: '/v1/videos', method: 'POST', status: 500, api_key: 'sk_test_alice' });
    expectError(await createWithKey(sim, 'fault-key-2', { resolution: '720p' }), 500, 'api_error', 'internal_error');
    const other = await createWithKey(sim, 'fault-key-2', { resolution: '1080p' });
    expect(other.status).toBe(200);
    expect(other.body.resolution).toBe('1080p');
  });
});

describe('POST /v1/videos with Idempotency-Key: concurrency', () => {
  const sim = makeSim();
  let url = '';
  beforeAll(async () => {
    url = await sim.listen(0);
  });
  afterAll(async () => {
    await sim.close();
  });

  it('20 concurrent creates with one key make exactly one generation; all 20 bodies are identical and 19 are replays', async () => {
    const responses = await Promise.all(
      Array.from({ length: 20 }, () =>
        request(url)
          .post('/v1/videos')
          .set(bearer('sk_test_concurrent'))
          .set('Idempotency-Key', 'concurrent-key')
          .send({ model: 'video-3.2', prompt: PROMPT }),
      ),
    );
    for (const res of responses) expect(res.status).toBe(200);
    const texts = new Set(responses.map((r) => r.text));
    expect(texts.size).toBe(1);
    expect(responses.filter((r) => r.headers['idempotent-replayed'] === 'true')).toHaveLength(19);
    const listed = await request(url).get('/v1/videos').set(bearer('sk_test_concurrent'));
    expect(listed.body.data.map((v: { id: string }) => v.id)).toEqual([responses[0]?.body.id]);
  });

  it('concurrent creates with one key but different bodies: one creates, the others are 400 idempotency_key_reused', async () => {
    const responses = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        request(url)
          .post('/v1/videos')
          .set(bearer('sk_test_concurrent_3'))
          .set('Idempotency-Key', 'concurrent-conflict')
          .send({ model: 'video-3.2', prompt: PROMPT, duration_seconds: 4 + i }),
      ),
    );
    const ok = responses.filter((r) => r.status === 200);
    expect(ok).toHaveLength(1);
    for (const r of responses.filter((x) => x.status !== 200)) {
      expectError(r, 400, 'invalid_request_error', 'idempotency_key_reused', 'Idempotency-Key');
    }
    const listed = await request(url).get('/v1/videos').set(bearer('sk_test_concurrent_3'));
    expect(listed.body.data.map((v: { id: string }) => v.id)).toEqual([ok[0]?.body.id]);
  });

  it('concurrent creates with distinct keys each create their own generation', async () => {
    const responses = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        request(url)
          .post('/v1/videos')
          .set(bearer('sk_test_concurrent_2'))
          .set('Idempotency-Key', `distinct-${i}`)
          .send({ model: 'video-3.2', prompt: PROMPT }),
      ),
    );
    expect(new Set(responses.map((r) => r.body.id)).size).toBe(10);
    expect(responses.every((r) => r.headers['idempotent-replayed'] === undefined)).toBe(true);
  });
});

describe('POST /v1/videos with Idempotency-Key: retention', () => {
  it('a key is kept for 24 h of virtual time; past that the same key creates a new generation', async () => {
    const sim = makeSim();
    const first = await createWithKey(sim, 'retained-key');
    sim.clock.advance(86_399);
    const within = await createWithKey(sim, 'retained-key');
    expect(within.headers['idempotent-replayed']).toBe('true');
    expect(within.text).toBe(first.text);

    sim.clock.advance(2); // now 86,401 s after the first request
    const after = await createWithKey(sim, 'retained-key');
    expect(after.status).toBe(200);
    expect(after.headers['idempotent-replayed']).toBeUndefined();
    expect(after.body.id).not.toBe(first.body.id);
    expect(after.body.status).toBe('queued');
    expect(await listIds(sim)).toEqual([first.body.id, after.body.id]);
  });

  it('retention runs on the account clock: a per-account advance past 24 h expires that account key only', async () => {
    const sim = makeSim();
    const alice = await createWithKey(sim, 'clock-key', {}, 'sk_test_alice');
    const bob = await createWithKey(sim, 'clock-key', {}, 'sk_test_bob');
    await request(sim.app).post('/_sim/clock/advance').send({ seconds: 86_401, api_key: 'sk_test_alice' });
    const aliceAgain = await createWithKey(sim, 'clock-key', {}, 'sk_test_alice');
    expect(aliceAgain.headers['idempotent-replayed']).toBeUndefined();
    expect(aliceAgain.body.id).not.toBe(alice.body.id);
    const bobAgain = await createWithKey(sim, 'clock-key', {}, 'sk_test_bob');
    expect(bobAgain.headers['idempotent-replayed']).toBe('true');
    expect(bobAgain.text).toBe(bob.text);
  });
});

describe('POST /v1/videos with Idempotency-Key: limits.max_idempotency_keys', () => {
  const capped = (max_idempotency_keys: number) => makeSim({ scenario: fastWith((s) => (s.limits = { ...s.limits, max_idempotency_keys })) });

  it('keeps the newest answers of all accounts together: past the cap the oldest goes, and its key then behaves as an expired one', async () => {
    const sim = capped(2);
    const first = await createWithKey(sim, 'k-1', {}, 'sk_test_a');
    await createWithKey(sim, 'k-2', {}, 'sk_test_b');
    await createWithKey(sim, 'k-3', {}, 'sk_test_a');
    // k-1 of sk_test_a was the oldest of the three: the same request creates anew, another is no conflict.
    const again = await createWithKey(sim, 'k-1', {}, 'sk_test_a');
    expect(again.status).toBe(200);
    expect(again.headers['idempotent-replayed']).toBeUndefined();
    expect(again.body.id).not.toBe(first.body.id);
    // That stored k-1 anew, and k-2 (now the oldest) went; k-3 is still kept.
    expect((await createWithKey(sim, 'k-3', {}, 'sk_test_a')).headers['idempotent-replayed']).toBe('true');
    expect((await createWithKey(sim, 'k-2', { prompt: 'another' }, 'sk_test_b')).status).toBe(200);
  });

  it('is 2,000 by default', async () => {
    const sim = makeSim({ scenario: 'default' });
    expect((await request(sim.app).get('/_sim/scenario')).body.limits.max_idempotency_keys).toBe(2_000);
  });

  it('keeps a digest of the request with its answer, not the request', async () => {
    const sim = makeSim();
    const prompt = `${PROMPT} ${'p'.repeat(3000)}`;
    expect((await createWithKey(sim, 'k-big', { prompt })).status).toBe(200);
    const [stored] = sim.core.toState().accounts.flatMap((a) => a.idempotency);
    expect(stored?.fingerprint).toMatch(/^[A-Za-z0-9+/]{43}=$/);
    // The answer itself holds the prompt once.
    expect(JSON.stringify(stored).split('p'.repeat(3000)).length - 1).toBe(1);
  });
});

describe('stored answers on another media address (readdressed)', () => {
  it('rewrites a succeeded video\'s output URLs and an image\'s URL, and leaves a prompt that reads like one as sent', async () => {
    const sim = makeSim();
    const lookalike = 'http://localhost/cdn/videos/x.mp4';
    const created = await createVideo(sim, { prompt: lookalike, negative_prompt: lookalike, duration_seconds: 4 });
    await advance(sim, 60);
    const video = await request(sim.app).get(`/v1/videos/${created.body.id}`).set(bearer());
    expect(video.body.status).toBe('succeeded');
    const image = await request(sim.app).post('/v1/images').set(bearer()).send({ prompt: lookalike });
    const moved = readdressed('http://localhost/cdn', 'https://media.example.test/cdn') as (body: string) => string;
    const to = (url: string) => url.replace('http://localhost/cdn/', 'https://media.example.test/cdn/');

    expect(JSON.parse(moved(video.text))).toEqual({
      ...video.body,
      output: { url: to(video.body.output.url), thumbnail_url: to(video.body.output.thumbnail_url) },
    });
    expect(JSON.parse(moved(image.text))).toEqual({ ...image.body, url: to(image.body.url) });
    expect(readdressed('http://localhost/cdn', 'http://localhost/cdn')).toBeUndefined();
  });
});
