/**
 * Live control of one generation (README, "Produce every state"): POST
 * /_sim/generations/{id}/advance, /finish, /fail and /cancel, in-process through supertest on the
 * manual clock.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import { afterAll, describe, expect, it } from 'vitest';
import { loadScenario, type Scenario } from '../src/index.js';
import { parseTranscript } from './transcripts.js';
import { replayTranscript } from '../src/transcript/replay.js';
import {
  advanceOk,
  createMany,
  createVideo,
  expectError,
  expectNoInternalErrors,
  fastWith,
  getVideo,
  journalOf,
  makeSim,
  withFreshSim,
  type SimGeneration,
} from './helpers.js';

const START = '2026-01-01T00:00:00.000Z';
type Sim = ReturnType<typeof makeSim>;

function control(sim: Sim, id: string, action: 'advance' | 'finish' | 'fail' | 'cancel', body?: Record<string, unknown>) {
  const req = request(sim.app).post(`/_sim/generations/${id}/${action}`);
  return body === undefined ? req : req.send(body);
}

async function controlOk(sim: Sim, id: string, action: 'advance' | 'finish' | 'fail' | 'cancel', body?: Record<string, unknown>): Promise<SimGeneration> {
  const res = await control(sim, id, action, body);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body as SimGeneration;
}

async function controlView(sim: Sim, id: string): Promise<SimGeneration> {
  const res = await request(sim.app).get(`/_sim/generations/${id}`);
  expect(res.status).toBe(200);
  return res.body as SimGeneration;
}

async function createOne(sim: Sim, body: Record<string, unknown> = {}, key = 'sk_test_alice'): Promise<string> {
  return (await createMany(sim, 1, body, key))[0] as string;
}

/** Advances a generation through the endpoint until it shows `status`. */
async function advanceTo(sim: Sim, id: string, status: string): Promise<SimGeneration> {
  for (let i = 0; i < 8; i++) {
    const g = await controlView(sim, id);
    if (g.status === status) return g;
    await controlOk(sim, id, 'advance');
  }
  throw new Error(`generation ${id} never reached ${status}`);
}

/** A `fast` scenario where stage failures and output rejections happen often. */
function eventful(change: (s: Scenario) => void = () => {}): Scenario {
  return fastWith((s) => {
    s.stages.keyframe.failure = { probability: 0.15, code: 'keyframe_failed' };
    s.stages.routing.failure = { probability: 0.15, code: 'upstream_timeout' };
    s.stages.render.failure = { probability: 0.2, code: 'render_failed' };
    s.compliance.output_verification.reject_share = 0.2;
    s.compliance.output_verification.flag_share = 0.3;
    s.compliance.output_verification.flags = [
      { code: 'policy_violation', severity: 'block', message: 'Blocked.' },
      { code: 'low_confidence', severity: 'info', message: 'Low confidence.' },
    ];
    change(s);
  });
}

let sim: Sim;
withFreshSim((fresh) => (sim = fresh));

describe('POST /_sim/generations/{id}/advance', () => {
  it('ends the current stage now and enters the next, moving neither the clock nor other generations', async () => {
    const [first, second] = await createMany(sim, 2);
    const g = await controlOk(sim, first as string, 'advance');
    expect(g.status).toBe('processing');
    expect(g.stages.map((v) => [v.stage, v.entered_at, v.left_at])).toEqual([
      ['claim_linking', START, START],
      ['queue', START, START],
      [g.stages[2]?.stage, START, null],
    ]);
    expect(['keyframe', 'routing']).toContain(g.stages[2]?.stage);
    expect((await request(sim.app).get('/_sim/clock')).body.now).toBe(START);
    expect((await controlView(sim, second as string)).status).toBe('queued');
    expect((await getVideo(sim, first as string)).body.status).toBe('processing');
  });

  it('fills the field of the stage it ends: routing ends with routed_model set', async () => {
    const id = await createOne(sim);
    let g = await advanceTo(sim, id, 'processing');
    while (g.stages.at(-1)?.stage !== 'routing') g = await controlOk(sim, id, 'advance');
    expect(g.routed_model).toBeNull();
    g = await controlOk(sim, id, 'advance');
    expect(g.stages.at(-1)?.stage).toBe('render');
    expect(g.routed_model).not.toBeNull();
  });

  it('resolves from the last stage to the drawn fate, at the current instant', async () => {
    const id = await createOne(sim);
    await advanceOk(sim, 0.25);
    await advanceTo(sim, id, 'verifying');
    const g = await controlOk(sim, id, 'advance');
    expect(g.status).toBe('succeeded');
    expect(g.completed_at).toBe('2026-01-01T00:00:00.250Z');
    expect(g.cost_cents).toBeGreaterThan(0);
    expect(g.output).not.toBeNull();
    expect(g.stages.at(-1)).toEqual({ stage: 'output_verification', entered_at: '2026-01-01T00:00:00.250Z', left_at: '2026-01-01T00:00:00.250Z' });
  });

  it('keeps the next stage on its drawn duration: the clock ends it as scheduled', async () => {
    const id = await createOne(sim);
    const entered = await controlOk(sim, id, 'advance');
    const stage = entered.stages.at(-1)?.stage;
    await advanceOk(sim, 3);
    const later = await controlView(sim, id);
    const visit = later.stages.find((v) => v.stage === stage);
    expect(visit?.entered_at).toBe(START);
    expect(visit?.left_at).not.toBeNull();
  });

  it('answers 400 generation_resolved on a resolved generation and 404 on an unknown id', async () => {
    const id = await createOne(sim);
    await advanceOk(sim, 60);
    for (const action of ['advance', 'finish', 'fail', 'cancel'] as const) {
      expectError(await control(sim, id, action), 400, 'invalid_request_error', 'generation_resolved', null);
      expectError(await control(sim, 'vid_nope', action), 404, 'invalid_request_error', 'resource_not_found', 'id');
    }
  });
});

describe('POST /_sim/generations/{id}/finish', () => {
  it('runs every remaining stage now: all stage times and completed_at are the current instant', async () => {
    const id = await createOne(sim);
    await advanceOk(sim, 0.1);
    const g = await controlOk(sim, id, 'finish');
    const now = '2026-01-01T00:00:00.100Z';
    expect(g.status).toBe('succeeded');
    expect(g.completed_at).toBe(now);
    expect(g.stages[1]).toEqual({ stage: 'queue', entered_at: START, left_at: now });
    for (const visit of g.stages.slice(2)) expect(visit).toEqual({ stage: visit.stage, entered_at: now, left_at: now });
    expect(g.stages.at(-1)?.stage).toBe('output_verification');
    expect((await getVideo(sim, id)).body).toEqual(Object.fromEntries(Object.entries(g).filter(([k]) => k !== 'account' && k !== 'stages')));
  });

  it('reaches exactly the outcome the clock would have reached (same seed: status, error, cost, model, compliance, keyframe)', async () => {
    const scenario = eventful();
    const byEndpoint = makeSim({ scenario, seed: 7 });
    const byClock = makeSim({ scenario, seed: 7 });
    const ids = await createMany(byEndpoint, 40);
    expect(await createMany(byClock, 40)).toEqual(ids);
    // Some are part-way through when finished.
    await advanceOk(byEndpoint, 1);
    await advanceOk(byClock, 600);
    const outcome = (g: SimGeneration) => [g.status, g.error, g.cost_cents, g.routed_model, g.compliance, g.keyframe];
    const seen = new Set<string>();
    for (const id of ids) {
      const current = await controlView(byEndpoint, id);
      const finished = ['succeeded', 'failed'].includes(current.status) ? current : await controlOk(byEndpoint, id, 'finish');
      const clocked = await controlView(byClock, id);
      expect(outcome(finished), id).toEqual(outcome(clocked));
      seen.add(`${finished.status} ${finished.error?.code ?? ''}`);
    }
    // The comparison covered successes and each kind of failure.
    expect([...seen].sort()).toEqual(['failed keyframe_failed', 'failed output_rejected', 'failed render_failed', 'failed upstream_timeout', 'succeeded ']);
    expectNoInternalErrors(byEndpoint);
  });
});

describe('POST /_sim/generations/{id}/fail', () => {
  it("fails a processing generation now with the stage's default code, charging what a failure there charges", async () => {
    const id = await createOne(sim);
    const processing = await advanceTo(sim, id, 'processing');
    const stage = processing.stages.at(-1)?.stage as string;
    const g = await controlOk(sim, id, 'fail');
    expect(g.status).toBe('failed');
    expect(g.error).toEqual({ type: 'api_error', code: `${stage}_failed`, message: expect.stringContaining(`the ${stage} stage`) });
    expect(g.cost_cents).toBe(0);
    expect(g.completed_at).toBe(START);
    expect(g.stages.at(-1)).toEqual({ stage, entered_at: START, left_at: START });
    const seen = (await getVideo(sim, id)).body;
    expect([seen.status, seen.error, seen.output]).toEqual(['failed', g.error, null]);
  });

  it("takes a code among the stage's codes, and the scenario's own code there is the default", async () => {
    const scenario = fastWith((s) => {
      s.stages.render.failure = { probability: 0, code: 'upstream_timeout' };
    });
    const local = makeSim({ scenario });
    const pipeline = (await request(local.app).get('/_sim/pipeline')).body.data as { name: string; failure_codes: string[] }[];
    expect(Object.fromEntries(pipeline.map((s) => [s.name, s.failure_codes]))).toEqual({
      claim_linking: ['claim_linking_rejected'],
      queue: [],
      keyframe: ['keyframe_failed', 'upstream_timeout', 'internal_error'],
      routing: ['routing_failed', 'upstream_timeout', 'internal_error'],
      render: ['upstream_timeout', 'render_failed', 'internal_error'],
      output_verification: ['output_rejected'],
    });
    const [a, b] = await createMany(local, 2);
    for (const id of [a, b] as string[]) {
      let g = await advanceTo(local, id, 'processing');
      while (g.stages.at(-1)?.stage !== 'render') g = await controlOk(local, id, 'advance');
    }
    expect((await controlOk(local, a as string, 'fail')).error?.code).toBe('upstream_timeout');
    expect((await controlOk(local, b as string, 'fail', { code: 'internal_error' })).error?.code).toBe('internal_error');
  });

  it('rejects a code that does not belong to the stage (400 invalid_parameter, param code)', async () => {
    const id = await createOne(sim);
    await advanceTo(sim, id, 'processing');
    for (const code of ['output_rejected', 'resource_not_found', 'nonsense']) {
      expectError(await control(sim, id, 'fail', { code }), 400, 'invalid_request_error', 'invalid_parameter', 'code');
    }
    expect((await controlView(sim, id)).status).toBe('processing');
  });

  it('answers 400 invalid_parameter (param id) for a queued generation, whose stage cannot fail', async () => {
    const id = await createOne(sim);
    expectError(await control(sim, id, 'fail'), 400, 'invalid_request_error', 'invalid_parameter', 'id');
    expect((await controlView(sim, id)).status).toBe('queued');
  });

  it('says a queued generation cannot fail whatever code is asked for (param id, the stages that can)', async () => {
    const id = await createOne(sim);
    for (const body of [{}, { code: 'render_failed' }, { code: 'nonsense' }]) {
      const res = await control(sim, id, 'fail', body);
      expectError(res, 400, 'invalid_request_error', 'invalid_parameter', 'id');
      expect(res.body.error.message).toBe(
        'A generation in the queue stage cannot fail. Advance it to a stage that can (keyframe, routing, render, output_verification) first.',
      );
    }
    expect((await controlView(sim, id)).status).toBe('queued');
  });

  it('rejects the output of a verifying generation: compliance_error with a block flag, charged as a render that happened', async () => {
    const id = await createOne(sim);
    await advanceTo(sim, id, 'verifying');
    const g = await controlOk(sim, id, 'fail');
    expect(g.status).toBe('failed');
    expect(g.error).toEqual({
      type: 'compliance_error',
      code: 'output_rejected',
      stage: 'output_verification',
      message: 'The output was rejected by output verification (policy_violation; forced through the control API).',
    });
    expect(g.compliance).toEqual({ verified: false, flags: [{ code: 'policy_violation', severity: 'block', message: expect.any(String) }] });
    expect(g.cost_cents).toBeGreaterThan(0);
    expect(g.output).toBeNull();
  });
});

describe('POST /_sim/generations/{id}/cancel', () => {
  it('cancels a queued or processing generation: canceled, cost null, at the current instant', async () => {
    const [queued, processing] = await createMany(sim, 2);
    await advanceTo(sim, processing as string, 'processing');
    await advanceOk(sim, 0.2);
    for (const id of [queued, processing] as string[]) {
      const g = await controlOk(sim, id, 'cancel');
      expect([g.status, g.cost_cents, g.completed_at]).toEqual(['canceled', null, '2026-01-01T00:00:00.200Z']);
      expect((await getVideo(sim, id)).body.status).toBe('canceled');
    }
  });

  it('answers 400 not_cancelable while verifying, as the service does', async () => {
    const id = await createOne(sim);
    await advanceTo(sim, id, 'verifying');
    expectError(await control(sim, id, 'cancel'), 400, 'invalid_request_error', 'not_cancelable', null);
    expect((await controlView(sim, id)).status).toBe('verifying');
  });
});

describe('live control requests', () => {
  it('are no client requests: not in the journal, not in the client report', async () => {
    const ids = await createMany(sim, 3);
    await controlOk(sim, ids[0] as string, 'advance');
    await controlOk(sim, ids[1] as string, 'finish');
    await controlOk(sim, ids[2] as string, 'cancel');
    expect((await journalOf(sim)).map((e) => `${e.method} ${e.path}`)).toEqual(['POST /v1/videos', 'POST /v1/videos', 'POST /v1/videos']);
    const report = (await request(sim.app).get('/_sim/report').query({ api_key: 'sk_test_alice' })).body;
    expect(report.requests).toBe(3);
  });

  it('touch only their generation: another account on its own clock is not moved', async () => {
    const mine = await createOne(sim);
    const theirs = await createOne(sim, {}, 'sk_test_bob');
    await controlOk(sim, mine, 'finish');
    expect((await controlView(sim, theirs)).status).toBe('queued');
    expect((await createVideo(sim, {}, 'sk_test_bob')).status).toBe(200);
  });

  it.each(['advance', 'finish', 'fail', 'cancel'] as const)('%s refuses a body field it does not take (400 unknown_parameter) and moves nothing', async (action) => {
    const id = await createOne(sim);
    await advanceTo(sim, id, 'processing');
    const before = await controlView(sim, id);
    expectError(await control(sim, id, action, { bogus: 1 }), 400, 'invalid_request_error', 'unknown_parameter', 'bogus');
    expectError(await control(sim, id, action, { seconds: 5, api_key: 'sk_test_alice' }), 400, 'invalid_request_error', 'unknown_parameter', 'seconds');
    expect(await controlView(sim, id)).toEqual(before);
  });

  it.each(['advance', 'finish', 'fail', 'cancel'] as const)(
    "%s with another account's api_key (body or query) does not find the generation (404), and moves nothing",
    async (action) => {
      const id = await createOne(sim);
      await advanceTo(sim, id, 'processing');
      const before = await controlView(sim, id);
      for (const key of ['sk_test_bob', 'constructor', '__proto__']) {
        expectError(await control(sim, id, action, { api_key: key }), 404, 'invalid_request_error', 'resource_not_found', 'id');
        const inQuery = await request(sim.app).post(`/_sim/generations/${id}/${action}`).query({ api_key: key });
        expectError(inQuery, 404, 'invalid_request_error', 'resource_not_found', 'id');
      }
      expect(await controlView(sim, id)).toEqual(before);
      expect((await request(sim.app).get('/_sim/health')).body.limits.accounts).toBe(1);
      // The account's own key (in either place) reaches it.
      expect((await control(sim, id, action, { api_key: 'sk_test_alice' })).status).toBe(200);
    },
  );

  it('the control methods take apiKey: the owner moves its generation, another account gets the 404', async () => {
    const id = await createOne(sim);
    expect(() => sim.generations.advance(id, 'sk_test_bob')).toThrow(
      expect.objectContaining({ name: 'SimulatorControlError', status: 404, body: expect.objectContaining({ error: expect.objectContaining({ code: 'resource_not_found' }) }) }),
    );
    expect(sim.generations.advance(id, 'sk_test_alice').status).toBe('processing');
    expect(sim.generations.cancel(id, 'sk_test_alice').status).toBe('canceled');
  });

  describe('in a transcript', () => {
    const dir = mkdtempSync(join(tmpdir(), 'sim-live-'));
    afterAll(() => rmSync(dir, { recursive: true, force: true }));

    it('are recorded, and sim replay gives the same answers', async () => {
      const file = join(dir, 'live.jsonl');
      const recording = makeSim({ scenario: eventful(), record: file });
      const ids = await createMany(recording, 4);
      await advanceOk(recording, 0.3);
      await controlOk(recording, ids[0] as string, 'advance');
      await controlOk(recording, ids[1] as string, 'finish');
      await advanceTo(recording, ids[2] as string, 'processing');
      await controlOk(recording, ids[2] as string, 'fail', { code: 'internal_error' });
      await controlOk(recording, ids[3] as string, 'cancel');
      expect((await control(recording, ids[3] as string, 'cancel')).status).toBe(400);
      await advanceOk(recording, 30);
      await request(recording.app).get('/v1/videos').set('Authorization', 'Bearer sk_test_alice');
      await recording.close();
      const transcript = parseTranscript(readFileSync(file, 'utf8'));
      expect(transcript.lines.filter((l) => l.path.startsWith('/_sim/generations/')).map((l) => l.path.split('/').at(-1))).toEqual(
        expect.arrayContaining(['advance', 'finish', 'fail', 'cancel']),
      );
      // A 400 changes nothing: it is not recorded.
      expect(transcript.lines.filter((l) => l.path.endsWith('/cancel'))).toHaveLength(1);
      const report = replayTranscript(transcript, { loadScenario: (name) => loadScenario(name) });
      expect(report.differences).toEqual([]);
      expect(report.identical).toBe(transcript.lines.length);
    });
  });
});
