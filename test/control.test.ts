/**
 * The control endpoints under /_sim (docs/control-api.md),
 * in-process through supertest on the manual clock.
 */
import request from 'supertest';
import { describe, expect, it } from 'vitest';

import { loadScenario, type Scenario } from '../src/index.js';
import type { JournalEntry } from '../src/core/journal/journal.js';
import { PROMPT, advance, bearer, createVideo, expectError, getVideo, makeSim, postFault, queueFault, type SimGeneration } from './helpers.js';

const START = '2026-01-01T00:00:00.000Z';
const ISO_MS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

function at(ms: number): string {
  return new Date(Date.parse(START) + ms).toISOString();
}

function noRateLimitHeaders(headers: Record<string, unknown>): void {
  for (const name of Object.keys(headers)) expect(name.toLowerCase()).not.toMatch(/^x-ratelimit-|^retry-after$/);
}

// ---------------------------------------------------------------------------------------------

describe('GET /_sim/health', () => {
  it('answers status ok with the scenario, the seed and the manual clock at the scenario start', async () => {
    const sim = makeSim();
    const res = await request(sim.app).get('/_sim/health');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      status: 'ok',
      scenario: 'fast',
      seed: loadScenario('fast').seed,
      clock: { mode: 'manual', now: START, speed: 1 },
      limits: { accounts: 0, stored_generations: 0, evicted_accounts: 0, evicted_generations: 0 },
      network: { hung: 0 },
      shard: null,
      // Not listening: the simulator's own media address, whatever the Host.
      media: { url: 'http://localhost/cdn', follows_host: false },
    });
    expect(res.body.clock.now).toMatch(ISO_MS);
    expect(res.headers['x-request-id']).toBe('req_0000000001');
  });

  it('needs no API key and sends no rate-limit headers', async () => {
    const sim = makeSim();
    const anonymous = await request(sim.app).get('/_sim/health');
    expect(anonymous.status).toBe(200);
    noRateLimitHeaders(anonymous.headers);
    const withKey = await request(sim.app).get('/_sim/health').set(bearer());
    expect(withKey.status).toBe(200);
    noRateLimitHeaders(withKey.headers);
    const badKey = await request(sim.app).get('/_sim/health').set('Authorization', 'Bearer nope');
    expect(badKey.status).toBe(200);
  });

  it('reports the seed given to the simulator', async () => {
    const sim = makeSim({ seed: 1234 });
    const res = await request(sim.app).get('/_sim/health');
    expect(res.body.seed).toBe(1234);
  });
});

describe('GET /_sim/clock', () => {
  it('answers mode, now and speed', async () => {
    const sim = makeSim();
    const res = await request(sim.app).get('/_sim/clock');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ mode: 'manual', now: START, speed: 1 });
    noRateLimitHeaders(res.headers);
  });

  it("answers the global clock for a key never used, and an account's own clock after it moved", async () => {
    const sim = makeSim();
    await advance(sim, 30, 'sk_test_bob').expect(200);
    expect((await request(sim.app).get('/_sim/clock')).body.now).toBe(START);
    expect((await request(sim.app).get('/_sim/clock').query({ api_key: 'sk_test_never' })).body.now).toBe(START);
    expect((await request(sim.app).get('/_sim/clock').query({ api_key: 'sk_test_bob' })).body.now).toBe(at(30_000));
  });
});

describe('POST /_sim/clock/advance', () => {
  it('moves now by exactly 1500 ms for 1.5 seconds and answers the clock', async () => {
    const sim = makeSim();
    const res = await advance(sim, 1.5);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ mode: 'manual', now: at(1500), speed: 1 });
    expect((await request(sim.app).get('/_sim/clock')).body.now).toBe(at(1500));
    noRateLimitHeaders(res.headers);
  });

  it('keeps millisecond precision (0.001 s) and adds up successive advances', async () => {
    const sim = makeSim();
    expect((await advance(sim, 0.001)).body.now).toBe('2026-01-01T00:00:00.001Z');
    expect((await advance(sim, 0.001)).body.now).toBe('2026-01-01T00:00:00.002Z');
    expect((await advance(sim, 0)).body.now).toBe('2026-01-01T00:00:00.002Z');
    expect((await advance(sim, 120)).body.now).toBe('2026-01-01T00:02:00.002Z');
  });

  it('refuses a negative number of seconds with 400 param seconds', async () => {
    const sim = makeSim();
    expectError(await advance(sim, -1), 400, 'invalid_request_error', 'invalid_parameter', 'seconds');
    expect((await request(sim.app).get('/_sim/clock')).body.now).toBe(START);
  });

  it('refuses seconds that is not a number with 400 param seconds', async () => {
    const sim = makeSim();
    const res = await request(sim.app).post('/_sim/clock/advance').send({ seconds: 'x' });
    expectError(res, 400, 'invalid_request_error', 'invalid_parameter', 'seconds');
  });

  it('refuses a missing seconds with 400 param seconds', async () => {
    const sim = makeSim();
    const res = await request(sim.app).post('/_sim/clock/advance').send({});
    expectError(res, 400, 'invalid_request_error', 'missing_parameter', 'seconds');
  });

  it("with api_key answers and moves only that account's clock", async () => {
    const sim = makeSim();
    const res = await advance(sim, 45, 'sk_test_bob');
    expect(res.status).toBe(200);
    expect(res.body.now).toBe(at(45_000));
    expect((await request(sim.app).get('/_sim/clock')).body.now).toBe(START);
    // The account's requests happen at its own time.
    const created = await createVideo(sim, {}, 'sk_test_bob');
    expect(created.status).toBe(200);
    expect(created.body.created_at).toBe(at(45_000));
    const alice = await createVideo(sim, {}, 'sk_test_alice');
    expect(alice.body.created_at).toBe(START);
  });

  it('jumps forward in realtime mode too', async () => {
    // The wall clock stands still unless the test moves it.
    const wallMs = Date.parse('2030-01-01T00:00:00Z');
    const sim = makeSim({ clock: 'realtime', now: () => wallMs });
    const before = Date.parse((await request(sim.app).get('/_sim/clock')).body.now);
    const res = await advance(sim, 3600);
    expect(res.status).toBe(200);
    expect(res.body.mode).toBe('realtime');
    expect(Date.parse(res.body.now) - before).toBe(3_600_000);
  });

  it('applies transitions in time order: a later, shorter generation completes first, each at its own due time', async () => {
    const fast = loadScenario('fast');
    const scenario: Scenario = {
      ...fast,
      keyframe_first_share: 0,
      stages: {
        ...fast.stages,
        queue: { duration: { type: 'fixed', value: 1 } },
        routing: { duration: { type: 'fixed', value: 0.5 } },
        render: { duration: { type: 'fixed', value: 0.5 }, per_output_second: true },
        output_verification: { duration: { type: 'fixed', value: 0.5 } },
      },
    };
    const sim = makeSim({ scenario });
    // Long: 1 + 0.5 + 16 * 0.5 + 0.5 = 10 s, created at 0.
    const long = await createVideo(sim, { duration_seconds: 16 });
    expect(long.status).toBe(200);
    await advance(sim, 1).expect(200);
    // Short: 1 + 0.5 + 4 * 0.5 + 0.5 = 4 s, created at 1 s.
    const short = await createVideo(sim, { duration_seconds: 4 });
    expect(short.status).toBe(200);
    await advance(sim, 30).expect(200);

    const longView = (await getVideo(sim, long.body.id)).body;
    const shortView = (await getVideo(sim, short.body.id)).body;
    expect(longView.status).toBe('succeeded');
    expect(shortView.status).toBe('succeeded');
    expect(shortView.completed_at).toBe(at(5_000));
    expect(longView.completed_at).toBe(at(10_000));
    expect(Date.parse(shortView.completed_at)).toBeLessThan(Date.parse(longView.completed_at));

    const history = (await request(sim.app).get(`/_sim/generations/${short.body.id}`)).body.stages as SimGeneration['stages'];
    expect(history).toEqual([
      { stage: 'claim_linking', entered_at: at(1000), left_at: at(1000) },
      { stage: 'queue', entered_at: at(1000), left_at: at(2000) },
      { stage: 'routing', entered_at: at(2000), left_at: at(2500) },
      { stage: 'render', entered_at: at(2500), left_at: at(4500) },
      { stage: 'output_verification', entered_at: at(4500), left_at: at(5000) },
    ]);

    // Completion order across the simulator follows time, not creation.
    const succeeded = (await request(sim.app).get('/_sim/generations').query({ status: 'succeeded' })).body
      .data as SimGeneration[];
    const byCompletion = [...succeeded].sort((a, b) => Date.parse(a.completed_at!) - Date.parse(b.completed_at!));
    expect(byCompletion.map((g) => g.id)).toEqual([short.body.id, long.body.id]);
  });

  it('stops each generation exactly where the clock stands when an advance ends mid-pipeline', async () => {
    const sim = makeSim();
    const created = await createVideo(sim, { duration_seconds: 16 });
    await advance(sim, 0.1).expect(200);
    const queued = (await request(sim.app).get(`/_sim/generations/${created.body.id}`)).body as SimGeneration;
    expect(queued.status).toBe('queued');
    expect(queued.stages.at(-1)).toEqual({ stage: 'queue', entered_at: START, left_at: null });
  });
});

// ---------------------------------------------------------------------------------------------

describe('POST /_sim/reset', () => {
  it('drops every generation and brings the clock back to the scenario start', async () => {
    const sim = makeSim();
    const created = await createVideo(sim);
    expect(created.status).toBe(200);
    await advance(sim, 100).expect(200);
    await advance(sim, 50, 'sk_test_alice').expect(200);
    const res = await request(sim.app).post('/_sim/reset').send({});
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      status: 'ok',
      scenario: 'fast',
      seed: loadScenario('fast').seed,
      clock: { mode: 'manual', now: START, speed: 1 },
      limits: { accounts: 0, stored_generations: 0, evicted_accounts: 0, evicted_generations: 0 },
      network: { hung: 0 },
      shard: null,
    });
    expectError(await getVideo(sim, created.body.id), 404, 'invalid_request_error', 'resource_not_found', 'id');
    expect((await request(sim.app).get('/_sim/clock').query({ api_key: 'sk_test_alice' })).body.now).toBe(START);
    expect((await request(sim.app).get('/_sim/generations')).body.data).toEqual([]);
    const journal = (await request(sim.app).get('/_sim/requests')).body.data as JournalEntry[];
    expect(journal.map((e) => e.path)).toEqual(['/v1/videos/' + created.body.id]);
  });

  it('drops queued faults', async () => {
    const sim = makeSim();
    await queueFault(sim, { path: '/v1/videos', status: 500, times: 3 });
    await request(sim.app).post('/_sim/reset').send({}).expect(200);
    expect((await createVideo(sim)).status).toBe(200);
    expect((await postFault(sim, { path: '/v1/videos', status: 500 })).body).toEqual({ queued: 1 });
  });

  it('works with no body at all, as `curl -X POST` sends it', async () => {
    const sim = makeSim();
    await advance(sim, 10).expect(200);
    const res = await request(sim.app).post('/_sim/reset');
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('ok');
    expect(res.body.clock.now).toBe(START);
  });

  it('with a seed changes health.seed and the ids drawn, and the same seed gives the same ids again', async () => {
    const sim = makeSim();
    const first = (await createVideo(sim)).body.id as string;
    const res = await request(sim.app).post('/_sim/reset').send({ seed: 7 });
    expect(res.status).toBe(200);
    expect(res.body.seed).toBe(7);
    expect((await request(sim.app).get('/_sim/health')).body.seed).toBe(7);
    const seven = (await createVideo(sim)).body.id as string;
    expect(seven).not.toBe(first);
    await request(sim.app).post('/_sim/reset').send({ seed: 7 }).expect(200);
    expect((await createVideo(sim)).body.id).toBe(seven);
  });

  it('with a scenario switches to it and keeps the manual clock given to the simulator', async () => {
    const sim = makeSim();
    const res = await request(sim.app).post('/_sim/reset').send({ scenario: 'default' });
    expect(res.status).toBe(200);
    expect(res.body.scenario).toBe('default');
    expect(res.body.clock.mode).toBe('manual');
    expect((await request(sim.app).get('/_sim/health')).body.scenario).toBe('default');
    expect((await request(sim.app).get('/_sim/scenario')).body.name).toBe('default');
  });

  it('refuses an unknown scenario name with 400 param scenario and keeps the current one', async () => {
    const sim = makeSim();
    const res = await request(sim.app).post('/_sim/reset').send({ scenario: 'no-such-scenario' });
    expectError(res, 400, 'invalid_request_error', 'invalid_parameter', 'scenario');
    expect((await request(sim.app).get('/_sim/health')).body.scenario).toBe('fast');
  });

  it("with api_key drops only that account's state and offset", async () => {
    const sim = makeSim();
    const alice = (await createVideo(sim, {}, 'sk_test_alice')).body.id as string;
    const bob = (await createVideo(sim, {}, 'sk_test_bob')).body.id as string;
    await advance(sim, 20, 'sk_test_bob').expect(200);
    const res = await request(sim.app).post('/_sim/reset').send({ api_key: 'sk_test_bob' });
    expect(res.status).toBe(200);
    expectError(await getVideo(sim, bob, 'sk_test_bob'), 404, 'invalid_request_error', 'resource_not_found', 'id');
    expect((await getVideo(sim, alice, 'sk_test_alice')).status).toBe(200);
    expect((await request(sim.app).get('/_sim/clock').query({ api_key: 'sk_test_bob' })).body.now).toBe(START);
    // As if never used: the same first id again.
    expect((await createVideo(sim, {}, 'sk_test_bob')).body.id).toBe(bob);
  });

  it('refuses a seed beside api_key with 400', async () => {
    const sim = makeSim();
    const res = await request(sim.app).post('/_sim/reset').send({ api_key: 'sk_test_bob', seed: 3 });
    expectError(res, 400, 'invalid_request_error', 'invalid_parameter', 'seed');
  });
});

// ---------------------------------------------------------------------------------------------

describe('GET /_sim/scenario', () => {
  it('answers the resolved scenario, extends applied, with the clock mode the simulator was given', async () => {
    const sim = makeSim(); // fast, on the manual clock
    const res = await request(sim.app).get('/_sim/scenario');
    expect(res.status).toBe(200);
    const fast = loadScenario('fast');
    expect(fast.clock.mode).toBe('realtime');
    expect(res.body).toEqual(JSON.parse(JSON.stringify({ ...fast, clock: { ...fast.clock, mode: 'manual' } })));
    expect(res.body.name).toBe('fast');
    expect(Object.keys(res.body.stages)).toEqual(['queue', 'keyframe', 'routing', 'render', 'output_verification']);
    // Inherited from default through extends.
    expect(res.body.models.video).toEqual(['video-3.0', 'video-3.1', 'video-3.2']);
  });
});

describe('GET /_sim/scenarios', () => {
  it('answers the bundled scenarios by name, each with its purpose in one line', async () => {
    const sim = makeSim();
    const res = await request(sim.app).get('/_sim/scenarios');
    expect(res.status).toBe(200);
    noRateLimitHeaders(res.headers);
    expect(res.body.object).toBe('list');
    const data = res.body.data as { name: string; purpose: string }[];
    expect(data.map((s) => s.name)).toEqual(['compliance', 'default', 'fast', 'flaky', 'low-balance', 'rate-limited', 'slow', 'unreliable-network']);
    expect(data.find((s) => s.name === 'fast')).toEqual({
      name: 'fast',
      purpose: 'the happy path at CI speed; every generation resolves within 10 virtual seconds, nothing injected.',
    });
    for (const s of data) expect(s.purpose).toMatch(/^\S.*\.$/);
  });
});

describe('GET /_sim/pipeline', () => {
  it('answers the six stages in order with the status shown in each, the field each fills, whether it can fail or be canceled and the codes of a failure there', async () => {
    const sim = makeSim();
    const res = await request(sim.app).get('/_sim/pipeline');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      object: 'list',
      data: [
        { name: 'claim_linking', status: null, fills: null, failable: false, cancelable: false, failure_codes: ['claim_linking_rejected'] },
        { name: 'queue', status: 'queued', fills: null, failable: false, cancelable: true, failure_codes: [] },
        { name: 'keyframe', status: 'processing', fills: 'keyframe', failable: true, cancelable: true, failure_codes: ['keyframe_failed', 'upstream_timeout', 'internal_error'] },
        { name: 'routing', status: 'processing', fills: 'routed_model', failable: true, cancelable: true, failure_codes: ['routing_failed', 'upstream_timeout', 'internal_error'] },
        { name: 'render', status: 'processing', fills: null, failable: true, cancelable: true, failure_codes: ['render_failed', 'upstream_timeout', 'internal_error'] },
        { name: 'output_verification', status: 'verifying', fills: 'compliance', failable: false, cancelable: false, failure_codes: ['output_rejected'] },
      ],
    });
  });
});

// ---------------------------------------------------------------------------------------------

describe('GET /_sim/requests', () => {
  it('shows the error code of each error answer, and none on a success', async () => {
    const sim = makeSim();
    await createVideo(sim);
    await getVideo(sim, 'vid_missing');
    await request(sim.app).post('/v1/videos').set(bearer()).send({ prompt: PROMPT });
    const journal = (await request(sim.app).get('/_sim/requests')).body.data as JournalEntry[];
    expect(journal.map((e) => [e.status, e.error_code])).toEqual([
      [200, undefined],
      [404, 'resource_not_found'],
      [400, 'missing_parameter'],
    ]);
  });

  it('records /v1 requests oldest first with method, path and query, status, account, time and request id', async () => {
    const sim = makeSim();
    const created = await createVideo(sim);
    await advance(sim, 2).expect(200);
    const listed = await request(sim.app).get('/v1/videos?limit=5&status=queued').set(bearer());
    const anonymous = await request(sim.app).get('/v1/videos');
    expect(anonymous.status).toBe(401);
    const res = await request(sim.app).get('/_sim/requests');
    expect(res.status).toBe(200);
    noRateLimitHeaders(res.headers);
    expect(res.body.object).toBe('list');
    expect(res.body.has_more).toBe(false);
    const data = res.body.data as JournalEntry[];
    expect(data).toHaveLength(3);
    expect(data[0]).toMatchObject({ method: 'POST', path: '/v1/videos', status: 200, account: 'sk_test_alice', at: START });
    expect(data[0]!.request_id).toBe(created.headers['x-request-id']);
    // A create carries its effective negative prompt (none here); other requests do not.
    expect(data[0]).toHaveProperty('negative_prompt_effective', null);
    expect(data[1]).not.toHaveProperty('negative_prompt_effective');
    expect(data[1]).toMatchObject({
      method: 'GET',
      path: '/v1/videos?limit=5&status=queued',
      status: 200,
      account: 'sk_test_alice',
      at: at(2000),
    });
    expect(data[1]!.request_id).toBe(listed.headers['x-request-id']);
    expect(data[2]).toMatchObject({ method: 'GET', path: '/v1/videos', status: 401, account: null, at: at(2000) });
    expect(data[2]!.request_id).toBe(anonymous.headers['x-request-id']);
    for (const e of data) expect(e.at).toMatch(ISO_MS);
  });

  it('does not record /_sim requests', async () => {
    const sim = makeSim();
    await request(sim.app).get('/_sim/health').expect(200);
    await advance(sim, 1).expect(200);
    expect((await request(sim.app).get('/_sim/requests')).body.data).toEqual([]);
  });

  it("records each request at its account's virtual time", async () => {
    const sim = makeSim();
    await advance(sim, 60, 'sk_test_bob').expect(200);
    await request(sim.app).get('/v1/videos').set(bearer('sk_test_bob')).expect(200);
    await request(sim.app).get('/v1/videos').set(bearer('sk_test_alice')).expect(200);
    const data = (await request(sim.app).get('/_sim/requests')).body.data as JournalEntry[];
    expect(data.map((e) => [e.account, e.at])).toEqual([
      ['sk_test_bob', at(60_000)],
      ['sk_test_alice', START],
    ]);
  });

  it("shows a create's effective negative prompt: the account default merged with the request's", async () => {
    const scenario: Scenario = { ...loadScenario('fast'), accounts: { sk_test_np: { negative_prompt: 'blurry' } } };
    const sim = makeSim({ scenario });
    const created = await createVideo(sim, { negative_prompt: 'text' }, 'sk_test_np');
    expect(created.status).toBe(200);
    expect(created.body.negative_prompt).toBe('text');
    const bare = await createVideo(sim, {}, 'sk_test_np');
    expect(bare.body.negative_prompt).toBeNull();
    const other = await createVideo(sim, { negative_prompt: 'text' }, 'sk_test_plain');
    expect(other.status).toBe(200);
    const data = (await request(sim.app).get('/_sim/requests')).body.data as JournalEntry[];
    expect(data.map((e) => e.negative_prompt_effective)).toEqual(['blurry, text', 'blurry', 'text']);
  });

  it('filters by api_key', async () => {
    const sim = makeSim();
    await createVideo(sim, {}, 'sk_test_alice');
    await createVideo(sim, {}, 'sk_test_bob');
    await request(sim.app).get('/v1/videos').set(bearer('sk_test_alice')).expect(200);
    const res = await request(sim.app).get('/_sim/requests').query({ api_key: 'sk_test_alice' });
    const data = res.body.data as JournalEntry[];
    expect(data.map((e) => [e.method, e.account])).toEqual([
      ['POST', 'sk_test_alice'],
      ['GET', 'sk_test_alice'],
    ]);
  });

  it('with limit gives the most recent N, oldest first, and says there are more', async () => {
    const sim = makeSim();
    for (let i = 1; i <= 5; i++) await request(sim.app).get(`/v1/videos?limit=${i}`).set(bearer()).expect(200);
    const res = await request(sim.app).get('/_sim/requests').query({ limit: 2 });
    expect(res.status).toBe(200);
    expect((res.body.data as JournalEntry[]).map((e) => e.path)).toEqual(['/v1/videos?limit=4', '/v1/videos?limit=5']);
    expect(res.body.has_more).toBe(true);
  });

  it('refuses a limit outside 1-10000 with 400 param limit', async () => {
    const sim = makeSim();
    expectError(await request(sim.app).get('/_sim/requests?limit=0'), 400, 'invalid_request_error', 'invalid_parameter', 'limit');
    expectError(await request(sim.app).get('/_sim/requests?limit=x'), 400, 'invalid_request_error', 'invalid_parameter', 'limit');
  });

  it('journals a faulted request, which creates nothing', async () => {
    const sim = makeSim();
    await queueFault(sim, { path: '/v1/videos', method: 'POST', status: 500 });
    const faulted = await createVideo(sim);
    expectError(faulted, 500, 'api_error', 'internal_error');
    const data = (await request(sim.app).get('/_sim/requests')).body.data as JournalEntry[];
    expect(data).toHaveLength(1);
    expect(data[0]).toMatchObject({ method: 'POST', path: '/v1/videos', status: 500, account: 'sk_test_alice' });
    expect(data[0]!.request_id).toBe(faulted.headers['x-request-id']);
    expect((await request(sim.app).get('/_sim/generations')).body.data).toEqual([]);
  });
});

// ---------------------------------------------------------------------------------------------

describe('POST /_sim/faults', () => {
  it('answers the number of shots waiting in all', async () => {
    const sim = makeSim();
    const first = await postFault(sim, { path: '/v1/videos', method: 'POST', status: 500, times: 2 });
    expect(first.status).toBe(200);
    expect(first.body).toEqual({ queued: 2 });
    noRateLimitHeaders(first.headers);
    const second = await postFault(sim, { path: '/v1/videos/*', status: 429, api_key: 'sk_test_bob' });
    expect(second.body).toEqual({ queued: 3 });
    // One shot is spent.
    expectError(await createVideo(sim), 500, 'api_error', 'internal_error');
    const third = await postFault(sim, { path: '/v1/images', status: 402 });
    expect(third.body).toEqual({ queued: 3 });
  });

  it('gives the queued error to the next matching request only', async () => {
    const sim = makeSim();
    await queueFault(sim, { path: '/v1/videos', method: 'POST', status: 429 });
    const limited = await createVideo(sim);
    expectError(limited, 429, 'rate_limit_error', 'rate_limit_exceeded');
    expect(limited.headers['retry-after']).toBe('1');
    expect((await createVideo(sim)).status).toBe(200);
  });
});

// ---------------------------------------------------------------------------------------------

describe('GET /_sim/generations', () => {
  it('lists generations across accounts in creation order with account and stage history', async () => {
    const sim = makeSim();
    const a = (await createVideo(sim, {}, 'sk_test_alice')).body.id as string;
    const b = (await createVideo(sim, {}, 'sk_test_bob')).body.id as string;
    const c = (await createVideo(sim, {}, 'sk_test_alice')).body.id as string;
    const res = await request(sim.app).get('/_sim/generations');
    expect(res.status).toBe(200);
    noRateLimitHeaders(res.headers);
    expect(res.body.object).toBe('list');
    expect(res.body.has_more).toBe(false);
    const data = res.body.data as SimGeneration[];
    expect(data.map((g) => [g.id, g.account])).toEqual([
      [a, 'sk_test_alice'],
      [b, 'sk_test_bob'],
      [c, 'sk_test_alice'],
    ]);
    for (const g of data) {
      expect(g.status).toBe('queued');
      expect(g.stages[0]).toEqual({ stage: 'claim_linking', entered_at: g.created_at, left_at: g.created_at });
      expect(g.stages[1]).toEqual({ stage: 'queue', entered_at: g.created_at, left_at: null });
    }
    // The video fields are those of the account's own view.
    const own = (await getVideo(sim, a)).body as Record<string, unknown>;
    const { account: _account, stages: _stages, ...videoPart } = data[0] as unknown as Record<string, unknown>;
    expect(videoPart).toEqual(own);
  });

  it("records a resolved generation's whole stage history, each stage entered where the previous one was left", async () => {
    const sim = makeSim();
    const id = (await createVideo(sim)).body.id as string;
    await advance(sim, 10).expect(200);
    const g = (await request(sim.app).get(`/_sim/generations/${id}`)).body as SimGeneration;
    expect(g.status).toBe('succeeded');
    const names = g.stages.map((s) => s.stage);
    expect(names[0]).toBe('claim_linking');
    expect(names.at(-1)).toBe('output_verification');
    expect(names.filter((n) => n !== 'keyframe')).toEqual(['claim_linking', 'queue', 'routing', 'render', 'output_verification']);
    for (let i = 1; i < g.stages.length; i++) expect(g.stages[i]!.entered_at).toBe(g.stages[i - 1]!.left_at);
    expect(g.stages.at(-1)!.left_at).toBe(g.completed_at);
  });

  it('filters by api_key and by status', async () => {
    const sim = makeSim();
    const done = (await createVideo(sim, {}, 'sk_test_alice')).body.id as string;
    await advance(sim, 10).expect(200);
    const fresh = (await createVideo(sim, {}, 'sk_test_alice')).body.id as string;
    const bobs = (await createVideo(sim, {}, 'sk_test_bob')).body.id as string;
    const ids = async (query: Record<string, string>) =>
      ((await request(sim.app).get('/_sim/generations').query(query)).body.data as SimGeneration[]).map((g) => g.id);
    expect(await ids({ api_key: 'sk_test_bob' })).toEqual([bobs]);
    expect(await ids({ api_key: 'sk_test_alice' })).toEqual([done, fresh]);
    expect(await ids({ status: 'succeeded' })).toEqual([done]);
    expect(await ids({ status: 'queued' })).toEqual([fresh, bobs]);
    expect(await ids({ status: 'queued', api_key: 'sk_test_alice' })).toEqual([fresh]);
    expect(await ids({ status: 'failed' })).toEqual([]);
  });

  it('pages with limit and after', async () => {
    const sim = makeSim();
    const all: string[] = [];
    for (let i = 0; i < 5; i++) all.push((await createVideo(sim, {}, i % 2 ? 'sk_test_bob' : 'sk_test_alice')).body.id);
    const first = await request(sim.app).get('/_sim/generations').query({ limit: 2 });
    expect((first.body.data as SimGeneration[]).map((g) => g.id)).toEqual(all.slice(0, 2));
    expect(first.body.has_more).toBe(true);
    const second = await request(sim.app).get('/_sim/generations').query({ limit: 2, after: all[1] });
    expect((second.body.data as SimGeneration[]).map((g) => g.id)).toEqual(all.slice(2, 4));
    expect(second.body.has_more).toBe(true);
    const last = await request(sim.app).get('/_sim/generations').query({ limit: 2, after: all[3] });
    expect((last.body.data as SimGeneration[]).map((g) => g.id)).toEqual(all.slice(4));
    expect(last.body.has_more).toBe(false);
  });

  it('refuses a bad limit or an unknown status with 400 naming the parameter', async () => {
    const sim = makeSim();
    expectError(await request(sim.app).get('/_sim/generations?limit=0'), 400, 'invalid_request_error', 'invalid_parameter', 'limit');
    expectError(await request(sim.app).get('/_sim/generations?status=done'), 400, 'invalid_request_error', 'invalid_parameter', 'status');
  });

  it('refuses an unknown after with 400 param after', async () => {
    const sim = makeSim();
    await createVideo(sim);
    const res = await request(sim.app).get('/_sim/generations').query({ after: 'vid_unknown' });
    expectError(res, 400, 'invalid_request_error', 'invalid_parameter', 'after');
  });

  it('with changed_since answers only what changed since that cursor, in the order of the latest change', async () => {
    const sim = makeSim();
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await createVideo(sim)).body.id as string);
    const [a, , c] = ids as [string, string, string];
    const cursor = (await request(sim.app).get('/_sim/generations')).body.cursor as number;
    const changed = async (since: number, query: Record<string, string | number> = {}) => {
      const res = await request(sim.app).get('/_sim/generations').query({ changed_since: since, ...query });
      expect(res.status).toBe(200);
      return { ids: (res.body.data as SimGeneration[]).map((g) => g.id), cursor: res.body.cursor as number, hasMore: res.body.has_more as boolean };
    };
    expect(await changed(cursor)).toEqual({ ids: [], cursor, hasMore: false });
    await request(sim.app).delete(`/v1/videos/${c}`).set(bearer()).expect(200);
    await request(sim.app).delete(`/v1/videos/${a}`).set(bearer()).expect(200);
    const d = (await createVideo(sim)).body.id as string;
    const after = await changed(cursor);
    expect(after.ids).toEqual([c, a, d]);
    expect(after.cursor).toBeGreaterThan(cursor);
    expect((await changed(after.cursor)).ids).toEqual([]);
    // Cut by limit, the cursor continues the page.
    const first = await changed(cursor, { limit: 2 });
    expect(first).toMatchObject({ ids: [c, a], hasMore: true });
    expect(await changed(first.cursor, { limit: 2 })).toEqual({ ids: [d], cursor: after.cursor, hasMore: false });
  });

  it('with changed_since and after answers what changed among the generations created after that one', async () => {
    const sim = makeSim();
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) ids.push((await createVideo(sim)).body.id as string);
    const [a, b, c, d] = ids as [string, string, string, string];
    const cursor = (await request(sim.app).get('/_sim/generations')).body.cursor as number;
    for (const id of [d, a, c]) await request(sim.app).delete(`/v1/videos/${id}`).set(bearer()).expect(200);
    const changed = async (query: Record<string, string>) =>
      ((await request(sim.app).get('/_sim/generations').query({ changed_since: cursor, ...query }).expect(200)).body.data as SimGeneration[]).map((g) => g.id);
    expect(await changed({})).toEqual([d, a, c]);
    expect(await changed({ after: a })).toEqual([d, c]);
    expect(await changed({ after: b })).toEqual([d, c]);
    expect(await changed({ after: c })).toEqual([d]);
    expect(await changed({ after: d })).toEqual([]);
    expect(await changed({ after: b, status: 'canceled', limit: '1' })).toEqual([d]);
  });

  it("refuses changed_since with a cursor of another list (the list across accounts, another account's) with 400 param changed_since", async () => {
    const sim = makeSim();
    const alice = 'sk_test_alice';
    const bob = 'sk_test_bob';
    for (let i = 0; i < 3; i++) await createVideo(sim, {}, alice);
    await createVideo(sim, {}, bob);
    const list = async (query: Record<string, string | number>) => request(sim.app).get('/_sim/generations').query(query);
    const global = (await list({})).body.cursor as number;
    const ofAlice = (await list({ api_key: alice })).body.cursor as number;
    const ofBob = (await list({ api_key: bob })).body.cursor as number;
    const refused = [
      [{ api_key: alice, changed_since: global }, "this api_key's generations"],
      [{ api_key: alice, changed_since: ofBob }, "this api_key's generations"],
      [{ changed_since: ofAlice }, "every account's generations"],
    ] as const;
    for (const [query, list_] of refused) {
      const res = await list(query);
      expectError(res, 400, 'invalid_request_error', 'invalid_parameter', 'changed_since');
      expect(res.body.error.message).toContain(`not a cursor of this list (${list_})`);
    }
    // Each list takes its own cursor, and 0 (every change).
    const taken: Record<string, string | number>[] = [
      { api_key: alice, changed_since: ofAlice },
      { api_key: bob, changed_since: ofBob },
      { changed_since: global },
      { changed_since: 0 },
      { api_key: bob, changed_since: 0 },
    ];
    for (const query of taken) {
      expect((await list(query)).status).toBe(200);
    }
    expect((await list({ api_key: alice, changed_since: 0 })).body.data).toHaveLength(3);
  });

  it('with changed_since still refuses an unknown after with 400 param after', async () => {
    const sim = makeSim();
    await createVideo(sim);
    const res = await request(sim.app).get('/_sim/generations').query({ changed_since: 0, after: 'vid_unknown' });
    expectError(res, 400, 'invalid_request_error', 'invalid_parameter', 'after');
  });
});

describe('GET /_sim/generations/{id}', () => {
  it('answers one generation of any account, without a key', async () => {
    const sim = makeSim();
    const created = await createVideo(sim, { prompt: PROMPT, duration_seconds: 12 }, 'sk_test_carol');
    const res = await request(sim.app).get(`/_sim/generations/${created.body.id}`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: created.body.id, account: 'sk_test_carol', duration_seconds: 12, status: 'queued' });
    expect(res.body.stages[0].stage).toBe('claim_linking');
  });

  it('answers 404 resource_not_found for an unknown id', async () => {
    const sim = makeSim();
    const res = await request(sim.app).get('/_sim/generations/vid_doesnotexist');
    expectError(res, 404, 'invalid_request_error', 'resource_not_found', 'id');
  });
});

describe('unknown /_sim routes', () => {
  it('answers 404 unknown_route with param null, without a key', async () => {
    const sim = makeSim();
    expectError(await request(sim.app).get('/_sim/nope'), 404, 'invalid_request_error', 'unknown_route', null);
    expectError(await request(sim.app).delete('/_sim/health'), 404, 'invalid_request_error', 'unknown_route', null);
  });
});

describe('determinism of the control answers', () => {
  it('the journal of an account is byte-identical after a reset and whatever other accounts do', async () => {
    const sim = makeSim();
    const script = async (noisy: boolean) => {
      await request(sim.app).post('/_sim/reset').send({});
      if (noisy) await createVideo(sim, {}, 'sk_test_noise');
      await createVideo(sim, {}, 'sk_test_script');
      if (noisy) await request(sim.app).get('/v1/videos').set(bearer('sk_test_noise'));
      await request(sim.app).get('/v1/videos').set(bearer('sk_test_script'));
      await request(sim.app).get('/v1/videos/nope').set(bearer('sk_test_script'));
      // Every field but `seq`, the simulator's arrival number (it counts every account's requests, resets included).
      const { data } = (await request(sim.app).get('/_sim/requests').query({ api_key: 'sk_test_script' })).body as { data: { seq: number }[] };
      expect(data.map((e) => e.seq)).toEqual([...data.map((e) => e.seq)].sort((a, b) => a - b));
      return JSON.stringify({ data: data.map(({ seq: _seq, ...e }) => e) });
    };
    const quiet = await script(false);
    expect(await script(false)).toBe(quiet);
    expect(await script(true)).toBe(quiet);
    expect(JSON.parse(quiet).data.map((e: { request_id: string }) => e.request_id)).toEqual([
      // req_, a tag of the key (never the key itself), the account's count
      'req_fee156ca_000001',
      'req_fee156ca_000002',
      'req_fee156ca_000003',
    ]);
  });

  it('a queued error that an operation does not document (402 on a GET) never hits it, only operations that document it', async () => {
    const sim = makeSim();
    await queueFault(sim, { path: '/v1/*', status: 402 });
    expect((await request(sim.app).get('/v1/videos').set(bearer())).status).toBe(200);
    expect((await request(sim.app).get('/_sim/generations')).status).toBe(200);
    expectError(await createVideo(sim), 402, 'insufficient_balance', 'insufficient_balance');
    expect((await createVideo(sim)).status).toBe(200);
  });

  it('queued faults default their param and stage as the catalogue does', async () => {
    const sim = makeSim();
    await queueFault(sim, { path: '/v1/videos', method: 'GET', status: 404 });
    expectError(await request(sim.app).get('/v1/videos').set(bearer()), 404, 'invalid_request_error', 'resource_not_found', 'id');
    await queueFault(sim, { path: '/v1/videos', method: 'POST', status: 422, code: 'output_rejected' });
    const rejected = await createVideo(sim);
    expectError(rejected, 422, 'compliance_error', 'output_rejected');
    expect(rejected.body.error.stage).toBe('output_verification');
    await queueFault(sim, { path: '/v1/videos', method: 'POST', status: 400, type: 'invalid_request_error' });
    expectError(await createVideo(sim), 400, 'invalid_request_error', 'invalid_parameter', null);
  });
});
