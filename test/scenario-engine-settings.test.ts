/**
 * The scenario engine, key by key: every key of a scenario does something a client can observe over
 * HTTP, on the manual clock. Each test builds a scenario object from `fast`, changes one key (or a
 * few that belong together), runs a simulator on it and measures the effect through /v1 and /_sim,
 * never by sampling the distribution functions directly.
 *
 * Here: exact settings (clock start and mode, name, fixed durations, models, keyframe-first, prices,
 * latency in manual mode), seed, clock.speed and http.latency in realtime mode, and scenario objects
 * from loadScenario.
 */
import request from 'supertest';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadScenario } from '../src/index.js';
import { PROMPT, advanceOk, bearer, createMany, createVideo, expectError, fastWith, generationsOf, getVideo, makeSim, ms, recordSleeps, stageSeconds } from './helpers.js';
import type { SimGeneration as Gen } from './helpers.js';

type Sim = ReturnType<typeof makeSim>;

// ---------------------------------------------------------------------------------------------

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
  // The host's wall clock, injected: a test moves it instead of waiting.
  let wallMs = Date.parse('2030-01-01T00:00:00.000Z');
  beforeAll(() => {
    // clock: undefined, so that the scenario's own clock.mode applies.
    sim = makeSim({ scenario, clock: undefined, now: () => wallMs });
  });

  it('clock.start sets the clock and created_at of the first generation', async () => {
    expect((await request(sim.app).get('/_sim/clock')).body.now).toBe(START);
    const res = await createVideo(sim, {}, 'sk_test_start');
    expect(res.body.created_at).toBe(START);
    await advanceOk(sim, 2.5);
    expect((await createVideo(sim, {}, 'sk_test_start')).body.created_at).toBe('2031-07-08T09:10:13.623Z');
    const [first] = await generationsOf(sim, 'sk_test_start');
    expect(first?.stages[0]).toEqual({ stage: 'claim_linking', entered_at: START, left_at: START });
  });

  it('clock.mode manual: the scenario clock stands still while wall time passes', async () => {
    const before = await request(sim.app).get('/_sim/clock');
    expect(before.body.mode).toBe('manual');
    wallMs += 60_000;
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
    const gens = await generationsOf(sim, 'sk_test_fixed');
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
    const [g4, g16] = await generationsOf(sim, 'sk_test_per_second');
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
    const gens = await generationsOf(sim, 'sk_test_kf1');
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
  // The latency waits go through an injected sleep: recorded, not slept. The wall clock is injected too.
  const { sleep, slept } = recordSleeps();
  let wallMs = Date.parse('2030-01-01T00:00:00.000Z');
  beforeAll(() => {
    sim = makeSim({
      now: () => wallMs,
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
    const c0 = await request(sim.app).get('/_sim/clock');
    expect(c0.body).toMatchObject({ mode: 'realtime', speed: 1000 });
    wallMs += 30;
    const c1 = await request(sim.app).get('/_sim/clock');
    // 30 ms of wall time: 30 virtual seconds at speed 1000.
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

describe('scenario objects from loadScenario', () => {
  it('are independent copies: changing one changes no scenario loaded later (default stays fault-free)', async () => {
    // The way to build a scenario object in code (docs/testing.md: createSimulator takes "a
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
