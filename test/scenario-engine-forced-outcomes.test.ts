/**
 * The scenario engine, key by key: every key of a scenario does something a client can observe over
 * HTTP, on the manual clock. Each test builds a scenario object from `fast`, changes one key (or a
 * few that belong together), runs a simulator on it and measures the effect through /v1 and /_sim,
 * never by sampling the distribution functions directly.
 *
 * Here: outcomes forced through POST /_sim/faults (stage failures, output rejection, flags, claim-
 * linking rejection, latency, times, api_key), which win over the scenario's own draws.
 */
import request from 'supertest';
import { beforeAll, describe, expect, it } from 'vitest';
import { advanceOk, bearer, createMany, createVideo, expectError, fastWith, getVideo, makeSim, queueFault, recordSleeps } from './helpers.js';
import type { SimGeneration as Gen } from './helpers.js';

type Sim = ReturnType<typeof makeSim>;

// ---------------------------------------------------------------------------------------------

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
    // stage"; docs/control-api.md: "create a generation whose fate is forced").
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
