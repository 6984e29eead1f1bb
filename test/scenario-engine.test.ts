/**
 * The scenario engine, key by key: every key of a scenario does something a client can observe over
 * HTTP, on the manual clock. Each test builds a scenario object from `fast`, changes one key (or a
 * few that belong together), runs a simulator on it and measures the effect through /v1 and /_sim,
 * never by sampling the distribution functions directly. Tolerances are set so that a wrong setting
 * (another rate, another median, the key ignored) would break them.
 */
import request from 'supertest';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadScenario, type Scenario } from '../src/index.js';
import { PROMPT, advance, advanceOk, bearer, cancelVideo, createVideo, expectError, generationsOf, getVideo, makeSim, quantile, recordSleeps } from './helpers.js';
import type { SimGeneration as Gen } from './helpers.js';

type Sim = ReturnType<typeof makeSim>;


const KEY = 'sk_test_alice';

/** A fresh copy of the bundled `fast` scenario with `patch` applied (never mutates shared objects). */
function fastWith(patch: (s: Scenario) => void): Scenario {
  const s = structuredClone(loadScenario('fast'));
  patch(s);
  return s;
}

/** Creates `n` videos one after another; every create must answer 200. Returns their ids in order. */
async function createMany(sim: Sim, n: number, body: Record<string, unknown> = {}, key = KEY): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const res = await createVideo(sim, body, key);
    if (res.status !== 200) throw new Error(`create ${i} answered ${res.status}: ${JSON.stringify(res.body)}`);
    ids.push(res.body.id as string);
  }
  return ids;
}

/** Every stored generation of one account (KEY by default), with its stage history. */
const generations = (sim: Sim, key = KEY): Promise<Gen[]> => generationsOf(sim, key);


/** Seconds a generation spent in a stage (undefined when it never entered it or is still in it). */
function stageSeconds(g: Gen, stage: string): number | undefined {
  const visit = g.stages.find((v) => v.stage === stage);
  if (!visit || visit.left_at === null) return undefined;
  return (Date.parse(visit.left_at) - Date.parse(visit.entered_at)) / 1000;
}

function stageDurations(gens: Gen[], stage: string): number[] {
  return gens.map((g) => stageSeconds(g, stage)).filter((d): d is number => d !== undefined);
}


/** How many times each value occurs. */
function tally(values: string[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const v of values) counts[v] = (counts[v] ?? 0) + 1;
  return counts;
}

function share(part: number, whole: number): number {
  return whole === 0 ? NaN : part / whole;
}

/** Asserts |measured - expected| <= tolerance (all as fractions), with a readable message. */
function expectShare(label: string, measured: number, expected: number, tolerance: number): void {
  expect(
    Math.abs(measured - expected),
    `${label}: measured ${(measured * 100).toFixed(1)}%, configured ${(expected * 100).toFixed(1)}% (tolerance ±${(tolerance * 100).toFixed(1)} points)`,
  ).toBeLessThanOrEqual(tolerance);
}

function expectWithinRelative(label: string, measured: number, expected: number, tolerance: number): void {
  expect(
    Math.abs(measured - expected) / expected,
    `${label}: measured ${measured.toFixed(3)}, configured ${expected} (tolerance ±${tolerance * 100}%)`,
  ).toBeLessThanOrEqual(tolerance);
}

async function journal(sim: Sim, key?: string, limit = 100) {
  const res = await request(sim.app)
    .get('/_sim/requests')
    .query({ ...(key ? { api_key: key } : {}), limit });
  expect(res.status).toBe(200);
  return res.body.data as { method: string; path: string; status: number; account: string | null; negative_prompt_effective?: string | null; fault?: string }[];
}

async function queueFault(sim: Sim, body: Record<string, unknown>): Promise<number> {
  const res = await request(sim.app).post('/_sim/faults').send(body);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.queued as number;
}

function ms(iso: string | null): number {
  if (iso === null) throw new Error('expected a timestamp, got null');
  return Date.parse(iso);
}

// ---------------------------------------------------------------------------------------------

describe('a volume run: 1,000 generations of one scenario, measured over HTTP', () => {
  // One simulator, one account, 1,000 generations of 720p 4 s: enough to measure distributions and
  // shares. Each measured key has a value that no other key interferes with.
  const scenario = fastWith((s) => {
    s.seed = 2024;
    s.keyframe_first_share = 0.5;
    s.stages.queue = { duration: { type: 'lognormal', median: 20, p95: 60 } };
    s.stages.output_verification = { duration: { type: 'uniform', min: 2, max: 7 } };
    s.routing = [
      { when: { resolution: '720p' }, targets: [{ model: 'render-a', weight: 3 }, { model: 'render-b', weight: 1 }] },
      { targets: [{ model: 'render-other' }] },
    ];
    s.stages.render = {
      duration: { type: 'uniform', min: 0.1, max: 0.25 },
      per_output_second: true,
      failure: { probability: 0.3, code: 'render_failed', message: 'GPU node lost (volume test).' },
    };
    s.compliance.output_verification = {
      reject_share: 0.2,
      flag_share: 0.5,
      flags: [
        { code: 'nsfw', severity: 'block', message: 'Blocked content.' },
        { code: 'watermark', severity: 'warning', message: 'A watermark.' },
        { code: 'low_confidence', severity: 'info', message: 'Low confidence.' },
      ],
    };
  });
  const N = 1000;
  let sim: Sim;
  let gens: Gen[];

  beforeAll(async () => {
    sim = makeSim({ scenario });
    await createMany(sim, N, { resolution: '720p', duration_seconds: 4 });
    // The queue is capped by nothing: let even the far tail of the lognormal resolve.
    await advanceOk(sim, 3600);
    gens = await generations(sim);
  }, 120_000);

  it('stores all 1,000 generations, all resolved', () => {
    expect(gens).toHaveLength(N);
    // Render failures (~30%) and output rejections (~20% of the rest) fail; nothing is left unresolved.
    expect(tally(gens.map((g) => g.status))).toEqual({ succeeded: 575, failed: 425 });
  });

  it('keyframe_first_share 0.5: the share of generations with a generated keyframe within ±6 points', () => {
    // Keyframes of generations that failed before the end of the keyframe stage stay null; none do here.
    const withKeyframeStage = gens.filter((g) => g.stages.some((v) => v.stage === 'keyframe'));
    const withKeyframe = gens.filter((g) => g.keyframe !== null);
    expect(withKeyframe).toEqual(withKeyframeStage);
    expectShare('keyframe-first share', share(withKeyframe.length, N), 0.5, 0.06);
  });

  it('stages.queue lognormal {median 20, p95 60}: measured median and p95 within 10%', () => {
    const queue = stageDurations(gens, 'queue');
    expect(queue).toHaveLength(N);
    expectWithinRelative('queue median', quantile(queue, 0.5), 20, 0.1);
    expectWithinRelative('queue p95', quantile(queue, 0.95), 60, 0.1);
  });

  it('stages.output_verification uniform [2, 7]: every duration inside, spread over the range', () => {
    const ov = stageDurations(gens, 'output_verification');
    expect(ov).toHaveLength(691); // every generation that was not failed at render
    for (const d of ov) {
      expect(d).toBeGreaterThanOrEqual(2);
      expect(d).toBeLessThanOrEqual(7);
    }
    expect(Math.min(...ov)).toBeLessThan(2.25);
    expect(Math.max(...ov)).toBeGreaterThan(6.75);
    expectWithinRelative('output_verification mean', ov.reduce((a, b) => a + b, 0) / ov.length, 4.5, 0.06);
  });

  it('routing weights 3:1 for 720p: render-a share within ±8 points of 75%; the fallback rule never used', () => {
    const routed = gens.filter((g) => g.routed_model !== null);
    expect(routed).toHaveLength(N); // routing never fails in this scenario, so every generation got a model
    const a = routed.filter((g) => g.routed_model === 'render-a').length;
    const b = routed.filter((g) => g.routed_model === 'render-b').length;
    expect(a + b).toBe(N);
    expectShare('render-a share', share(a, N), 0.75, 0.08);
  });

  it('stages.render.failure probability 0.3: failed-at-render share within ±6 points, with the code and message', () => {
    const failedAtRender = gens.filter((g) => g.status === 'failed' && g.error?.type === 'api_error');
    expectShare('render failure share', share(failedAtRender.length, N), 0.3, 0.06);
    for (const g of failedAtRender) {
      expect(g.error).toEqual({ type: 'api_error', code: 'render_failed', message: 'GPU node lost (volume test).' });
      // The render stage is the last one it entered; output verification never happened.
      expect(g.stages.map((v) => v.stage).at(-1)).toBe('render');
      expect(g.routed_model).not.toBeNull();
      expect(g.compliance).toBeNull();
      expect(g.output).toBeNull();
    }
  });

  it('compliance.output_verification reject_share 0.2 and flag_share 0.5: shares within tolerance, flags from the list', () => {
    const reachedVerification = gens.filter((g) => g.stages.some((v) => v.stage === 'output_verification'));
    const rejected = reachedVerification.filter((g) => g.status === 'failed');
    const passed = reachedVerification.filter((g) => g.status === 'succeeded');
    expect(rejected.length + passed.length).toBe(reachedVerification.length);
    expectShare('output rejection share', share(rejected.length, reachedVerification.length), 0.2, 0.06);
    const flagged = passed.filter((g) => (g.compliance?.flags.length ?? 0) > 0);
    expectShare('flag share among the passed', share(flagged.length, passed.length), 0.5, 0.08);
    for (const g of rejected) {
      expect(g.error).toMatchObject({ type: 'compliance_error', code: 'output_rejected', stage: 'output_verification' });
      expect(g.compliance).toEqual({
        verified: false,
        flags: [{ code: 'nsfw', severity: 'block', message: 'Blocked content.' }],
      });
    }
    for (const g of passed) expect(g.compliance?.verified).toBe(true);
    // The passed show no flag or one non-blocking flag of the list, and both of those are used.
    const flagLists = new Set(passed.map((g) => JSON.stringify(g.compliance?.flags)));
    expect([...flagLists].sort()).toEqual(
      [
        [],
        [{ code: 'watermark', severity: 'warning', message: 'A watermark.' }],
        [{ code: 'low_confidence', severity: 'info', message: 'Low confidence.' }],
      ]
        .map((flags) => JSON.stringify(flags))
        .sort(),
    );
  });
});

describe('stages.*.duration lognormal with min and max', () => {
  it('{median 20, p95 60, min 15, max 25}: every queue duration is clamped into [15, 25], both bounds reached', async () => {
    const sim = makeSim({
      scenario: fastWith((s) => {
        s.stages.queue = { duration: { type: 'lognormal', median: 20, p95: 60, min: 15, max: 25 } };
      }),
    });
    await createMany(sim, 200);
    await advanceOk(sim, 40);
    const queue = stageDurations(await generations(sim), 'queue');
    expect(queue).toHaveLength(200);
    for (const d of queue) {
      expect(d).toBeGreaterThanOrEqual(15);
      expect(d).toBeLessThanOrEqual(25);
    }
    // About a third of the unclamped draws fall below 15 and a third above 25: both bounds are hit often.
    expect(queue.filter((d) => d === 15)).toHaveLength(71);
    expect(queue.filter((d) => d === 25)).toHaveLength(78);
    expectWithinRelative('clamped queue median', quantile(queue, 0.5), 20, 0.1);
  });
});

describe('one simulator for exact settings: clock, name, fixed durations, models, keyframe-first, prices', () => {
  // Every stage fixed, every generation keyframe-first, custom models and prices, a start time, a
  // manual clock from the scenario itself, and a latency that manual mode must not apply.
  const START = '2031-07-08T09:10:11.123Z';
  const scenario = fastWith((s) => {
    s.name = 'engine-exact';
    s.description = 'Exact settings for the engine test.';
    s.seed = 11;
    s.clock = { mode: 'manual', speed: 1, start: START };
    s.keyframe_first_share = 1;
    s.stages.queue = { duration: { type: 'fixed', value: 3 } };
    s.stages.keyframe = { duration: { type: 'fixed', value: 2 } };
    s.stages.routing = { duration: { type: 'fixed', value: 1.5 } };
    s.stages.render = { duration: { type: 'fixed', value: 0.25 }, per_output_second: true };
    s.stages.output_verification = { duration: { type: 'fixed', value: 1 } };
    s.models = { video: ['acme-7', 'video-3.2'], keyframe: 'still-9' };
    s.pricing = { per_second_cents: { '720p': 3, '1080p': 7 }, keyframe_cents: 11, failure_charge: 'render_if_happened' };
    s.http.latency = { type: 'fixed', value: 10_000 };
  });
  let sim: Sim;
  beforeAll(() => {
    // clock: undefined, so that the scenario's own clock.mode applies.
    sim = makeSim({ scenario, clock: undefined });
  });

  it('clock.start sets the clock and created_at of the first generation', async () => {
    expect((await request(sim.app).get('/_sim/clock')).body.now).toBe(START);
    const res = await createVideo(sim, {}, 'sk_test_start');
    expect(res.body.created_at).toBe(START);
    await advanceOk(sim, 2.5);
    expect((await createVideo(sim, {}, 'sk_test_start')).body.created_at).toBe('2031-07-08T09:10:13.623Z');
    const [first] = await generations(sim, 'sk_test_start');
    expect(first?.stages[0]).toEqual({ stage: 'claim_linking', entered_at: START, left_at: START });
  });

  it('clock.mode manual: the scenario clock stands still while wall time passes', async () => {
    const before = await request(sim.app).get('/_sim/clock');
    expect(before.body.mode).toBe('manual');
    // A little real wall time (createSimulator takes no injected wall clock).
    await new Promise((r) => setTimeout(r, 20));
    expect((await request(sim.app).get('/_sim/clock')).body.now).toBe(before.body.now);
  });

  it('name shows in /_sim/health; description in /_sim/scenario', async () => {
    expect((await request(sim.app).get('/_sim/health')).body.scenario).toBe('engine-exact');
    expect((await request(sim.app).get('/_sim/scenario')).body).toMatchObject({
      name: 'engine-exact',
      description: 'Exact settings for the engine test.',
    });
  });

  it('fixed durations are exact, stage by stage, and add up to completed_at - created_at', async () => {
    await createMany(sim, 5, {}, 'sk_test_fixed');
    await advanceOk(sim, 30);
    const gens = await generations(sim, 'sk_test_fixed');
    expect(gens).toHaveLength(5);
    for (const g of gens) {
      expect(g.status).toBe('succeeded');
      expect(g.stages.map((v) => v.stage)).toEqual(['claim_linking', 'queue', 'keyframe', 'routing', 'render', 'output_verification']);
      expect(stageSeconds(g, 'queue')).toBe(3);
      expect(stageSeconds(g, 'keyframe')).toBe(2);
      expect(stageSeconds(g, 'routing')).toBe(1.5);
      expect(stageSeconds(g, 'render')).toBe(2); // 0.25 s per output second x 8 s
      expect(stageSeconds(g, 'output_verification')).toBe(1);
      expect((ms(g.completed_at) - ms(g.created_at)) / 1000).toBe(9.5);
    }
  });

  it('render per_output_second: the render of a 16 s video takes 4 times that of a 4 s one', async () => {
    await createVideo(sim, { duration_seconds: 4 }, 'sk_test_per_second');
    await createVideo(sim, { duration_seconds: 16 }, 'sk_test_per_second');
    await advanceOk(sim, 30);
    const [g4, g16] = await generations(sim, 'sk_test_per_second');
    expect(stageSeconds(g4 as Gen, 'render')).toBe(1);
    expect(stageSeconds(g16 as Gen, 'render')).toBe(4);
  });

  it('models.video: a listed model works; video-3.0, not listed, is 400 model_not_found', async () => {
    const ok = await createVideo(sim, { model: 'acme-7' }, 'sk_test_models');
    expect(ok.status).toBe(200);
    expect(ok.body.model).toBe('acme-7');
    const refused = await createVideo(sim, { model: 'video-3.0' }, 'sk_test_models');
    expect(expectError(refused, 400, 'invalid_request_error', 'model_not_found', 'model').message).toContain('acme-7');
    await advanceOk(sim, 30);
    expect((await getVideo(sim, ok.body.id, 'sk_test_models')).body.status).toBe('succeeded');
  });

  it('models.keyframe: the model of created images; generated keyframes are images of the account', async () => {
    const image = await request(sim.app).post('/v1/images').set(bearer('sk_test_models')).send({ prompt: PROMPT });
    expect(image.status).toBe(200);
    expect(image.body.model).toBe('still-9');
    const video = await createVideo(sim, {}, 'sk_test_models');
    await advanceOk(sim, 30);
    const done = await getVideo(sim, video.body.id, 'sk_test_models');
    expect(done.body.keyframe).toEqual({ id: expect.stringMatching(/^img_/), status: 'ready' });
    expect((await createVideo(sim, { keyframe_id: done.body.keyframe.id }, 'sk_test_models')).status).toBe(200);
  });

  it('keyframe_first_share 1: every generation generates a keyframe', async () => {
    await createMany(sim, 20, {}, 'sk_test_kf1');
    await advanceOk(sim, 30);
    const gens = await generations(sim, 'sk_test_kf1');
    expect(gens).toHaveLength(20);
    for (const g of gens) {
      expect(g.status).toBe('succeeded');
      expect(g.keyframe).toEqual({ id: expect.stringMatching(/^img_[0-9A-Za-z]{24}$/), status: 'ready' });
      expect(stageSeconds(g, 'keyframe')).toBe(2);
    }
  });

  it('pricing per_second_cents and keyframe_cents: in cost_cents and in the image cost', async () => {
    const key = 'sk_test_prices';
    const a = await createVideo(sim, { resolution: '1080p', duration_seconds: 4 }, key);
    const b = await createVideo(sim, { resolution: '720p', duration_seconds: 16 }, key);
    const image = await request(sim.app).post('/v1/images').set(bearer(key)).send({ prompt: PROMPT });
    expect(image.body.cost_cents).toBe(11);
    // A reused keyframe is not generated, so it is not charged.
    const reused = await createVideo(sim, { resolution: '720p', duration_seconds: 4, keyframe_id: image.body.id }, key);
    await advanceOk(sim, 30);
    expect((await getVideo(sim, a.body.id, key)).body.cost_cents).toBe(7 * 4 + 11);
    expect((await getVideo(sim, b.body.id, key)).body.cost_cents).toBe(3 * 16 + 11);
    expect((await getVideo(sim, reused.body.id, key)).body.cost_cents).toBe(3 * 4);
  });

  it('http.latency is not applied in manual mode (a 10 s latency, answered at once)', async () => {
    const { sleep, slept } = recordSleeps();
    const manual = makeSim({ scenario, clock: undefined, sleep });
    const res = await request(manual.app).get('/v1/videos').set(bearer('sk_test_latency'));
    expect(res.status).toBe(200);
    expect(slept).toEqual([]);
  });
});

describe('one simulator for accounts: balances, negative prompts, direct text-to-video, flat renders', () => {
  // keyframe_first_share 0: every 1080p 8 s video costs exactly 80 cents.
  const scenario = fastWith((s) => {
    s.seed = 12;
    s.keyframe_first_share = 0;
    s.stages.render = { duration: { type: 'fixed', value: 0.5 }, per_output_second: false };
    s.account_defaults = { balance_cents: 100, negative_prompt: 'blurry' };
    s.accounts = {
      sk_test_poor: { balance_cents: 250 },
      sk_test_poor2: { balance_cents: 250 },
      sk_test_rich: { balance_cents: null },
      sk_test_direct: { balance_cents: null },
      sk_test_plain: { balance_cents: null },
      sk_test_custom: { balance_cents: null, negative_prompt: 'watermark' },
      sk_test_none: { balance_cents: null, negative_prompt: null },
      sk_test_seed: { balance_cents: null },
    };
  });
  let sim: Sim;
  beforeAll(() => {
    sim = makeSim({ scenario });
  });

  it('accounts.X.balance_cents: the 4th 80-cent create is 402; charges land on resolution and stay', async () => {
    const key = 'sk_test_poor';
    await createMany(sim, 3, {}, key);
    const refused = await createVideo(sim, {}, key);
    expectError(refused, 402, 'insufficient_balance', 'insufficient_balance');
    expect(refused.body.error.message).toContain('80');
    expect(await generations(sim, key)).toHaveLength(3); // the 402 stored nothing
    await advanceOk(sim, 20);
    const gens = await generations(sim, key);
    expect(gens.map((g) => [g.status, g.cost_cents])).toEqual([
      ['succeeded', 80],
      ['succeeded', 80],
      ['succeeded', 80],
    ]);
    // 240 charged: 10 cents left, not enough for the cheapest video (720p 4 s = 20 cents).
    expectError(await createVideo(sim, { resolution: '720p', duration_seconds: 4 }, key), 402, 'insufficient_balance', 'insufficient_balance');
    // An account with balance_cents null is unlimited, whatever the defaults say.
    await createMany(sim, 5, {}, 'sk_test_rich');
  });

  it('a canceled generation costs nothing and frees its reservation: a fourth create then succeeds', async () => {
    const key = 'sk_test_poor2';
    const [first] = await createMany(sim, 3, {}, key);
    expectError(await createVideo(sim, {}, key), 402, 'insufficient_balance', 'insufficient_balance');
    expect((await cancelVideo(sim, first as string, key)).status).toBe(200);
    expect((await createVideo(sim, {}, key)).status).toBe(200);
    expectError(await createVideo(sim, {}, key), 402, 'insufficient_balance', 'insufficient_balance');
    await advanceOk(sim, 20);
    const gens = await generations(sim, key);
    expect(gens.map((g) => [g.status, g.cost_cents])).toEqual([
      ['canceled', null],
      ['succeeded', 80],
      ['succeeded', 80],
      ['succeeded', 80],
    ]);
  });

  it('account_defaults.balance_cents: every new account starts with it, each its own', async () => {
    for (const key of ['sk_test_new1', 'sk_test_new2']) {
      expect((await createVideo(sim, {}, key)).status).toBe(200);
      expectError(await createVideo(sim, {}, key), 402, 'insufficient_balance', 'insufficient_balance');
      // 20 cents are still available for a 720p 4 s video, and no more.
      expect((await createVideo(sim, { resolution: '720p', duration_seconds: 4 }, key)).status).toBe(200);
      expectError(await createVideo(sim, { resolution: '720p', duration_seconds: 4 }, key), 402, 'insufficient_balance', 'insufficient_balance');
    }
  });

  it('a failure that charges nothing (a render failure) releases its reservation on resolution', async () => {
    const key = 'sk_test_new3'; // 100 cents by default
    await queueFault(sim, { path: '/v1/videos', method: 'POST', api_key: key, outcome: { fail_stage: 'render' } });
    expect((await createVideo(sim, {}, key)).status).toBe(200);
    expectError(await createVideo(sim, {}, key), 402, 'insufficient_balance', 'insufficient_balance');
    await advanceOk(sim, 20);
    const [g] = await generations(sim, key);
    expect([g?.status, g?.cost_cents]).toEqual(['failed', 0]);
    expect((await createVideo(sim, {}, key)).status).toBe(200);
  });

  it('negative_prompt: account_defaults and accounts.X merge with the request in the journal; the video echoes the request', async () => {
    const cases: [string, string | null, string | null][] = [
      ['sk_test_plain', 'text overlay', 'blurry, text overlay'],
      ['sk_test_plain', null, 'blurry'],
      ['sk_test_custom', 'text overlay', 'watermark, text overlay'],
      ['sk_test_custom', null, 'watermark'],
      ['sk_test_none', 'text overlay', 'text overlay'],
      ['sk_test_none', null, null],
    ];
    for (const [key, requested, effective] of cases) {
      const res = await createVideo(sim, requested === null ? {} : { negative_prompt: requested }, key);
      expect(res.status).toBe(200);
      expect(res.body.negative_prompt).toBe(requested);
      const entries = await journal(sim, key, 1);
      expect(entries[0]).toMatchObject({ method: 'POST', path: '/v1/videos', status: 200, account: key });
      expect(entries[0]?.negative_prompt_effective, `${key} + ${requested}`).toBe(effective);
    }
  });

  it('keyframe_first_share 0: every keyframe is null and no keyframe stage is walked', async () => {
    await createMany(sim, 20, {}, 'sk_test_direct');
    await advanceOk(sim, 20);
    const gens = await generations(sim, 'sk_test_direct');
    expect(gens).toHaveLength(20);
    for (const g of gens) {
      expect(g.status).toBe('succeeded');
      expect(g.keyframe).toBeNull();
      expect(g.stages.some((v) => v.stage === 'keyframe')).toBe(false);
      expect(g.cost_cents).toBe(80);
    }
  });

  it('render without per_output_second: the same render time for 4 s and 16 s videos', async () => {
    await createVideo(sim, { duration_seconds: 4 }, 'sk_test_plain');
    await createVideo(sim, { duration_seconds: 16 }, 'sk_test_plain');
    await advanceOk(sim, 20);
    const gens = await generations(sim, 'sk_test_plain');
    const [g4, g16] = gens.slice(-2);
    expect([g4?.duration_seconds, g16?.duration_seconds]).toEqual([4, 16]);
    expect(stageSeconds(g4 as Gen, 'render')).toBe(0.5);
    expect(stageSeconds(g16 as Gen, 'render')).toBe(0.5);
  });
});

describe('seed', () => {
  it('another seed gives other ids; the same seed (an account reset to its start) the same ones', async () => {
    const idsOf = async (sim: Sim) => {
      const ids = await createMany(sim, 3, {}, 'sk_test_seed');
      const image = await request(sim.app).post('/v1/images').set(bearer('sk_test_seed')).send({ prompt: PROMPT });
      return [...ids, image.body.id as string];
    };
    const base = { keyframe_first_share: 0, accounts: {} };
    const seeded = (seed: number) => makeSim({ scenario: fastWith((s) => Object.assign(s, base, { seed })) });
    const a = seeded(11);
    const b = seeded(12);
    const idsA = await idsOf(a);
    const idsB = await idsOf(b);
    for (let i = 0; i < idsA.length; i++) expect(idsB[i]).not.toBe(idsA[i]);
    expect((await request(a.app).post('/_sim/reset').send({ api_key: 'sk_test_seed' })).status).toBe(200);
    expect(await idsOf(a)).toEqual(idsA);
  });
});

describe('clock.speed and http.latency in realtime mode', () => {
  let sim: Sim;
  // The latency waits go through an injected sleep: recorded, not slept.
  const { sleep, slept } = recordSleeps();
  beforeAll(() => {
    sim = makeSim({
      scenario: fastWith((s) => {
        s.clock.mode = 'realtime';
        s.clock.speed = 1000;
        s.http.latency = { type: 'fixed', value: 150 };
      }),
      clock: undefined,
      sleep,
    });
  });

  it('clock.speed 1000: the virtual clock runs ahead of the wall clock', async () => {
    // Realtime mode itself, on the real wall clock: a short wait, a lower bound.
    const c0 = await request(sim.app).get('/_sim/clock');
    expect(c0.body).toMatchObject({ mode: 'realtime', speed: 1000 });
    await new Promise((r) => setTimeout(r, 30));
    const c1 = await request(sim.app).get('/_sim/clock');
    // At least 30 ms of wall time went by: 30 virtual seconds at speed 1000 (liveness, not timing).
    expect(ms(c1.body.now) - ms(c0.body.now)).toBeGreaterThanOrEqual(30_000);
  });

  it('http.latency fixed 150 ms: a /v1 request waits 150 ms before it is answered', async () => {
    slept.length = 0;
    for (let i = 0; i < 2; i++) expect((await request(sim.app).get('/v1/videos').set(bearer())).status).toBe(200);
    // The control API is not the service: no latency there.
    expect((await request(sim.app).get('/_sim/health')).status).toBe(200);
    expect(slept).toEqual([150, 150]);
  });
});

describe('auth', () => {
  it("auth.key_prefix 'pk_', auth.revoked_keys and accounts.X.revoked", async () => {
    const sim = makeSim({
      scenario: fastWith((s) => {
        s.auth = { key_prefix: 'pk_', revoked_keys: ['pk_gone'] };
        s.accounts = { pk_banned: { revoked: true }, pk_fine: { revoked: false } };
      }),
    });
    expect((await createVideo(sim, {}, 'pk_x')).status).toBe(200);
    const other = await request(sim.app).get('/v1/videos').set(bearer('pk_other'));
    expect(other.status).toBe(200);
    expect(other.body.data).toEqual([]); // each key is its own account
    const refused = await request(sim.app).get('/v1/videos').set(bearer('sk_test_x'));
    expect(expectError(refused, 401, 'authentication_error', 'invalid_api_key').message).toContain('pk_');
    expectError(await request(sim.app).get('/v1/videos').set(bearer('pk_')), 401, 'authentication_error', 'invalid_api_key');
    // The base's sk_test_revoked is not special any more: just a key of another form.
    expectError(await request(sim.app).get('/v1/videos').set(bearer('sk_test_revoked')), 401, 'authentication_error', 'invalid_api_key');
    expectError(await createVideo(sim, {}, 'pk_gone'), 401, 'authentication_error', 'revoked_api_key');
    expectError(await request(sim.app).get('/v1/videos').set(bearer('pk_banned')), 401, 'authentication_error', 'revoked_api_key');
    expect((await request(sim.app).get('/v1/videos').set(bearer('pk_fine'))).status).toBe(200);
    // Refused requests are journaled with no account and create nothing.
    const entries = await journal(sim);
    expect(entries.filter((e) => e.status === 401)).toHaveLength(5);
    expect(entries.filter((e) => e.status === 401).every((e) => e.account === null)).toBe(true);
    expect(await generations(sim, 'pk_gone')).toEqual([]);
  });

  it('auth.key_prefix null: only keys listed under accounts are accepted', async () => {
    const sim = makeSim({
      scenario: fastWith((s) => {
        s.auth.key_prefix = null;
        s.accounts = { team_key_1: {}, sk_test_listed: {} };
      }),
    });
    expect((await request(sim.app).get('/v1/videos').set(bearer('team_key_1'))).status).toBe(200);
    expect((await createVideo(sim, {}, 'sk_test_listed')).status).toBe(200);
    expectError(await request(sim.app).get('/v1/videos').set(bearer('sk_test_x')), 401, 'authentication_error', 'invalid_api_key');
    expectError(await request(sim.app).get('/v1/videos').set(bearer('team_key_2')), 401, 'authentication_error', 'invalid_api_key');
  });
});

describe('routing rules', () => {
  it('the first matching rule wins: when.model, when.resolution and when.keyframe_first pick the targets', async () => {
    const sim = makeSim({
      scenario: fastWith((s) => {
        s.keyframe_first_share = 0.5;
        s.routing = [
          { when: { model: 'video-3.1' }, targets: [{ model: 'r-31' }] },
          { when: { model: 'video-3.0', keyframe_first: false }, targets: [{ model: 'r-30-direct' }] },
          { when: { model: 'video-3.0' }, targets: [{ model: 'r-30-keyframe' }] },
          { when: { resolution: '720p' }, targets: [{ model: 'r-720' }] },
          { targets: [{ model: 'r-fallback' }] },
        ];
      }),
    });
    const cases: [Record<string, unknown>, number][] = [
      [{ model: 'video-3.1', resolution: '720p' }, 5],
      [{ model: 'video-3.0' }, 30],
      [{ model: 'video-3.2', resolution: '720p' }, 5],
      [{ model: 'video-3.2', resolution: '1080p' }, 5],
    ];
    for (const [body, n] of cases) await createMany(sim, n, body);
    await advanceOk(sim, 20);
    const gens = await generations(sim);
    expect(gens).toHaveLength(45);
    let direct = 0;
    for (const g of gens) {
      expect(g.status).toBe('succeeded');
      if (g.model === 'video-3.1') expect(g.routed_model).toBe('r-31');
      else if (g.model === 'video-3.0') {
        expect(g.routed_model).toBe(g.keyframe === null ? 'r-30-direct' : 'r-30-keyframe');
        if (g.keyframe === null) direct++;
      } else expect(g.routed_model).toBe(g.resolution === '720p' ? 'r-720' : 'r-fallback');
    }
    // Both branches of the keyframe_first condition were exercised.
    expect(direct).toBe(13);
  });
});

describe('stages.X.failure with probability 1', () => {
  it('keyframe and routing: keyframe-first generations fail at keyframe, the others at routing; earlier fields kept', async () => {
    const sim = makeSim({
      scenario: fastWith((s) => {
        s.name = 'fail-test';
        s.keyframe_first_share = 0.5;
        s.stages.keyframe.failure = { probability: 1, code: 'keyframe_failed', message: 'The keyframe model crashed.' };
        s.stages.routing.failure = { probability: 1, code: 'upstream_timeout' };
      }),
    });
    const image = await request(sim.app).post('/v1/images').set(bearer()).send({ prompt: PROMPT });
    const ids = await createMany(sim, 12);
    const reused = await createVideo(sim, { keyframe_id: image.body.id });
    await advanceOk(sim, 20);
    const atStage: Record<string, number> = {};
    for (const id of [...ids, reused.body.id as string]) {
      const g = (await getVideo(sim, id)).body as Gen;
      const control = (await request(sim.app).get(`/_sim/generations/${id}`)).body as Gen;
      const stage = control.stages.map((v) => v.stage).at(-1) as string;
      atStage[stage] = (atStage[stage] ?? 0) + 1;
      expect(g.status).toBe('failed');
      expect(Object.keys(g.error ?? {}).sort()).toEqual(['code', 'message', 'type']);
      if (stage === 'keyframe') {
        expect(g.error).toEqual({ type: 'api_error', code: 'keyframe_failed', message: 'The keyframe model crashed.' });
        expect(g.keyframe).toBeNull();
      } else {
        expect(stage).toBe('routing');
        expect(g.error).toMatchObject({ type: 'api_error', code: 'upstream_timeout' });
        expect(g.error?.message).toMatch(/fail-test/); // no message configured: the default names the scenario
        // A reused keyframe cannot fail and is kept when routing fails.
        if (id === reused.body.id) expect(g.keyframe).toEqual({ id: image.body.id, status: 'ready' });
      }
      expect(g.routed_model).toBeNull();
      expect(g.compliance).toBeNull();
      expect(g.output).toBeNull();
      expect(g.completed_at).not.toBeNull();
    }
    expect(atStage).toEqual({ keyframe: 6, routing: 7 });
  });

  it('render: failed with its code and message; keyframe and routed_model kept, compliance and output null', async () => {
    const sim = makeSim({
      scenario: fastWith((s) => {
        s.keyframe_first_share = 1;
        s.stages.render.failure = { probability: 1, code: 'render_failed', message: 'GPU node lost.' };
      }),
    });
    const ids = await createMany(sim, 3);
    await advanceOk(sim, 20);
    const keyframes = ['img_EuxN6nifAQL4RjDv651Q8K46', 'img_SKq01O7EsMiOSTXv5Dmo7nzk', 'img_RaHtULKAXPLODiBekD7u7f10'];
    for (const [i, id] of ids.entries()) {
      const g = (await getVideo(sim, id)).body as Gen;
      expect(g.status).toBe('failed');
      expect(g.error).toEqual({ type: 'api_error', code: 'render_failed', message: 'GPU node lost.' });
      expect(g.keyframe).toEqual({ id: keyframes[i], status: 'ready' });
      expect(g.routed_model).toBe('render-3.2-hd-b'); // fast routes video-3.2 1080p to hd-a or hd-b: this seed draws hd-b
      expect(g.compliance).toBeNull();
      expect(g.output).toBeNull();
      const control = (await request(sim.app).get(`/_sim/generations/${id}`)).body as Gen;
      expect(control.stages.map((v) => v.stage).at(-1)).toBe('render');
    }
  });
});

describe('compliance.claim_linking and flags', () => {
  it('rules: a case-insensitive pattern match is a 422 with the rule message; no generation is stored', async () => {
    const sim = makeSim({
      scenario: fastWith((s) => {
        s.compliance.claim_linking.rules = [
          { pattern: 'forbidden\\s+thing', message: 'No forbidden things, please.' },
          { pattern: 'secret' },
        ];
      }),
    });
    const custom = await createVideo(sim, { prompt: 'A FORBIDDEN   Thing in the rain.' });
    expect(expectError(custom, 422, 'compliance_error', 'claim_linking_rejected')).toEqual({
      type: 'compliance_error',
      code: 'claim_linking_rejected',
      message: 'No forbidden things, please.',
      stage: 'claim_linking',
    });
    const plain = await createVideo(sim, { prompt: 'The top SECRET plan.' });
    expect(expectError(plain, 422, 'compliance_error', 'claim_linking_rejected').stage).toBe('claim_linking');
    const image = await request(sim.app).post('/v1/images').set(bearer()).send({ prompt: 'a forbidden thing' });
    expect(expectError(image, 422, 'compliance_error', 'claim_linking_rejected').message).toBe('No forbidden things, please.');
    expect(await generations(sim)).toEqual([]);
    expect((await createVideo(sim, { prompt: 'A forbidden castle and a thing.' })).status).toBe(200);
  });

  it('probability 0.25: 422 share over 400 creates within ±6 points', async () => {
    const sim = makeSim({
      scenario: fastWith((s) => {
        s.name = 'claims';
        s.compliance.claim_linking.probability = 0.25;
      }),
    });
    let rejected = 0;
    for (let i = 0; i < 400; i++) {
      const res = await createVideo(sim, { prompt: `${PROMPT} Shot ${i}.` });
      if (res.status === 422) {
        rejected++;
        expect(expectError(res, 422, 'compliance_error', 'claim_linking_rejected').stage).toBe('claim_linking');
      } else expect(res.status).toBe(200);
    }
    expectShare('claim-linking rejection share', share(rejected, 400), 0.25, 0.06);
    expect(rejected).toBe(89);
    expect(await generations(sim)).toHaveLength(400 - rejected);
  }, 60_000);

  it('output_verification flag_share 1 with flags: every generation succeeds, verified, with a non-blocking flag of the list', async () => {
    const sim = makeSim({
      scenario: fastWith((s) => {
        s.compliance.output_verification = {
          reject_share: 0,
          flag_share: 1,
          flags: [
            { code: 'never_used_block', severity: 'block', message: 'Blocked.' },
            { code: 'grainy', severity: 'warning', message: 'Grainy output.' },
          ],
        };
      }),
    });
    const ids = await createMany(sim, 5);
    await advanceOk(sim, 20);
    for (const id of ids) {
      const g = (await getVideo(sim, id)).body as Gen;
      expect(g.status).toBe('succeeded');
      expect(g.compliance).toEqual({ verified: true, flags: [{ code: 'grainy', severity: 'warning', message: 'Grainy output.' }] });
      expect(g.output).not.toBeNull();
    }
  });
});

describe('pricing.failure_charge (and output_verification.reject_share 1)', () => {
  const charges = [
    { mode: 'nothing' as const, render: 0, rejection: 0 },
    { mode: 'full' as const, render: 80, rejection: 80 },
    { mode: 'render_if_happened' as const, render: 0, rejection: 80 },
  ];
  for (const { mode, render, rejection } of charges) {
    it(`${mode}: a render failure costs ${render}, an output rejection ${rejection}`, async () => {
      // Every output is rejected; one generation is forced to fail at render instead.
      const sim = makeSim({
        scenario: fastWith((s) => {
          s.keyframe_first_share = 0;
          s.pricing.failure_charge = mode;
          s.compliance.output_verification = {
            reject_share: 1,
            flag_share: 0,
            flags: [{ code: 'likeness', severity: 'block', message: 'A real person.' }],
          };
        }),
      });
      await queueFault(sim, { path: '/v1/videos', method: 'POST', outcome: { fail_stage: 'render' } });
      const renderFailed = await createVideo(sim);
      const rejected = await createVideo(sim);
      await advanceOk(sim, 20);
      const r = (await getVideo(sim, renderFailed.body.id)).body as Gen;
      expect([r.status, r.error?.code, r.cost_cents]).toEqual(['failed', 'render_failed', render]);
      const o = (await getVideo(sim, rejected.body.id)).body as Gen;
      expect([o.status, o.cost_cents]).toEqual(['failed', rejection]);
      expect(o.error).toEqual({
        type: 'compliance_error',
        code: 'output_rejected',
        message: expect.any(String),
        stage: 'output_verification',
      });
      expect(o.compliance).toEqual({ verified: false, flags: [{ code: 'likeness', severity: 'block', message: 'A real person.' }] });
      expect(o.routed_model).not.toBeNull();
      expect(o.output).toBeNull();
    });
  }
});

describe('http.faults', () => {
  let sim: Sim;
  beforeAll(() => {
    sim = makeSim({
      scenario: fastWith((s) => {
        s.name = 'faulty';
        s.rate_limits = { capacity: 1000, refill_per_second: 0.001 };
        s.http.faults = [
          { method: 'POST', path: '/v1/videos', status: 500, probability: 1 },
          { method: 'GET', path: '/v1/videos/*', status: 429, probability: 1 },
          { method: 'DELETE', path: '/v1/videos/*', status: 500, probability: 0.5 },
        ];
      }),
    });
  });

  it('a rule with method and path: only matching requests get the 500; a faulted create stores nothing and spends no token', async () => {
    const key = 'sk_test_faults1';
    const before = await request(sim.app).get('/v1/videos').set(bearer(key));
    expect(before.status).toBe(200);
    expect(before.headers['x-ratelimit-remaining']).toBe('999');
    for (let i = 0; i < 3; i++) {
      const err = expectError(await createVideo(sim, {}, key), 500, 'api_error', 'internal_error');
      expect(err.message).toContain("injected by scenario 'faulty'");
    }
    const after = await request(sim.app).get('/v1/videos').set(bearer(key));
    expect(after.status).toBe(200);
    expect(after.body.data).toEqual([]);
    expect(after.headers['x-ratelimit-remaining']).toBe('998'); // the three faulted creates spent nothing
    expect(await generations(sim, key)).toEqual([]);
    // Another path is not matched.
    expect((await request(sim.app).post('/v1/images').set(bearer(key)).send({ prompt: PROMPT })).status).toBe(200);
    const faulted = (await journal(sim, key)).filter((e) => e.status === 500);
    expect(faulted).toHaveLength(3);
    for (const e of faulted) expect(e).toMatchObject({ method: 'POST', path: '/v1/videos', account: key });
  });

  it('a 429 rule with a path prefix: rate_limit_error with Retry-After, before the route runs; the bare path is not matched', async () => {
    const key = 'sk_test_faults2';
    const res = await getVideo(sim, 'vid_doesnotexist', key);
    expectError(res, 429, 'rate_limit_error', 'rate_limit_exceeded');
    expect(res.headers['retry-after']).toBe('1');
    expect(res.body.error.message).toContain("'faulty'");
    expect((await request(sim.app).get('/v1/videos').set(bearer(key))).status).toBe(200);
  });

  it('probability 0.5: about half of the matching requests fail', async () => {
    const key = 'sk_test_faults3';
    let faults = 0;
    for (let i = 0; i < 200; i++) {
      const res = await request(sim.app).delete('/v1/videos/vid_doesnotexist').set(bearer(key));
      if (res.status === 500) faults++;
      else expectError(res, 404, 'invalid_request_error', 'resource_not_found');
    }
    expectShare('500 share', share(faults, 200), 0.5, 0.1);
    expect(faults).toBe(105);
  });
});

describe('rate_limits', () => {
  it('groups: creates spend from their own bucket, with its own headers; other requests from the main one', async () => {
    const sim = makeSim({
      scenario: fastWith((s) => {
        s.rate_limits = {
          capacity: 100,
          refill_per_second: 1,
          groups: [{ name: 'creates', method: 'POST', path: '/v1/*', capacity: 2, refill_per_second: 0.5 }],
        };
      }),
    });
    const key = 'sk_test_groups';
    const first = await createVideo(sim, {}, key);
    expect(first.headers['x-ratelimit-limit']).toBe('2');
    expect(first.headers['x-ratelimit-remaining']).toBe('1');
    expect((await createVideo(sim, {}, key)).status).toBe(200);
    const refused = await createVideo(sim, {}, key);
    expectError(refused, 429, 'rate_limit_error', 'rate_limit_exceeded');
    expect(refused.headers['retry-after']).toBe('2');
    // Images are POSTs under /v1/* too: the same group.
    expect((await request(sim.app).post('/v1/images').set(bearer(key)).send({ prompt: PROMPT })).status).toBe(429);
    // Polls spend from the main bucket, untouched by the creates.
    const poll = await getVideo(sim, first.body.id as string, key);
    expect(poll.status).toBe(200);
    expect(poll.headers['x-ratelimit-limit']).toBe('100');
    expect(poll.headers['x-ratelimit-remaining']).toBe('99');
    await advanceOk(sim, 2, key);
    expect((await createVideo(sim, {}, key)).status).toBe(200);
  });

  it('capacity 3, refill 0.5/s: headers on every response, 429 with Retry-After, recovery after advancing Retry-After on the account clock', async () => {
    const sim = makeSim({ scenario: fastWith((s) => (s.rate_limits = { capacity: 3, refill_per_second: 0.5 })) });
    const key = 'sk_test_bucket';
    const get = () => request(sim.app).get('/v1/videos').set(bearer(key));
    for (const remaining of ['2', '1', '0']) {
      const res = await get();
      expect(res.status).toBe(200);
      expect(res.headers['x-ratelimit-limit']).toBe('3');
      expect(res.headers['x-ratelimit-remaining']).toBe(remaining);
      expect(Number(res.headers['x-ratelimit-reset'])).toBe((3 - Number(remaining)) * 2);
    }
    const limited = await get();
    expectError(limited, 429, 'rate_limit_error', 'rate_limit_exceeded');
    expect(limited.headers['retry-after']).toBe('2');
    expect(limited.headers['x-ratelimit-limit']).toBe('3');
    expect(limited.headers['x-ratelimit-remaining']).toBe('0');
    expect(limited.headers['x-ratelimit-reset']).toBe('6');
    // Another account has its own bucket.
    expect((await request(sim.app).get('/v1/videos').set(bearer('sk_test_other'))).status).toBe(200);
    // Half of Retry-After is not enough ...
    await advanceOk(sim, 1, key);
    const early = await get();
    expect(early.status).toBe(429);
    expect(early.headers['retry-after']).toBe('1');
    // ... the rest of it is.
    await advanceOk(sim, 1, key);
    const recovered = await get();
    expect(recovered.status).toBe(200);
    expect(recovered.headers['x-ratelimit-remaining']).toBe('0');
    expect((await get()).status).toBe(429);
    // A full refill after capacity / refill seconds.
    await advanceOk(sim, 6, key);
    for (let i = 0; i < 3; i++) expect((await get()).status).toBe(200);
    expect((await get()).status).toBe(429);
  });
});

describe('idempotency and limits', () => {
  let sim: Sim;
  beforeAll(() => {
    sim = makeSim({
      scenario: fastWith((s) => {
        s.idempotency.retention_seconds = 10;
        s.limits = { max_stored_generations: 5, journal_size: 3 };
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
    expect(await generations(sim, key)).toHaveLength(2);
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
    // Accounts share nothing: another account's resolved generations do not push these out.
    const others = await createMany(sim, 4, { duration_seconds: 4 }, 'sk_test_cap_other');
    await advanceOk(sim, 15);
    for (const id of others) expect((await getVideo(sim, id, 'sk_test_cap_other')).status).toBe(200);
    for (const id of ids.slice(3)) expect((await getVideo(sim, id, key)).status).toBe(200);
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

  it('limits.max_stored_generations counts resolved generations only: an in-flight one is never evicted', async () => {
    const key = 'sk_test_cap2';
    const [slow] = await createMany(sim, 1, { duration_seconds: 16 }, key);
    const quick: string[] = [];
    for (let i = 0; i < 8; i++) {
      quick.push(...(await createMany(sim, 1, { duration_seconds: 4 }, key)));
      await advanceOk(sim, 1);
    }
    await advanceOk(sim, 12); // every quick one resolved, the slow one still rendering
    const inFlight = await getVideo(sim, slow as string, key);
    expect(inFlight.status).toBe(200);
    expect(inFlight.body.status).toBe('processing');
    for (const id of quick.slice(0, 3)) expect((await getVideo(sim, id, key)).status).toBe(404);
    const list = await request(sim.app).get('/v1/videos').query({ limit: 100 }).set(bearer(key));
    expect(list.body.data.map((v: { id: string }) => v.id)).toEqual([slow, ...quick.slice(3)]);
    // Once it resolves, it counts: the oldest resolved one left goes.
    await advanceOk(sim, 30);
    expect((await getVideo(sim, slow as string, key)).body.status).toBe('succeeded');
    expect((await getVideo(sim, quick[3] as string, key)).status).toBe(404);
    const after = await request(sim.app).get('/v1/videos').query({ limit: 100 }).set(bearer(key));
    expect(after.body.data.map((v: { id: string }) => v.id)).toEqual([slow, ...quick.slice(4)]);
  });

  it('limits.journal_size 3: only the last 3 requests are in /_sim/requests', async () => {
    const paths = ['/v1/videos?limit=1', '/v1/videos?limit=2', '/v1/videos?limit=3', '/v1/videos?limit=4', '/v1/videos?limit=5'];
    for (const p of paths) expect((await request(sim.app).get(p).set(bearer('sk_test_journal'))).status).toBe(200);
    const res = await request(sim.app).get('/_sim/requests').query({ limit: 100 });
    expect(res.body.data.map((e: { path: string }) => e.path)).toEqual(paths.slice(2));
    expect(res.body.has_more).toBe(false);
  });
});

describe('forced outcomes through POST /_sim/faults', () => {
  let sim: Sim;
  beforeAll(() => {
    sim = makeSim({ scenario: fastWith((s) => (s.keyframe_first_share = 1)) });
  });

  it('outcome fail_stage routing: the next generation fails at routing, the one after is untouched', async () => {
    expect(await queueFault(sim, { path: '/v1/videos', method: 'POST', outcome: { fail_stage: 'routing' } })).toBe(1);
    const forced = await createVideo(sim);
    const normal = await createVideo(sim);
    expect(forced.status).toBe(200);
    await advanceOk(sim, 20);
    const g = (await getVideo(sim, forced.body.id)).body as Gen;
    expect(g.status).toBe('failed');
    expect(g.error).toMatchObject({ type: 'api_error', code: 'routing_failed' });
    expect(g.keyframe).not.toBeNull();
    expect(g.routed_model).toBeNull();
    const control = (await request(sim.app).get(`/_sim/generations/${forced.body.id}`)).body as Gen;
    expect(control.stages.map((v) => v.stage).at(-1)).toBe('routing');
    expect((await getVideo(sim, normal.body.id)).body.status).toBe('succeeded');
  });

  it('outcome fail_stage keyframe: every forced generation fails at keyframe, whatever keyframe_first_share draws', async () => {
    // With keyframe_first_share 0.5 about half of the generations are direct text-to-video. The
    // forced outcome promises a keyframe failure for each of them all the same (openapi.yaml
    // SimForcedOutcome.fail_stage: "The generation fails with an api_error at the end of this
    // stage"; README: "create a generation whose fate is forced").
    const mixed = makeSim({ scenario: fastWith((s) => (s.keyframe_first_share = 0.5)) });
    await queueFault(mixed, { path: '/v1/videos', method: 'POST', outcome: { fail_stage: 'keyframe' }, times: 20 });
    const ids = await createMany(mixed, 20);
    await advanceOk(mixed, 20);
    const outcomes = [];
    for (const id of ids) {
      const g = (await request(mixed.app).get(`/_sim/generations/${id}`)).body as Gen;
      outcomes.push({ id, status: g.status, code: g.error?.code ?? null, last_stage: g.stages.at(-1)?.stage });
    }
    const notForced = outcomes.filter((o) => o.status !== 'failed' || o.code !== 'keyframe_failed' || o.last_stage !== 'keyframe');
    expect(notForced, 'generations that ignored the forced keyframe failure').toEqual([]);
  });

  it("a forced outcome is the generation's fate even where the scenario draws an earlier stage failure", async () => {
    // Half of the keyframes fail by the scenario's own draw. A forced render failure, output
    // rejection or flag must still be what every forced generation ends with: that is what forcing
    // is for (a client test of its rejection handling must not flake with the scenario's odds).
    const risky = makeSim({
      scenario: fastWith((s) => {
        s.keyframe_first_share = 1;
        s.stages.keyframe.failure = { probability: 0.5, code: 'keyframe_failed' };
      }),
    });
    const flags = [{ code: 'x', severity: 'warning', message: 'm' }];
    const forcedKinds = [
      { outcome: { fail_stage: 'render' }, expect: { status: 'failed', code: 'render_failed', last_stage: 'render' } },
      { outcome: { output_rejected: true }, expect: { status: 'failed', code: 'output_rejected', last_stage: 'output_verification' } },
      { outcome: { flags }, expect: { status: 'succeeded', code: null, last_stage: 'output_verification' } },
    ];
    const mismatches: unknown[] = [];
    for (const kind of forcedKinds) {
      await queueFault(risky, { path: '/v1/videos', method: 'POST', outcome: kind.outcome, times: 10 });
      const ids = await createMany(risky, 10);
      await advanceOk(risky, 20);
      for (const id of ids) {
        const g = (await request(risky.app).get(`/_sim/generations/${id}`)).body as Gen;
        const got = { status: g.status, code: g.error?.code ?? null, last_stage: g.stages.at(-1)?.stage };
        if (JSON.stringify(got) !== JSON.stringify(kind.expect)) mismatches.push({ forced: kind.outcome, id, got });
      }
    }
    expect(mismatches, 'forced generations that ended otherwise').toEqual([]);
  });

  it('outcome claim_linking_rejected: 422 at stage claim_linking', async () => {
    await queueFault(sim, { path: '/v1/videos', method: 'POST', outcome: { claim_linking_rejected: true } });
    const res = await createVideo(sim);
    expect(expectError(res, 422, 'compliance_error', 'claim_linking_rejected').stage).toBe('claim_linking');
    expect((await createVideo(sim)).status).toBe(200);
  });

  it('outcome output_rejected: failed with compliance_error output_rejected', async () => {
    await queueFault(sim, { path: '/v1/videos', method: 'POST', outcome: { output_rejected: true } });
    const res = await createVideo(sim);
    await advanceOk(sim, 20);
    const g = (await getVideo(sim, res.body.id)).body as Gen;
    expect(g.status).toBe('failed');
    expect(g.error).toMatchObject({ type: 'compliance_error', code: 'output_rejected', stage: 'output_verification' });
    expect(g.compliance?.verified).toBe(false);
    expect(g.compliance?.flags.some((f) => f.severity === 'block')).toBe(true);
  });

  it('outcome flags: succeeded with exactly that flag', async () => {
    const flags = [{ code: 'x', severity: 'warning', message: 'm' }];
    await queueFault(sim, { path: '/v1/videos', method: 'POST', outcome: { flags } });
    const res = await createVideo(sim);
    await advanceOk(sim, 20);
    const g = (await getVideo(sim, res.body.id)).body as Gen;
    expect(g.status).toBe('succeeded');
    expect(g.compliance).toEqual({ verified: true, flags });
  });

  it('latency_ms delays the matching request (wall clock, any mode)', async () => {
    const { sleep, slept } = recordSleeps();
    const delayed = makeSim({ scenario: fastWith((s) => (s.keyframe_first_share = 1)), sleep });
    await queueFault(delayed, { path: '/v1/videos', method: 'GET', latency_ms: 300 });
    expect((await request(delayed.app).get('/v1/videos').set(bearer())).status).toBe(200);
    expect((await request(delayed.app).get('/v1/videos').set(bearer())).status).toBe(200);
    // The matching request waited 300 ms on the manual clock; the next one did not wait.
    expect(slept).toEqual([300]);
  });

  it('times 2: exactly the next two matching requests get the error', async () => {
    expect(await queueFault(sim, { path: '/v1/videos', method: 'GET', status: 500, times: 2 })).toBe(2);
    expectError(await request(sim.app).get('/v1/videos').set(bearer()), 500, 'api_error', 'internal_error');
    expectError(await request(sim.app).get('/v1/videos').set(bearer()), 500, 'api_error', 'internal_error');
    expect((await request(sim.app).get('/v1/videos').set(bearer())).status).toBe(200);
  });

  it('api_key scopes a fault to one account', async () => {
    await queueFault(sim, { path: '/v1/videos', method: 'GET', status: 429, api_key: 'sk_test_bob' });
    expect((await request(sim.app).get('/v1/videos').set(bearer())).status).toBe(200);
    const bob = await request(sim.app).get('/v1/videos').set(bearer('sk_test_bob'));
    expectError(bob, 429, 'rate_limit_error', 'rate_limit_exceeded');
    expect(bob.headers['retry-after']).toBe('1');
    expect((await request(sim.app).get('/v1/videos').set(bearer('sk_test_bob'))).status).toBe(200);
  });
});

describe('scenario objects from loadScenario', () => {
  it('are independent copies: changing one changes no scenario loaded later (default stays fault-free)', async () => {
    // The way to build a scenario object in code (README: createSimulator takes "a resolved
    // scenario object") is to load one and change it. Nothing else may change with it.
    const mine = loadScenario('fast');
    const fault = { status: 500 as const, probability: 1 };
    mine.http.faults.push(fault);
    mine.compliance.claim_linking.rules.push({ pattern: 'rain' });
    try {
      const fresh = loadScenario('default');
      const leaked = structuredClone({ faults: fresh.http.faults, claim_rules: fresh.compliance.claim_linking.rules });
      const sim = makeSim({ scenario: 'default' });
      const res = await createVideo(sim, { prompt: 'A walk in the rain.' });
      expect({ leaked, status: res.status }).toEqual({ leaked: { faults: [], claim_rules: [] }, status: 200 });
    } finally {
      // Undo, whatever the outcome, so that no other test of this file sees the change.
      const faults = mine.http.faults;
      faults.splice(faults.indexOf(fault), 1);
      mine.compliance.claim_linking.rules.pop();
    }
  });
});
