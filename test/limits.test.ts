/**
 * The global limits (scenario `limits`, docs/limits.md): the cap on stored generations counts every
 * account together and every generation, in flight or not (a create is 429 when none can make
 * room), what it evicts is released at once, the least recently used account is dropped past
 * `max_accounts`, `GET /_sim/health` counts both, the stored idempotent answers are capped, and the
 * journal keeps a fingerprint of each body instead of the body.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { PENDING_FINGERPRINT_BYTES, bodyFingerprint, journalFingerprint } from '../src/request-path/body.js';
import { Journal } from '../src/core/journal/journal.js';
import type { Scenario } from '../src/index.js';
import { PROMPT, advanceOk, bearer, createMany, createVideo, expectError, fastWith, getVideo, journalRecord, listVideos, makeSim, queueFault } from './helpers.js';

type Sim = ReturnType<typeof makeSim>;

/**
 * `fast` with these limits, and renders of 2 s per output second: a 4 s video resolves in about
 * 11 s, a 16 s one in about 35 s.
 */
function limited(limits: Partial<Scenario['limits']>, change?: (s: Scenario) => void): Sim {
  return makeSim({
    scenario: fastWith((s) => {
      s.limits = { ...s.limits, ...limits };
      s.stages.render = { duration: { type: 'fixed', value: 2 }, per_output_second: true };
      change?.(s);
    }),
  });
}

async function health(sim: Sim) {
  const res = await request(sim.app).get('/_sim/health');
  expect(res.status).toBe(200);
  return res.body.limits as { accounts: number; stored_generations: number; evicted_accounts: number; evicted_generations: number };
}

async function storedIds(sim: Sim): Promise<string[]> {
  const res = await request(sim.app).get('/_sim/generations').query({ limit: 100 });
  expect(res.body.has_more).toBe(false);
  return res.body.data.map((g: { id: string }) => g.id);
}

/** Creates one 4 s video for `key` and lets it resolve (the global clock moves 15 s). */
async function createResolved(sim: Sim, key: string): Promise<string> {
  const [id] = await createMany(sim, 1, { duration_seconds: 4 }, key);
  await advanceOk(sim, 15);
  return id as string;
}

describe('limits.max_stored_generations', () => {
  it('counts all accounts together: 50 keys with 2 resolved generations each store 10 under a cap of 10, not 100', async () => {
    const sim = limited({ max_stored_generations: 10 });
    for (let k = 0; k < 50; k++) {
      await createMany(sim, 2, { duration_seconds: 4 }, `sk_test_many_${k}`);
      await advanceOk(sim, 15);
    }
    expect(await storedIds(sim)).toHaveLength(10);
    expect(await health(sim)).toEqual({ accounts: 50, stored_generations: 10, evicted_accounts: 0, evicted_generations: 90 });
  });

  it('evicts the generation that resolved first, whatever its account', async () => {
    const sim = limited({ max_stored_generations: 3 });
    const a1 = await createResolved(sim, 'sk_test_a');
    const b1 = await createResolved(sim, 'sk_test_b');
    const a2 = await createResolved(sim, 'sk_test_a');
    expect(await storedIds(sim)).toEqual([a1, b1, a2]);
    const c1 = await createResolved(sim, 'sk_test_c');
    expectError(await getVideo(sim, a1, 'sk_test_a'), 404, 'invalid_request_error', 'resource_not_found', 'id');
    expect(await storedIds(sim)).toEqual([b1, a2, c1]);
    const b2 = await createResolved(sim, 'sk_test_b');
    expectError(await getVideo(sim, b1, 'sk_test_b'), 404, 'invalid_request_error', 'resource_not_found', 'id');
    expect(await storedIds(sim)).toEqual([a2, c1, b2]);
    // An in-flight generation counts, and is never evicted: the resolved ones make room around it.
    const [slow] = await createMany(sim, 1, { duration_seconds: 16 }, 'sk_test_d');
    expect(await storedIds(sim)).toEqual([c1, b2, slow]);
    const e1 = await createResolved(sim, 'sk_test_e');
    expect((await getVideo(sim, slow as string, 'sk_test_d')).body.status).toBe('processing');
    expect(await storedIds(sim)).toEqual([b2, slow, e1]);
    const f1 = await createResolved(sim, 'sk_test_f');
    expect(await storedIds(sim)).toEqual([slow, e1, f1]);
    expect(await health(sim)).toEqual({ accounts: 6, stored_generations: 3, evicted_accounts: 0, evicted_generations: 5 });
  });

  it('caps images across accounts too: past the cap the oldest image goes, whatever its account', async () => {
    const sim = limited({ max_stored_generations: 2 });
    const image = async (key: string) => (await request(sim.app).post('/v1/images').set(bearer(key)).send({ prompt: PROMPT })).body.id as string;
    const first = await image('sk_test_img_a');
    const second = await image('sk_test_img_b');
    await image('sk_test_img_c');
    expectError(await createVideo(sim, { keyframe_id: first }, 'sk_test_img_a'), 400, 'invalid_request_error', 'keyframe_not_found', 'keyframe_id');
    expect((await request(sim.app).get(`/cdn/images/${first}.png`)).status).toBe(404);
    expect((await createVideo(sim, { keyframe_id: second }, 'sk_test_img_b')).status).toBe(200);
  });

  it('evicts the same generations, and refuses the same creates, for the same requests', async () => {
    const run = async () => {
      const sim = limited({ max_stored_generations: 4, max_accounts: 3 });
      const statuses: number[] = [];
      for (let i = 0; i < 12; i++) {
        for (let n = 0; n < 1 + (i % 2); n++) statuses.push((await createVideo(sim, { duration_seconds: 4 + 4 * (i % 3) }, `sk_test_det_${i % 5}`)).status);
        await advanceOk(sim, 7);
      }
      await advanceOk(sim, 60);
      return { statuses, ids: await storedIds(sim), limits: await health(sim) };
    };
    const first = await run();
    expect(first.limits.evicted_generations).toBeGreaterThan(0);
    expect(first.limits.evicted_accounts).toBeGreaterThan(0);
    expect(first.statuses).toContain(429);
    expect(await run()).toEqual(first);
  });

  it('counts in-flight generations too: at the cap with none resolved, a video or image create is 429 with Retry-After 1, naming the limit', async () => {
    const sim = limited({ max_stored_generations: 3 });
    const ids = await createMany(sim, 3, { duration_seconds: 4 }, 'sk_test_full_a');
    const refusals = [
      await createVideo(sim, {}, 'sk_test_full_b'),
      await request(sim.app).post('/v1/images').set(bearer('sk_test_full_b')).send({ prompt: PROMPT }),
    ];
    // Past the rate limit, each refusal has spent the request's token like any other answer.
    expect(refusals.map((r) => r.headers['x-ratelimit-remaining'])).toEqual(['999999999', '999999998']);
    for (const refused of refusals) {
      const error = expectError(refused, 429, 'rate_limit_error', 'rate_limit_exceeded');
      expect(error.message).toBe(
        'The simulator holds 3 generations and images, its limit (limits.max_stored_generations), and none of them has resolved, so none can make room. ' +
          'Advance the clock (POST /_sim/clock/advance) so that generations resolve, or raise limits.max_stored_generations.',
      );
      expect(refused.headers['retry-after']).toBe('1');
    }
    expect(await storedIds(sim)).toEqual(ids);
    expect(await health(sim)).toMatchObject({ stored_generations: 3, evicted_generations: 0 });
    // Once they resolve, the one that resolved first makes room, and the create goes through.
    await advanceOk(sim, 15);
    const resolved = (await request(sim.app).get('/_sim/generations')).body.data as { id: string; completed_at: string }[];
    const first = resolved.reduce((a, b) => (Date.parse(b.completed_at) < Date.parse(a.completed_at) ? b : a));
    const made = await createVideo(sim, {}, 'sk_test_full_b');
    expect(made.status).toBe(200);
    expect(await storedIds(sim)).toEqual([...ids.filter((id) => id !== first.id), made.body.id]);
  });

  it('restores a snapshot of an earlier version, whose made images have no place among the resolved generations: they go first', async () => {
    const sim = limited({ max_stored_generations: 3 });
    const video = await createResolved(sim, 'sk_test_old');
    const image = (await request(sim.app).post('/v1/images').set(bearer('sk_test_old')).send({ prompt: PROMPT })).body.id as string;
    const state = sim.core.toState();
    expect(state.store.images.map((i) => i.after_change)).toEqual([expect.any(Number), undefined]);
    for (const i of state.store.images) delete i.after_change;
    const restored = limited({ max_stored_generations: 3 });
    restored.core.fromState(state);
    expect(await health(restored)).toMatchObject({ stored_generations: 2 });
    await createMany(restored, 2, {}, 'sk_test_old');
    // The image, placed before every generation, made room first; the video is still stored.
    expect((await request(restored.app).get(`/cdn/images/${image}.png`)).status).toBe(404);
    expect((await getVideo(restored, video, 'sk_test_old')).status).toBe(200);
  });

  it('answers a create repeated under its Idempotency-Key however full the store is', async () => {
    const sim = limited({ max_stored_generations: 2 });
    const keyed = () => request(sim.app).post('/v1/videos').set(bearer()).set('Idempotency-Key', 'k-full').send({ model: 'video-3.2', prompt: PROMPT });
    const first = await keyed();
    await createMany(sim, 1);
    expect((await createVideo(sim)).status).toBe(429);
    const again = await keyed();
    expect(again.status).toBe(200);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.body).toEqual(first.body);
  });

  it('makes room with images too: an image resolves when it is made, and goes before a generation that resolved after it', async () => {
    const sim = limited({ max_stored_generations: 2 });
    const image = (await request(sim.app).post('/v1/images').set(bearer()).send({ prompt: PROMPT })).body.id as string;
    const video = await createResolved(sim, 'sk_test_alice');
    const next = await createVideo(sim);
    expect(next.status).toBe(200);
    expectError(await createVideo(sim, { keyframe_id: image }), 400, 'invalid_request_error', 'keyframe_not_found', 'keyframe_id');
    expect((await request(sim.app).get(`/cdn/images/${image}.png`)).status).toBe(404);
    expect(await storedIds(sim)).toEqual([video, next.body.id]);
  });
});

/** A full garbage collection, from inside the test (V8's flag set at run time). */
function collectGarbage(): () => void {
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as () => void;
}

/** Whether the object behind `ref` is gone after a full collection, once the current job let go of it. */
async function released(ref: WeakRef<object>): Promise<boolean> {
  await new Promise((resolve) => setTimeout(resolve, 0));
  collectGarbage()();
  return ref.deref() === undefined;
}

describe('what a limit evicts is released at once', () => {
  it('an evicted generation and the keyframe generated for it: no list, index or log keeps them', async () => {
    const sim = limited({ max_stored_generations: 1 }, (s) => (s.keyframe_first_share = 1));
    const first = await createResolved(sim, 'sk_test_gc_a');
    const refs = ((g = sim.core.store.get(first)) => [g, sim.core.store.image(g?.fate.keyframeImageId as string)].map((x) => new WeakRef(x as object)))();
    await createResolved(sim, 'sk_test_gc_b');
    expectError(await getVideo(sim, first, 'sk_test_gc_a'), 404, 'invalid_request_error', 'resource_not_found', 'id');
    for (const ref of refs) expect(await released(ref)).toBe(true);
  });

  it('an evicted image: no list or index keeps it', async () => {
    const sim = limited({ max_stored_generations: 1 });
    const image = async () => (await request(sim.app).post('/v1/images').set(bearer()).send({ prompt: PROMPT })).body.id as string;
    const first = await image();
    const ref = new WeakRef(sim.core.store.image(first) as object);
    await image();
    expect(sim.core.store.image(first)).toBeUndefined();
    expect(await released(ref)).toBe(true);
  });

  it('a stored idempotent answer dropped past max_idempotency_keys', async () => {
    const sim = limited({ max_idempotency_keys: 1 });
    const post = (key: string) => request(sim.app).post('/v1/images').set(bearer()).set('Idempotency-Key', key).send({ prompt: PROMPT });
    await post('k-1');
    const account = sim.core.accounts.peek('sk_test_alice');
    const ref = new WeakRef(account?.idempotency.entries()[0] as object);
    await post('k-2');
    expect(await released(ref)).toBe(true);
  });
});

describe('limits.max_accounts', () => {
  it('drops the least recently used account whole when one more is used, and its key starts afresh', async () => {
    // A balance that pays for one create at a time, so that a reservation shows as a 402.
    const sim = limited({ max_accounts: 2 }, (s) => (s.account_defaults.balance_cents = 100));
    const alice = 'sk_test_alice';
    const created = await request(sim.app).post('/v1/videos').set(bearer(alice)).set('Idempotency-Key', 'k-1').send({ model: 'video-3.2', prompt: PROMPT });
    expect(created.status).toBe(200);
    expectError(await createVideo(sim, {}, alice), 402, 'insufficient_balance', 'insufficient_balance');
    await advanceOk(sim, 5, alice);
    expect((await listVideos(sim, 'sk_test_bob')).status).toBe(200);
    // Alice used last: Bob is the least recently used when Carol arrives.
    expect((await getVideo(sim, created.body.id, alice)).status).toBe(200);
    expect((await listVideos(sim, 'sk_test_carol')).status).toBe(200);
    expect(await health(sim)).toMatchObject({ accounts: 2, evicted_accounts: 1 });
    expect((await getVideo(sim, created.body.id, alice)).status).toBe(200);
    await queueFault(sim, { api_key: alice, method: 'GET', path: '/v1/videos', status: 500 });

    // Carol, then Dave: Alice is now the least recently used, and goes.
    expect((await listVideos(sim, 'sk_test_carol')).status).toBe(200);
    expect((await listVideos(sim, 'sk_test_dave')).status).toBe(200);
    expect(await health(sim)).toEqual({ accounts: 2, stored_generations: 0, evicted_accounts: 2, evicted_generations: 0 });
    expect((await request(sim.app).get('/_sim/requests').query({ api_key: alice })).body.data).toEqual([]);
    expect((await request(sim.app).get('/_sim/clock').query({ api_key: alice })).body.now).toBe((await request(sim.app).get('/_sim/clock')).body.now);

    // Alice afresh: no generations, her queued fault gone, her request ids, balance and keys new.
    const list = await listVideos(sim, alice);
    expect(list.status).toBe(200);
    expect(list.body.data).toEqual([]);
    expect(list.headers['x-request-id']).toMatch(/^req_[0-9a-f]{8}_000001$/);
    expectError(await getVideo(sim, created.body.id, alice), 404, 'invalid_request_error', 'resource_not_found', 'id');
    const again = await request(sim.app).post('/v1/videos').set(bearer(alice)).set('Idempotency-Key', 'k-1').send({ model: 'video-3.2', prompt: PROMPT });
    expect(again.status).toBe(200);
    expect(again.headers['idempotent-replayed']).toBeUndefined();
    expect(await health(sim)).toMatchObject({ accounts: 2, evicted_accounts: 3 });
  });

  it('counts an account clock advance as a use, and a read of its clock or of its media files as none', async () => {
    const sim = limited({ max_accounts: 2 });
    const first = await createResolved(sim, 'sk_test_first');
    const second = await createResolved(sim, 'sk_test_second');
    const media = (await getVideo(sim, second, 'sk_test_second')).body.output as { url: string; thumbnail_url: string };
    await advanceOk(sim, 1, 'sk_test_first');
    expect((await request(sim.app).get('/_sim/clock').query({ api_key: 'sk_test_second' })).status).toBe(200);
    expect((await request(sim.app).get(new URL(media.thumbnail_url).pathname)).status).toBe(200);
    expect((await listVideos(sim, 'sk_test_third')).status).toBe(200);
    // sk_test_second was the least recently used: it is gone, sk_test_first is not.
    expect((await request(sim.app).get(`/_sim/generations/${second}`)).status).toBe(404);
    expect((await request(sim.app).get(new URL(media.url).pathname)).status).toBe(404);
    expect((await request(sim.app).get(`/_sim/generations/${first}`)).status).toBe(200);
  });
});

describe('GET /_sim/health limits', () => {
  it('counts accounts and generations held (in-flight included), and evictions until a global reset', async () => {
    const sim = limited({ max_stored_generations: 2, max_accounts: 2 });
    await createResolved(sim, 'sk_test_h1');
    await createResolved(sim, 'sk_test_h1');
    await createResolved(sim, 'sk_test_h1');
    await createMany(sim, 1, {}, 'sk_test_h2');
    expect(await health(sim)).toEqual({ accounts: 2, stored_generations: 2, evicted_accounts: 0, evicted_generations: 2 });
    await listVideos(sim, 'sk_test_h3');
    expect(await health(sim)).toEqual({ accounts: 2, stored_generations: 1, evicted_accounts: 1, evicted_generations: 2 });
    const reset = await request(sim.app).post('/_sim/reset').send({});
    expect(reset.body.limits).toEqual({ accounts: 0, stored_generations: 0, evicted_accounts: 0, evicted_generations: 0 });
  });

  it('GET /_sim/scenario shows the limits with their defaults', async () => {
    const sim = makeSim({ scenario: 'default' });
    const res = await request(sim.app).get('/_sim/scenario');
    expect(res.body.limits).toEqual({
      max_stored_generations: 8_000,
      max_accounts: 10_000,
      journal_size: 5_000,
      max_idempotency_keys: 2_000,
      max_queued_faults: 10_000,
      max_hung_connections: 1000,
      max_waits: 100,
    });
  });
});

describe('the journal without bodies', () => {
  it('keeps a fingerprint of each body, never its bytes: a rejected body of almost 1 MiB leaves a record as small as any other', async () => {
    const sim = makeSim();
    const big = JSON.stringify({ model: 'video-3.2', prompt: 'x'.repeat(1024 * 1024 - 100) });
    expect(Buffer.byteLength(big)).toBeLessThanOrEqual(1024 * 1024);
    const res = await request(sim.app).post('/v1/videos').set(bearer()).set('Content-Type', 'application/json').send(big);
    expectError(res, 400, 'invalid_request_error', 'invalid_parameter', 'prompt');
    await createVideo(sim);
    const records = sim.core.journal.recordsOf('sk_test_alice');
    expect(records).toHaveLength(2);
    for (const record of records) {
      for (const value of Object.values(record) as unknown[]) {
        expect(value instanceof Uint8Array || value instanceof ArrayBuffer).toBe(false);
        if (typeof value === 'string') expect(value.length).toBeLessThan(100);
      }
      expect(record.bodyFingerprint).toMatch(/^[A-Za-z0-9+/]{43}=$/);
    }
    expect(records[0]?.bodyFingerprint).toBe(bodyFingerprint(Buffer.from(big)));
  });

  it('makes a small body\'s fingerprint only when its record is read: the report and a snapshot get the digest of that body', async () => {
    const sim = makeSim();
    const body = JSON.stringify({ model: 'video-3.2', prompt: PROMPT, negative_prompt: null });
    expect((await request(sim.app).post('/v1/videos').set(bearer()).set('Content-Type', 'application/json').send(body)).status).toBe(200);
    const expected = bodyFingerprint(Buffer.from(body));
    expect(expected).toMatch(/^[A-Za-z0-9+/]{43}=$/);
    const [snapshotted] = sim.core.journal.toState();
    expect(snapshotted?.bodyFingerprint).toBe(expected);
    const [reported] = sim.core.journal.recordsOf('sk_test_alice');
    expect(reported?.bodyFingerprint).toBe(expected);
  });

  it('defers only the digest of a small flat body: a nested body or one over 1 KiB is digested at once, all to the same digest', () => {
    const fingerprintOf = (value: Record<string, unknown>) => {
      const raw = Buffer.from(JSON.stringify(value));
      const kept = journalFingerprint(raw, JSON.parse(raw.toString()) as Record<string, unknown>);
      return { kept, expected: bodyFingerprint(raw) };
    };
    const flat = fingerprintOf({ model: 'video-3.2', prompt: PROMPT, negative_prompt: null });
    expect(typeof flat.kept).toBe('function');
    expect((flat.kept as () => string)()).toBe(flat.expected);
    for (const value of [{ model: 'video-3.2', prompt: PROMPT, extra: { nested: [1, 2] } }, { model: 'video-3.2', prompt: 'x'.repeat(PENDING_FINGERPRINT_BYTES) }]) {
      const { kept, expected } = fingerprintOf(value);
      expect(kept).toBe(expected);
    }
  });

  it('still finds a repeat by its body: the same JSON value in another key order is the same request, another value is not', async () => {
    const sim = makeSim();
    const send = (body: string) => request(sim.app).post('/v1/videos').set(bearer()).set('Content-Type', 'application/json').send(body);
    expect((await send('{"model":"video-9","prompt":"a"}')).status).toBe(400);
    expect((await send('{ "prompt": "a", "model": "video-9" }')).status).toBe(400);
    expect((await send('{"model":"video-9","prompt":"b"}')).status).toBe(400);
    const report = (await request(sim.app).get('/_sim/report').query({ api_key: 'sk_test_alice' })).body;
    expect(report.findings.map((f: { code: string; count: number }) => [f.code, f.count])).toEqual([['retry_not_retryable', 1]]);
  });
});

describe('Journal.forget', () => {
  const record = (n: number, account: string | null) => journalRecord({ request_id: `req_${n}`, account });

  it('frees the forgotten records’ places: the journal still keeps its size of the others', () => {
    const journal = new Journal(3);
    journal.record(record(1, 'sk_test_b'));
    journal.record(record(2, 'sk_test_a'));
    journal.record(record(3, 'sk_test_a'));
    journal.forget('sk_test_a');
    journal.record(record(4, 'sk_test_b'));
    journal.record(record(5, null));
    expect(journal.recent(10).data.map((e) => e.request_id)).toEqual(['req_1', 'req_4', 'req_5']);
    journal.record(record(6, 'sk_test_a'));
    expect(journal.recent(10).data.map((e) => e.request_id)).toEqual(['req_4', 'req_5', 'req_6']);
    expect(journal.recordsOf('sk_test_a').map((e) => e.request_id)).toEqual(['req_6']);
  });

  it('keeps the right records through many accounts forgotten and batches released', () => {
    const journal = new Journal(100);
    for (let n = 0; n < 20_000; n++) {
      journal.record(record(n, `sk_test_${n % 150}`));
      if (n % 3 === 0) journal.forget(`sk_test_${(n + 7) % 150}`);
    }
    // The reference: the same, done the plain way.
    const kept: { n: number; account: string }[] = [];
    for (let n = 0; n < 20_000; n++) {
      kept.push({ n, account: `sk_test_${n % 150}` });
      if (kept.length > 100) kept.shift();
      if (n % 3 === 0) {
        const gone = `sk_test_${(n + 7) % 150}`;
        kept.splice(0, kept.length, ...kept.filter((k) => k.account !== gone));
      }
    }
    expect(journal.recent(1000).data.map((e) => e.request_id)).toEqual(kept.map((k) => `req_${k.n}`));
  });
});
