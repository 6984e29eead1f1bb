/**
 * The scenario engine, key by key: every key of a scenario does something a client can observe over
 * HTTP, on the manual clock. Each test builds a scenario object from `fast`, changes one key (or a
 * few that belong together), runs a simulator on it and measures the effect through /v1 and /_sim,
 * never by sampling the distribution functions directly.
 *
 * Here: routing rules, stage failures, claim linking and output-verification flags, and
 * pricing.failure_charge.
 */
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { PROMPT, advanceOk, bearer, createMany, createVideo, expectError, expectShare, fastWith, generationsOf, getVideo, makeSim, queueFault, share } from './helpers.js';
import type { SimGeneration as Gen } from './helpers.js';

// ---------------------------------------------------------------------------------------------

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
    const gens = await generationsOf(sim);
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
    expect(await generationsOf(sim)).toEqual([]);
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
    expect(await generationsOf(sim)).toHaveLength(400 - rejected);
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
        message: 'The output was rejected by output verification (likeness).',
        stage: 'output_verification',
      });
      expect(o.compliance).toEqual({ verified: false, flags: [{ code: 'likeness', severity: 'block', message: 'A real person.' }] });
      expect(o.routed_model).not.toBeNull();
      expect(o.output).toBeNull();
    });
  }
});
