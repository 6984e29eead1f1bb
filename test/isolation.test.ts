/**
 * Accounts are isolated (docs/testing.md, "Parallel test workers"): another account's
 * resources do not exist for you; each account has its own clock offset and can be reset alone;
 * responses are deterministic per account whatever other accounts do, and polling never changes
 * an outcome.
 */
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { advance, answerInProcess, bearer, cancelVideo, createVideo, expectError, getVideo, makeSim, queueFault } from './helpers.js';

type Sim = ReturnType<typeof makeSim>;

const ALICE = 'sk_test_alice';
const BOB = 'sk_test_bob';
const CAROL = 'sk_test_carol';
const START = '2026-01-01T00:00:00.000Z';

function list(sim: Sim, key: string, query: Record<string, string | number> = {}) {
  return request(sim.app).get('/v1/videos').query(query).set(bearer(key));
}

function createImage(sim: Sim, key: string, prompt = 'A lighthouse at dawn') {
  return request(sim.app).post('/v1/images').set(bearer(key)).send({ prompt });
}

function clockOf(sim: Sim, key?: string) {
  const req = request(sim.app).get('/_sim/clock');
  return key ? req.query({ api_key: key }) : req;
}

function reset(sim: Sim, body: Record<string, unknown>) {
  return request(sim.app).post('/_sim/reset').send(body);
}

describe('another account’s resources', () => {
  it('another account’s generation is 404 resource_not_found on retrieve', async () => {
    const sim = makeSim();
    const alice = (await createVideo(sim, {}, ALICE)).body;
    expectError(await getVideo(sim, alice.id, BOB), 404, 'invalid_request_error', 'resource_not_found');
    expect((await getVideo(sim, alice.id, ALICE)).status).toBe(200);
  });

  it('another account’s generation is 404 resource_not_found on cancel, and stays uncanceled', async () => {
    const sim = makeSim();
    const alice = (await createVideo(sim, {}, ALICE)).body;
    expectError(await cancelVideo(sim, alice.id, BOB), 404, 'invalid_request_error', 'resource_not_found');
    expect((await getVideo(sim, alice.id, ALICE)).body.status).toBe('queued');
    sim.clock.advance(30);
    expect((await getVideo(sim, alice.id, ALICE)).body.status).toBe('succeeded');
  });

  it('another account’s generations are absent from the list', async () => {
    const sim = makeSim();
    const aliceIds: string[] = [];
    const bobIds: string[] = [];
    for (let i = 0; i < 4; i++) {
      aliceIds.push((await createVideo(sim, {}, ALICE)).body.id);
      bobIds.push((await createVideo(sim, {}, BOB)).body.id);
    }
    const bobList = await list(sim, BOB);
    expect(bobList.body.data.map((v: { id: string }) => v.id)).toEqual(bobIds);
    const aliceList = await list(sim, ALICE);
    expect(aliceList.body.data.map((v: { id: string }) => v.id)).toEqual(aliceIds);
    expect((await list(sim, CAROL)).body).toEqual({ object: 'list', data: [], has_more: false });
  });

  it('another account’s image as keyframe_id is 400 keyframe_not_found, param keyframe_id', async () => {
    const sim = makeSim();
    const image = (await createImage(sim, ALICE)).body;
    const res = await createVideo(sim, { keyframe_id: image.id }, BOB);
    expectError(res, 400, 'invalid_request_error', 'keyframe_not_found', 'keyframe_id');
    expect((await list(sim, BOB)).body.data).toEqual([]);
    expect((await createVideo(sim, { keyframe_id: image.id }, ALICE)).status).toBe(200);
  });

  it('another account’s auto-generated keyframe is 400 keyframe_not_found too', async () => {
    const sim = makeSim();
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await createVideo(sim, {}, ALICE)).body.id);
    sim.clock.advance(30);
    const withKeyframe = [];
    for (const id of ids) {
      const v = (await getVideo(sim, id, ALICE)).body;
      if (v.keyframe) withKeyframe.push(v.keyframe.id as string);
    }
    expect(withKeyframe).toHaveLength(5); // fast: all five are keyframe-first with this seed
    expectError(await createVideo(sim, { keyframe_id: withKeyframe[0] }, BOB), 400, 'invalid_request_error', 'keyframe_not_found', 'keyframe_id');
  });

  it('list with after = another account’s id is 400 invalid_parameter, param after', async () => {
    const sim = makeSim();
    const alice = (await createVideo(sim, {}, ALICE)).body;
    await createVideo(sim, {}, BOB);
    expectError(await list(sim, BOB, { after: alice.id }), 400, 'invalid_request_error', 'invalid_parameter', 'after');
  });
});

describe('per-account clocks (POST /_sim/clock/advance with api_key)', () => {
  it('moves only that account: its clock shows the offset, the global clock and other accounts do not move', async () => {
    const sim = makeSim();
    const alice = (await createVideo(sim, {}, ALICE)).body;
    const bob = (await createVideo(sim, {}, BOB)).body;

    const res = await advance(sim, 30, ALICE);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ mode: 'manual', now: '2026-01-01T00:00:30.000Z', speed: 1 });
    expect((await clockOf(sim, ALICE)).body.now).toBe('2026-01-01T00:00:30.000Z');
    expect((await clockOf(sim)).body.now).toBe(START);
    expect((await clockOf(sim, BOB)).body.now).toBe(START);

    expect((await getVideo(sim, alice.id, ALICE)).body.status).toBe('succeeded');
    const bobNow = (await getVideo(sim, bob.id, BOB)).body;
    expect(bobNow).toEqual(bob); // still queued, nothing filled
    const control = (await request(sim.app).get(`/_sim/generations/${bob.id}`)).body;
    expect(control.status).toBe('queued');
    expect(control.stages.map((s: { stage: string }) => s.stage)).toEqual(['claim_linking', 'queue']);
  });

  it('timestamps of an advanced account are on its own clock', async () => {
    const sim = makeSim();
    await advance(sim, 12.345, ALICE);
    const alice = (await createVideo(sim, {}, ALICE)).body;
    const bob = (await createVideo(sim, {}, BOB)).body;
    expect(alice.created_at).toBe('2026-01-01T00:00:12.345Z');
    expect(bob.created_at).toBe(START);
    const canceled = (await cancelVideo(sim, alice.id, ALICE)).body;
    expect(canceled.completed_at).toBe('2026-01-01T00:00:12.345Z');
  });

  it('a global advance moves every account, keeping each offset', async () => {
    const sim = makeSim();
    await createVideo(sim, {}, BOB);
    await advance(sim, 30, ALICE);
    const res = await advance(sim, 10);
    expect(res.body.now).toBe('2026-01-01T00:00:10.000Z');
    expect((await clockOf(sim, ALICE)).body.now).toBe('2026-01-01T00:00:40.000Z');
    expect((await clockOf(sim, BOB)).body.now).toBe('2026-01-01T00:00:10.000Z');
  });

  it('GET /_sim/clock for a never-used key answers the global clock', async () => {
    const sim = makeSim();
    await advance(sim, 30, ALICE);
    await advance(sim, 5);
    const never = await clockOf(sim, 'sk_test_never_used');
    expect(never.status).toBe(200);
    expect(never.body).toEqual((await clockOf(sim)).body);
    expect(never.body.now).toBe('2026-01-01T00:00:05.000Z');
  });
});

describe('per-account reset (POST /_sim/reset with api_key)', () => {
  it('makes the account as new: its generations are gone, its ids repeat the brand-new sequence, others are untouched', async () => {
    const sim = makeSim();
    const aliceBefore: string[] = [];
    for (let i = 0; i < 3; i++) aliceBefore.push((await createVideo(sim, {}, ALICE)).body.id);
    const aliceImage = (await createImage(sim, ALICE)).body;
    await createVideo(sim, {}, ALICE).set('Idempotency-Key', 'k1');
    const bobIds: string[] = [];
    for (let i = 0; i < 2; i++) bobIds.push((await createVideo(sim, {}, BOB)).body.id);
    await advance(sim, 3, BOB);
    await advance(sim, 30, ALICE);
    const bobBefore = await Promise.all(bobIds.map(async (id) => (await getVideo(sim, id, BOB)).body));

    const res = await reset(sim, { api_key: ALICE });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'ok', scenario: 'fast' });

    for (const id of aliceBefore) expectError(await getVideo(sim, id, ALICE), 404, 'invalid_request_error', 'resource_not_found');
    expectError(await request(sim.app).get(`/_sim/generations/${aliceBefore[0]}`), 404, 'invalid_request_error', 'resource_not_found');
    expect((await list(sim, ALICE)).body).toEqual({ object: 'list', data: [], has_more: false });
    expect((await clockOf(sim, ALICE)).body.now).toBe(START); // offset gone
    expectError(await createVideo(sim, { keyframe_id: aliceImage.id }, ALICE), 400, 'invalid_request_error', 'keyframe_not_found', 'keyframe_id');

    // Bob: untouched, clock offset included.
    expect((await clockOf(sim, BOB)).body.now).toBe('2026-01-01T00:00:03.000Z');
    for (const [i, id] of bobIds.entries()) expect((await getVideo(sim, id, BOB)).body).toEqual(bobBefore[i]);

    // Alice's ids start over as for a brand-new account (here and in a fresh simulator).
    const aliceAfter: string[] = [];
    for (let i = 0; i < 3; i++) aliceAfter.push((await createVideo(sim, {}, ALICE)).body.id);
    const fresh = makeSim();
    const freshIds: string[] = [];
    for (let i = 0; i < 3; i++) freshIds.push((await createVideo(fresh, {}, ALICE)).body.id);
    expect(aliceAfter).toEqual(freshIds);
    expect(aliceAfter).toEqual(aliceBefore);

    // Its idempotency keys are gone too.
    const again = await createVideo(sim, {}, ALICE).set('Idempotency-Key', 'k1');
    expect(again.status).toBe(200);
    expect(again.headers['idempotent-replayed']).toBeUndefined();
  });

  it('a reset account’s re-created generations walk the same fate as a brand-new account’s', async () => {
    const sim = makeSim();
    for (let i = 0; i < 3; i++) await createVideo(sim, { duration_seconds: 4 + i * 4 }, ALICE);
    await advance(sim, 30, ALICE);
    await reset(sim, { api_key: ALICE });
    const fresh = makeSim();
    for (const s of [sim, fresh]) {
      for (let i = 0; i < 3; i++) await createVideo(s, { duration_seconds: 4 + i * 4 }, ALICE);
      await advance(s, 30, ALICE);
    }
    expect((await list(sim, ALICE)).text).toBe((await list(fresh, ALICE)).text);
  });

  it('drops that account’s journal entries and queued faults, and no one else’s', async () => {
    const sim = makeSim();
    await createVideo(sim, {}, ALICE);
    await createVideo(sim, {}, BOB);
    await queueFault(sim, { path: '/v1/videos', method: 'GET', status: 500, api_key: ALICE });
    await queueFault(sim, { path: '/v1/videos', method: 'GET', status: 500, api_key: BOB });
    const journal = (key: string) => request(sim.app).get('/_sim/requests').query({ api_key: key });
    expect((await journal(ALICE)).body.data).toHaveLength(1);

    await reset(sim, { api_key: ALICE });
    expect((await journal(ALICE)).body.data).toEqual([]);
    expect((await journal(BOB)).body.data).toHaveLength(1);
    expect((await list(sim, ALICE)).status).toBe(200); // alice's fault is gone
    expectError(await list(sim, BOB), 500, 'api_error', 'internal_error'); // bob's is still queued
  });

  it('reset with api_key plus scenario is 400 param scenario, and resets nothing', async () => {
    const sim = makeSim();
    const alice = (await createVideo(sim, {}, ALICE)).body;
    expectError(await reset(sim, { api_key: ALICE, scenario: 'default' }), 400, 'invalid_request_error', 'invalid_parameter', 'scenario');
    expect((await getVideo(sim, alice.id, ALICE)).status).toBe(200);
    expect((await request(sim.app).get('/_sim/health')).body.scenario).toBe('fast');
  });

  it('reset with api_key plus seed is 400 param seed, and resets nothing', async () => {
    const sim = makeSim();
    const alice = (await createVideo(sim, {}, ALICE)).body;
    expectError(await reset(sim, { api_key: ALICE, seed: 7 }), 400, 'invalid_request_error', 'invalid_parameter', 'seed');
    expect((await getVideo(sim, alice.id, ALICE)).status).toBe(200);
    expect((await request(sim.app).get('/_sim/health')).body.seed).toBe(42);
  });
});

// ---- determinism ---------------------------------------------------------------------------

/**
 * A scripted sequence for one account: creates with various parameters, an image, polls, its own
 * clock advances, a cancel, a rejected cancel, an idempotent replay and lists. `between` runs after
 * every request (other accounts' traffic in the interleaved run). Returns every status and body.
 */
async function script(sim: Sim, key: string, between: () => Promise<void> = async () => {}): Promise<string[]> {
  const out: string[] = [];
  const rec = async (req: request.Test) => {
    const res = await req;
    out.push(`${res.status} ${res.text}`);
    await between();
    return res;
  };
  const a = await rec(createVideo(sim, {}, key));
  const img = await rec(createImage(sim, key, 'A neon street, the still'));
  const b = await rec(createVideo(sim, { resolution: '720p', duration_seconds: 4, negative_prompt: 'blur' }, key));
  const c = await rec(createVideo(sim, { keyframe_id: img.body.id, model: 'video-3.0', duration_seconds: 12 }, key));
  await rec(advance(sim, 1.3, key));
  await rec(getVideo(sim, a.body.id, key));
  const d = await rec(createVideo(sim, { duration_seconds: 16 }, key).set('Idempotency-Key', 'det-1'));
  await rec(advance(sim, 0.7, key));
  await rec(cancelVideo(sim, d.body.id, key));
  await rec(createVideo(sim, { duration_seconds: 16 }, key).set('Idempotency-Key', 'det-1'));
  for (let i = 0; i < 6; i++) {
    await rec(advance(sim, 0.9, key));
    for (const v of [a, b, c]) await rec(getVideo(sim, v.body.id, key));
  }
  await rec(list(sim, key, { limit: 2 }));
  await rec(cancelVideo(sim, a.body.id, key));
  const e = await rec(createVideo(sim, { model: 'video-3.1', resolution: '720p' }, key));
  await rec(advance(sim, 30, key));
  await rec(getVideo(sim, e.body.id, key));
  await rec(list(sim, key));
  await rec(list(sim, key, { status: 'canceled' }));
  await rec(clockOf(sim, key));
  return out;
}

/** Other accounts' traffic: creates, polls and per-account advances only (a global one would move everyone). */
function otherTraffic(sim: Sim): () => Promise<void> {
  let n = 0;
  const ids: Record<string, string[]> = { [BOB]: [], [CAROL]: [] };
  return async () => {
    n++;
    for (const key of [BOB, CAROL]) {
      const mine = ids[key] as string[];
      switch ((n + (key === BOB ? 0 : 1)) % 4) {
        case 0: {
          const res = await createVideo(sim, { duration_seconds: 4 + (n % 13) }, key);
          expect(res.status).toBe(200);
          mine.push(res.body.id);
          break;
        }
        case 1:
          for (const id of mine.slice(-3)) expect((await getVideo(sim, id, key)).status).toBe(200);
          break;
        case 2:
          expect((await advance(sim, 0.4 + (n % 5) * 0.77, key)).status).toBe(200);
          break;
        default:
          if (mine.length > 0) await cancelVideo(sim, mine[mine.length - 1] as string, key);
          await list(sim, key);
          await createImage(sim, key);
      }
    }
  };
}

describe('determinism', () => {
  it('the same script on two fresh simulators gives byte-identical response bodies', async () => {
    const first = await script(makeSim(), ALICE);
    const second = await script(makeSim(), ALICE);
    expect(first).toHaveLength(42);
    expect(second).toEqual(first);
    // The script saw a real life: success, cancel, a rejected cancel, a replay.
    const all = first.join('\n');
    expect(all).toContain('"status":"succeeded"');
    expect(all).toContain('"status":"canceled"');
    expect(all).toContain('not_cancelable');
  });

  it('the script gives byte-identical bodies when interleaved with two other accounts’ traffic', async () => {
    const alone = await script(makeSim(), ALICE);
    const sim = makeSim();
    const traffic = otherTraffic(sim);
    await traffic(); // others move first
    const interleaved = await script(sim, ALICE, traffic);
    expect(interleaved).toEqual(alone);
    // The others really were active.
    expect((await list(sim, BOB, { limit: 100 })).body.data).toHaveLength(10);
    expect((await list(sim, CAROL, { limit: 100 })).body.data).toHaveLength(11);
  });

  it('the script gives byte-identical bodies when two accounts run it at the same time (parallel workers)', async () => {
    const aliceAlone = await script(makeSim(), ALICE);
    const bobAlone = await script(makeSim(), BOB);
    const sim = makeSim();
    const [alice, bob, carol] = await Promise.all([script(sim, ALICE), script(sim, BOB), script(sim, CAROL)]);
    expect(alice).toEqual(aliceAlone);
    expect(bob).toEqual(bobAlone);
    expect(carol[0]).not.toBe(alice[0]);
  });

  it('after a global reset the same script gives the same bodies again', async () => {
    const sim = makeSim();
    const first = await script(sim, ALICE);
    await advance(sim, 100);
    const res = await reset(sim, {});
    expect(res.status).toBe(200);
    expect(res.body.clock.now).toBe(START);
    expect(await script(sim, ALICE)).toEqual(first);
  });

  it('after a per-account reset the same script gives the same bodies again, while others keep their offsets', async () => {
    const sim = makeSim();
    await advance(sim, 50, BOB);
    const first = await script(sim, ALICE);
    await reset(sim, { api_key: ALICE });
    expect(await script(sim, ALICE)).toEqual(first);
    expect((await clockOf(sim, BOB)).body.now).toBe('2026-01-01T00:00:50.000Z');
  });

  it('the script with seed 43 gives different ids', async () => {
    const at42 = await script(makeSim(), ALICE);
    const at43 = await script(makeSim({ seed: 43 }), ALICE);
    const idOf = (line: string) => (JSON.parse(line.slice(4)) as { id: string }).id;
    // The script's first two answers: a video, then an image.
    expect([idOf(at42[0] as string), idOf(at42[1] as string)]).toEqual(['vid_TLHD8L5NZp1gVF6APHuNj2zs', 'img_gYr9CYtbJ0L9tCvF8MQdHwVS']);
    expect([idOf(at43[0] as string), idOf(at43[1] as string)]).toEqual(['vid_21eYtaIFayf6Zu8to5z8W6ge', 'img_LrwvPkQlNQsxSjDQE81URh8g']);
    expect(at43).not.toEqual(at42);
  });

  it('a different account runs the same script to different ids', async () => {
    const alice = await script(makeSim(), ALICE);
    const dave = await script(makeSim(), 'sk_test_dave');
    expect(alice[0]).not.toBe(dave[0]);
  });

  it('polling every 1 s or every 10 s gives identical final outcomes for 20 generations (default scenario)', () => {
    // Over 2,000 polls, answered in process by the request path itself (no HTTP around it).
    const run = (pollEvery: number) => {
      const sim = makeSim({ scenario: 'default' });
      const ids: string[] = [];
      for (let i = 0; i < 20; i++) {
        const body = { model: `video-3.${i % 3}`, prompt: `Shot ${i}: a slow pan over a harbour.`, duration_seconds: 4 + (i % 13), resolution: i % 2 ? '720p' : '1080p' };
        const res = answerInProcess(sim, 'POST', '/v1/videos', { key: ALICE, body });
        expect(res.status).toBe(200);
        ids.push(res.body.id);
      }
      const final = new Map<string, Record<string, unknown>>();
      let polls = 0;
      for (let t = 0; t < 600 && final.size < ids.length; t += pollEvery) {
        sim.clock.advance(pollEvery);
        for (const id of ids) {
          if (final.has(id)) continue;
          const res = answerInProcess(sim, 'GET', `/v1/videos/${id}`, { key: ALICE });
          expect(res.status).toBe(200);
          polls++;
          if (['succeeded', 'failed', 'canceled'].includes(res.body.status)) final.set(id, res.body);
        }
      }
      expect(final.size).toBe(ids.length);
      return {
        polls,
        outcomes: ids.map((id) => {
          const v = final.get(id) as Record<string, unknown>;
          return { id, status: v.status, routed_model: v.routed_model, cost_cents: v.cost_cents, completed_at: v.completed_at, keyframe: v.keyframe };
        }),
      };
    };
    const often = run(1);
    const rarely = run(10);
    expect([often.polls, rarely.polls]).toEqual([2118, 221]);
    expect(often.outcomes).toEqual(rarely.outcomes);
  });
});
