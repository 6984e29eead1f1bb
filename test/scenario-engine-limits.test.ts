/**
 * The scenario engine, key by key: every key of a scenario does something a client can observe over
 * HTTP, on the manual clock. Each test builds a scenario object from `fast`, changes one key (or a
 * few that belong together), runs a simulator on it and measures the effect through /v1 and /_sim,
 * never by sampling the distribution functions directly.
 *
 * Here: idempotency.retention_seconds and limits (max_stored_generations for videos and images, counted
 * across accounts, and journal_size; max_accounts and the health counters are in limits.test.ts).
 */
import request from 'supertest';
import { beforeEach, describe, expect, it } from 'vitest';
import { PROMPT, advanceOk, bearer, createMany, createVideo, expectError, fastWith, generationsOf, getVideo, makeSim } from './helpers.js';

type Sim = ReturnType<typeof makeSim>;

// ---------------------------------------------------------------------------------------------

describe('idempotency and limits', () => {
  let sim: Sim;
  beforeEach(() => {
    sim = makeSim({
      scenario: fastWith((s) => {
        s.idempotency.retention_seconds = 10;
        s.limits = { ...s.limits, max_stored_generations: 5, max_accounts: 100, journal_size: 3 };
        // Renders of 2 s per output second: a 4 s video resolves in about 11 s, a 16 s one in about 35 s.
        s.stages.render = { duration: { type: 'fixed', value: 2 }, per_output_second: true };
      }),
    });
  });

  it('idempotency.retention_seconds 10: the same key replays within 10 s and creates anew after 11 s', async () => {
    const key = 'sk_test_idem';
    const post = () =>
      request(sim.app).post('/v1/videos').set(bearer(key)).set('Idempotency-Key', 'k-1').send({ model: 'video-3.2', prompt: PROMPT });
    const first = await post();
    expect(first.status).toBe(200);
    await advanceOk(sim, 9, key);
    const replay = await post();
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.body).toEqual(first.body);
    await advanceOk(sim, 2, key);
    const fresh = await post();
    expect(fresh.status).toBe(200);
    expect(fresh.headers['idempotent-replayed']).toBeUndefined();
    expect(fresh.body.id).not.toBe(first.body.id);
    expect(await generationsOf(sim, key)).toHaveLength(2);
  });

  it('limits.max_stored_generations 5: after 8 resolved, the oldest 3 are 404 and the list has 5', async () => {
    const key = 'sk_test_cap1';
    const ids: string[] = [];
    for (let i = 0; i < 8; i++) {
      ids.push(...(await createMany(sim, 1, { duration_seconds: 4 }, key)));
      await advanceOk(sim, 15); // each resolves before the next is created
    }
    for (const id of ids.slice(0, 3)) {
      expectError(await getVideo(sim, id, key), 404, 'invalid_request_error', 'resource_not_found', 'id');
      expect((await request(sim.app).get(`/_sim/generations/${id}`)).status).toBe(404);
    }
    for (const id of ids.slice(3)) expect((await getVideo(sim, id, key)).status).toBe(200);
    const list = await request(sim.app).get('/v1/videos').query({ limit: 100 }).set(bearer(key));
    expect(list.body.data.map((v: { id: string }) => v.id)).toEqual(ids.slice(3));
    // The cap counts all accounts together: another account's 4 resolved ones push out the oldest 4.
    const others = await createMany(sim, 4, { duration_seconds: 4 }, 'sk_test_cap_other');
    await advanceOk(sim, 15);
    for (const id of others) expect((await getVideo(sim, id, 'sk_test_cap_other')).status).toBe(200);
    for (const id of ids.slice(3, 7)) expect((await getVideo(sim, id, key)).status).toBe(404);
    expect((await getVideo(sim, ids[7] as string, key)).status).toBe(200);
  });

  it('limits.max_stored_generations also bounds images: an evicted video takes its generated keyframe along, and the oldest images go past the cap', async () => {
    const key = 'sk_test_cap_images';
    const keyframes: string[] = [];
    for (let i = 0; i < 8; i++) {
      const [id] = await createMany(sim, 1, { duration_seconds: 4 }, key);
      await advanceOk(sim, 15);
      const video = await getVideo(sim, id as string, key);
      if (video.body.keyframe) keyframes.push(video.body.keyframe.id as string);
    }
    const reuse = (keyframe_id: string) => createVideo(sim, { keyframe_id }, key);
    // The keyframes of the 3 evicted videos are gone with them (when they had one)...
    const evictedIds = keyframes.filter((k) => k !== undefined).slice(0, -5);
    for (const k of evictedIds) expectError(await reuse(k), 400, 'invalid_request_error', 'keyframe_not_found', 'keyframe_id');
    // ...and standalone images are capped too: of 7 created, the oldest 2 are gone.
    const images: string[] = [];
    for (let i = 0; i < 7; i++) {
      const res = await request(sim.app).post('/v1/images').set(bearer('sk_test_cap_standalone')).send({ prompt: PROMPT });
      images.push(res.body.id as string);
    }
    for (const id of images.slice(0, 2)) {
      expectError(await createVideo(sim, { keyframe_id: id }, 'sk_test_cap_standalone'), 400, 'invalid_request_error', 'keyframe_not_found', 'keyframe_id');
      expect((await request(sim.app).get(`/cdn/images/${id}.png`)).status).toBe(404);
    }
    expect((await createVideo(sim, { keyframe_id: images[6] }, 'sk_test_cap_standalone')).status).toBe(200);
  });

  it('limits.max_stored_generations 5 counts in-flight generations: with 5 in flight a create is 429; the first to resolve makes room, never one in flight', async () => {
    const key = 'sk_test_cap2';
    const [slow] = await createMany(sim, 1, { duration_seconds: 16 }, key);
    // Four quick ones, 3 s apart, so that they resolve in the order they were created (each in 10 to 12.5 s).
    const quick: string[] = [];
    for (let i = 0; i < 4; i++) {
      if (i > 0) await advanceOk(sim, 3);
      quick.push(...(await createMany(sim, 1, { duration_seconds: 4 }, key)));
    }
    expectError(await createVideo(sim, {}, key), 429, 'rate_limit_error', 'rate_limit_exceeded');
    await advanceOk(sim, 4); // the first quick one resolved, the others and the slow one in flight
    const made = await createVideo(sim, {}, key);
    expect(made.status).toBe(200);
    expectError(await getVideo(sim, quick[0] as string, key), 404, 'invalid_request_error', 'resource_not_found', 'id');
    const list = await request(sim.app).get('/v1/videos').query({ limit: 100 }).set(bearer(key));
    expect(list.body.data.map((v: { id: string }) => v.id)).toEqual([slow, ...quick.slice(1), made.body.id]);
    expect((await getVideo(sim, slow as string, key)).body.status).toBe('processing');
  });

  it('limits.journal_size 3: only the last 3 requests are in /_sim/requests', async () => {
    const paths = ['/v1/videos?limit=1', '/v1/videos?limit=2', '/v1/videos?limit=3', '/v1/videos?limit=4', '/v1/videos?limit=5'];
    for (const p of paths) expect((await request(sim.app).get(p).set(bearer('sk_test_journal'))).status).toBe(200);
    const res = await request(sim.app).get('/_sim/requests').query({ limit: 100 });
    expect(res.body.data.map((e: { path: string }) => e.path)).toEqual(paths.slice(2));
    expect(res.body.has_more).toBe(false);
  });
});
