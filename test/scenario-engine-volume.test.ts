/**
 * The scenario engine, key by key: every key of a scenario does something a client can observe over
 * HTTP, on the manual clock. Each test builds a scenario object from `fast`, changes one key (or a
 * few that belong together), runs a simulator on it and measures the effect through /v1 and /_sim,
 * never by sampling the distribution functions directly.
 *
 * Here: the keys whose effect is a distribution or a share, measured over a volume run of 1,000
 * generations (tolerances set so that a wrong setting would break them, next to the exact counts
 * this seed gives), and lognormal durations clamped by min and max.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { advanceOk, createMany, expectShare, fastWith, generationsOf, makeSim, quantile, share, stageSeconds, tally } from './helpers.js';
import type { SimGeneration as Gen } from './helpers.js';

type Sim = ReturnType<typeof makeSim>;

function stageDurations(gens: Gen[], stage: string): number[] {
  return gens.map((g) => stageSeconds(g, stage)).filter((d): d is number => d !== undefined);
}

function expectWithinRelative(label: string, measured: number, expected: number, tolerance: number): void {
  expect(
    Math.abs(measured - expected) / expected,
    `${label}: measured ${measured.toFixed(3)}, configured ${expected} (tolerance ±${tolerance * 100}%)`,
  ).toBeLessThanOrEqual(tolerance);
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
    gens = await generationsOf(sim);
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
    expect([Math.min(...ov), Math.max(...ov)]).toEqual([2.015, 6.999]);
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
    const queue = stageDurations(await generationsOf(sim), 'queue');
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
