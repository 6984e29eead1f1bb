/**
 * The scenario engine, key by key: every key of a scenario does something a client can observe over
 * HTTP, on the manual clock. Each test builds a scenario object from `fast`, changes one key (or a
 * few that belong together), runs a simulator on it and measures the effect through /v1 and /_sim,
 * never by sampling the distribution functions directly.
 *
 * Here: accounts (balances, reservations, negative prompts), account_defaults, direct text-to-video,
 * flat renders, and auth (key prefix, revoked keys).
 */
import request from 'supertest';
import { beforeAll, describe, expect, it } from 'vitest';
import { advanceOk, bearer, cancelVideo, createMany, createVideo, expectError, fastWith, generationsOf, journalOf, makeSim, queueFault, stageSeconds } from './helpers.js';
import type { SimGeneration as Gen } from './helpers.js';

type Sim = ReturnType<typeof makeSim>;

// ---------------------------------------------------------------------------------------------

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
    expect(await generationsOf(sim, key)).toHaveLength(3); // the 402 stored nothing
    await advanceOk(sim, 20);
    const gens = await generationsOf(sim, key);
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
    const gens = await generationsOf(sim, key);
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
    const [g] = await generationsOf(sim, key);
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
      const entries = await journalOf(sim, key, 1);
      expect(entries[0]).toMatchObject({ method: 'POST', path: '/v1/videos', status: 200, account: key });
      expect(entries[0]?.negative_prompt_effective, `${key} + ${requested}`).toBe(effective);
    }
  });

  it('keyframe_first_share 0: every keyframe is null and no keyframe stage is walked', async () => {
    await createMany(sim, 20, {}, 'sk_test_direct');
    await advanceOk(sim, 20);
    const gens = await generationsOf(sim, 'sk_test_direct');
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
    const gens = await generationsOf(sim, 'sk_test_plain');
    const [g4, g16] = gens.slice(-2);
    expect([g4?.duration_seconds, g16?.duration_seconds]).toEqual([4, 16]);
    expect(stageSeconds(g4 as Gen, 'render')).toBe(0.5);
    expect(stageSeconds(g16 as Gen, 'render')).toBe(0.5);
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
    const entries = await journalOf(sim);
    expect(entries.filter((e) => e.status === 401)).toHaveLength(5);
    expect(entries.filter((e) => e.status === 401).every((e) => e.account === null)).toBe(true);
    expect(await generationsOf(sim, 'pk_gone')).toEqual([]);
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
