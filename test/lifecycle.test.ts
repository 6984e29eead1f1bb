/**
 * The life of one generation: the fields of a fresh generation (rule 1), the walk through the
 * statuses and the exact stage at which every field fills in (openapi.yaml, Video: when fields fill in),
 * cost, keyframe-first vs direct, cancel from every status, failures, output rejections, flags,
 * and the `default` scenario's timing promises.
 */
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { loadScenario, type Scenario } from '../src/index.js';
import { PROMPT, bearer, cancelVideo, createVideo, expectError, getVideo, makeSim } from './helpers.js';

type Sim = ReturnType<typeof makeSim>;

interface StageVisit {
  stage: string;
  entered_at: string;
  left_at: string | null;
}

const PRICE_PER_SECOND: Record<string, number> = { '720p': 5, '1080p': 10 };
const KEYFRAME_CENTS = 2;

async function control(sim: Sim, id: string) {
  const res = await request(sim.app).get(`/_sim/generations/${id}`);
  expect(res.status).toBe(200);
  return res.body as Record<string, unknown> & { stages: StageVisit[]; status: string };
}

function nowMs(sim: Sim, apiKey?: string): number {
  return Date.parse(sim.clock.state(apiKey).now);
}

/** Moves the global clock to an absolute virtual time (epoch ms). */
function advanceTo(sim: Sim, targetMs: number): void {
  const delta = targetMs - nowMs(sim);
  if (delta < 0) throw new Error(`cannot go back in time by ${-delta} ms`);
  sim.clock.advance(delta / 1000);
}

/** Advances in small steps until the generation's status satisfies `done` (polling, never sleeping). */
async function advanceUntil(sim: Sim, id: string, status: string, stepSeconds = 0.05, maxSeconds = 60) {
  for (let waited = 0; waited <= maxSeconds; waited += stepSeconds) {
    const res = await getVideo(sim, id);
    expect(res.status).toBe(200);
    if (res.body.status === status) return res;
    sim.clock.advance(stepSeconds);
  }
  throw new Error(`generation ${id} never reached '${status}' within ${maxSeconds} s`);
}

function fastWith(patch: (s: Scenario) => Scenario): Scenario {
  return patch(loadScenario('fast'));
}

function expectedPrice(resolution: string, duration: number, keyframeGenerated: boolean): number {
  return (PRICE_PER_SECOND[resolution] as number) * duration + (keyframeGenerated ? KEYFRAME_CENTS : 0);
}

const NULL_UNTIL_PROGRESS = ['routed_model', 'keyframe', 'compliance', 'output', 'cost_cents', 'error', 'completed_at'];

describe('POST /v1/videos: the generation directly after creation (rule 1)', () => {
  it('is queued with routed_model, keyframe, compliance, output, cost_cents, error and completed_at null', async () => {
    const sim = makeSim();
    const res = await createVideo(sim);
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('queued');
    expect(res.body.object).toBe('video');
    expect(res.body.id).toMatch(/^vid_[0-9A-Za-z]{24}$/);
    for (const field of NULL_UNTIL_PROGRESS) expect(res.body[field], field).toBeNull();
    // The same holds when the generation is read back at once.
    const got = await getVideo(sim, res.body.id);
    expect(got.body).toEqual(res.body);
  });

  it('has negative_prompt null when none was given, and defaults duration 8 and resolution 1080p', async () => {
    const sim = makeSim();
    const res = await createVideo(sim);
    expect(res.body).toMatchObject({
      negative_prompt: null,
      model: 'video-3.2',
      prompt: PROMPT,
      duration_seconds: 8,
      resolution: '1080p',
      created_at: '2026-01-01T00:00:00.000Z',
    });
  });

  it('echoes a given negative_prompt exactly as submitted', async () => {
    const sim = makeSim();
    const res = await createVideo(sim, { negative_prompt: 'blurry, low contrast', duration_seconds: 4, resolution: '720p' });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ negative_prompt: 'blurry, low contrast', duration_seconds: 4, resolution: '720p' });
    for (const field of NULL_UNTIL_PROGRESS) expect(res.body[field], field).toBeNull();
  });

  it('treats negative_prompt null like leaving it out', async () => {
    const sim = makeSim();
    const res = await createVideo(sim, { negative_prompt: null });
    expect(res.status).toBe(200);
    expect(res.body.negative_prompt).toBeNull();
  });
});

/**
 * Twin simulators: the first runs a script to the end and reveals every stage's times; the second
 * runs the same script (same seed, key, requests: the same fates) and is observed at exact moments.
 */
async function createBatch(sim: Sim, n: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const res = await createVideo(sim, { duration_seconds: 4 + (i % 3) * 4, resolution: i % 2 ? '720p' : '1080p' });
    expect(res.status).toBe(200);
    ids.push(res.body.id);
  }
  return ids;
}

async function revealStages(n: number): Promise<{ ids: string[]; stages: StageVisit[][] }> {
  const scout = makeSim();
  const ids = await createBatch(scout, n);
  scout.clock.advance(60);
  const stages: StageVisit[][] = [];
  for (const id of ids) {
    const g = await control(scout, id);
    expect(g.status).toBe('succeeded');
    stages.push(g.stages);
  }
  return { ids, stages };
}

function boundary(stages: StageVisit[], name: string): number {
  const visit = stages.find((s) => s.stage === name);
  if (!visit || visit.left_at === null) throw new Error(`no finished '${name}' stage in ${JSON.stringify(stages)}`);
  return Date.parse(visit.left_at);
}

describe('GET /v1/videos/{id}: the walk through the pipeline, observed at exact stage boundaries', () => {
  it('the stage history is claim_linking, queue, keyframe (keyframe-first only), routing, render, output_verification, back to back', async () => {
    const { stages } = await revealStages(30);
    let keyframeFirst = 0;
    for (const history of stages) {
      const names = history.map((s) => s.stage);
      if (names.includes('keyframe')) keyframeFirst++;
      expect(names.filter((n) => n !== 'keyframe')).toEqual(['claim_linking', 'queue', 'routing', 'render', 'output_verification']);
      for (let i = 1; i < history.length; i++) {
        expect(history[i]?.entered_at, `stage ${names[i]} starts when ${names[i - 1]} ends`).toBe(history[i - 1]?.left_at);
      }
    }
    // Both kinds were walked: 28 keyframe-first, 2 direct.
    expect(keyframeFirst).toBe(28);
  });

  it('a keyframe-first generation shows queued → processing → verifying → succeeded, each field filling exactly at its stage end', async () => {
    const n = 10;
    const { ids, stages } = await revealStages(n);
    const pick = stages.findIndex((h) => h.some((s) => s.stage === 'keyframe'));
    expect(pick, 'the first generation in fast is keyframe-first').toBe(0);
    const history = stages[pick] as StageVisit[];

    const sim = makeSim();
    const twinIds = await createBatch(sim, n);
    expect(twinIds).toEqual(ids);
    const id = ids[pick] as string;

    const queueEnd = boundary(history, 'queue');
    const keyframeEnd = boundary(history, 'keyframe');
    const routingEnd = boundary(history, 'routing');
    const renderEnd = boundary(history, 'render');
    const verifyEnd = boundary(history, 'output_verification');

    const observe = async (atMs: number) => {
      advanceTo(sim, atMs);
      const res = await getVideo(sim, id);
      expect(res.status).toBe(200);
      return res.body;
    };

    // Just before the queue ends: still queued, nothing filled.
    let v = await observe(queueEnd - 1);
    expect(v.status).toBe('queued');
    for (const field of NULL_UNTIL_PROGRESS) expect(v[field], field).toBeNull();

    // The queue ends: processing, the keyframe not yet there.
    v = await observe(queueEnd);
    expect(v.status).toBe('processing');
    for (const field of NULL_UNTIL_PROGRESS) expect(v[field], field).toBeNull();

    v = await observe(keyframeEnd - 1);
    expect(v.status).toBe('processing');
    expect(v.keyframe).toBeNull();

    // The keyframe stage ends: keyframe filled; routed_model not yet.
    v = await observe(keyframeEnd);
    expect(v.status).toBe('processing');
    expect(v.keyframe).toEqual({ id: 'img_EuxN6nifAQL4RjDv651Q8K46', status: 'ready' });
    expect(v.routed_model).toBeNull();
    expect(v.compliance).toBeNull();
    const keyframe = v.keyframe;

    v = await observe(routingEnd - 1);
    expect(v.routed_model).toBeNull();

    // Routing ends: routed_model filled (video-3.2 at 1080p routes to an hd render model).
    v = await observe(routingEnd);
    expect(v.status).toBe('processing');
    expect(v.routed_model).toBe('render-3.2-hd-b');
    expect(v.keyframe).toEqual(keyframe);
    expect(v.compliance).toBeNull();
    expect(v.output).toBeNull();
    expect(v.cost_cents).toBeNull();

    v = await observe(renderEnd - 1);
    expect(v.status).toBe('processing');

    // Render ends: verifying; compliance only at the end of output verification.
    v = await observe(renderEnd);
    expect(v.status).toBe('verifying');
    expect(v.compliance).toBeNull();
    expect(v.output).toBeNull();
    expect(v.cost_cents).toBeNull();
    expect(v.completed_at).toBeNull();

    v = await observe(verifyEnd - 1);
    expect(v.status).toBe('verifying');
    expect(v.compliance).toBeNull();
    expect(v.output).toBeNull();
    expect(v.cost_cents).toBeNull();
    expect(v.completed_at).toBeNull();

    // Output verification ends: succeeded with compliance, output, cost and completed_at.
    v = await observe(verifyEnd);
    expect(v.status).toBe('succeeded');
    expect(v.compliance).toEqual({ verified: true, flags: [] });
    // In-process, before listen: the default media address.
    expect(v.output).toEqual({
      url: `http://localhost/cdn/videos/${id}.mp4`,
      thumbnail_url: `http://localhost/cdn/thumbnails/${id}.png`,
    });
    expect(v.cost_cents).toBe(expectedPrice(v.resolution, v.duration_seconds, true));
    expect(v.completed_at).toBe(new Date(verifyEnd).toISOString());
    expect(v.error).toBeNull();
    expect(v.keyframe).toEqual(keyframe);

    // Nothing changes afterwards.
    sim.clock.advance(3600);
    expect((await getVideo(sim, id)).body).toEqual(v);
  });

  it('a direct text-to-video generation never shows a keyframe, and routing follows the queue at once', async () => {
    const n = 30;
    const { ids, stages } = await revealStages(n);
    const pick = stages.findIndex((h) => !h.some((s) => s.stage === 'keyframe'));
    expect(pick, 'the 21st generation in fast is the first direct one').toBe(20);
    const history = stages[pick] as StageVisit[];

    const sim = makeSim();
    await createBatch(sim, n);
    const id = ids[pick] as string;
    const checkpoints = [
      boundary(history, 'queue') - 1,
      boundary(history, 'queue'),
      boundary(history, 'routing') - 1,
      boundary(history, 'routing'),
      boundary(history, 'render'),
      boundary(history, 'output_verification') - 1,
    ];
    const expected = ['queued', 'processing', 'processing', 'processing', 'verifying', 'verifying'];
    for (const [i, at] of checkpoints.entries()) {
      advanceTo(sim, at);
      const v = (await getVideo(sim, id)).body;
      expect(v.status, `at checkpoint ${i}`).toBe(expected[i]);
      expect(v.keyframe).toBeNull();
      expect(v.routed_model === null, `routed_model at checkpoint ${i}`).toBe(i < 3);
      expect(v.compliance).toBeNull();
      expect(v.output).toBeNull();
    }
    advanceTo(sim, boundary(history, 'output_verification'));
    const v = (await getVideo(sim, id)).body;
    expect(v.status).toBe('succeeded');
    expect(v.keyframe).toBeNull();
    expect(v.cost_cents).toBe(expectedPrice(v.resolution, v.duration_seconds, false));
  });

  it('GET of an unknown id is 404 resource_not_found', async () => {
    const sim = makeSim();
    const res = await getVideo(sim, 'vid_doesnotexist');
    expectError(res, 404, 'invalid_request_error', 'resource_not_found');
  });
});

describe('succeeded generations: output, cost and keyframe', () => {
  it('output urls end with /videos/{id}.mp4 and /thumbnails/{id}.png', async () => {
    const sim = makeSim();
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await createVideo(sim)).body.id);
    sim.clock.advance(30);
    for (const id of ids) {
      const v = (await getVideo(sim, id)).body;
      expect(v.status).toBe('succeeded');
      expect(v.output).toEqual({ url: `http://localhost/cdn/videos/${id}.mp4`, thumbnail_url: `http://localhost/cdn/thumbnails/${id}.png` });
    }
  });

  it.each([
    ['720p', 4],
    ['720p', 16],
    ['1080p', 4],
    ['1080p', 8],
    ['1080p', 16],
  ] as const)('cost_cents at %s for %i s is the per-second price times duration plus 2 when a keyframe was generated', async (resolution, duration) => {
    const sim = makeSim();
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) {
      const res = await createVideo(sim, { resolution, duration_seconds: duration });
      expect(res.status).toBe(200);
      ids.push(res.body.id);
    }
    sim.clock.advance(30);
    const views = [];
    for (const id of ids) views.push((await getVideo(sim, id)).body);
    // The first six generations in fast are keyframe-first (direct ones cost no keyframe: see below).
    expect(views.map((v) => [v.status, v.keyframe !== null, v.cost_cents])).toEqual(
      ids.map(() => ['succeeded', true, expectedPrice(resolution, duration, true)]),
    );
  });

  it('across 30 generations in fast both keyframe-first and direct generations occur, and direct ones end with keyframe null', async () => {
    const sim = makeSim();
    const ids: string[] = [];
    for (let i = 0; i < 30; i++) ids.push((await createVideo(sim)).body.id);
    sim.clock.advance(30);
    let keyframeFirst = 0;
    let direct = 0;
    for (const id of ids) {
      const v = (await getVideo(sim, id)).body;
      const stages = (await control(sim, id)).stages.map((s) => s.stage);
      expect(v.status).toBe('succeeded');
      if (v.keyframe === null) {
        direct++;
        expect(stages).not.toContain('keyframe');
        expect(v.cost_cents).toBe(80);
      } else {
        keyframeFirst++;
        expect(stages).toContain('keyframe');
        expect(v.keyframe).toEqual({ id: expect.stringMatching(/^img_/), status: 'ready' });
        expect(v.cost_cents).toBe(82);
      }
    }
    // Both kinds: most are keyframe-first (the share is 0.8).
    expect([keyframeFirst, direct]).toEqual([28, 2]);
  });

  it('POST /v1/images returns a ready image object of the keyframe model', async () => {
    const sim = makeSim();
    const res = await request(sim.app).post('/v1/images').set(bearer()).send({ prompt: 'A neon street at night, wide shot' });
    expect(res.status).toBe(200);
    const image = res.body;
    expect(image).toMatchObject({
      object: 'image',
      status: 'ready',
      model: 'video-3.2-keyframe',
      prompt: 'A neon street at night, wide shot',
    });
    expect(image.id).toMatch(/^img_[0-9A-Za-z]{24}$/);
    expect(image.url.endsWith(`/images/${image.id}.png`)).toBe(true);
    expect(Number.isInteger(image.cost_cents)).toBe(true);
    expect(image.cost_cents).toBe(KEYFRAME_CENTS);
    expect(image.created_at).toBe('2026-01-01T00:00:00.000Z');
  });

  it('with keyframe_id the video uses that image: keyframe.id equals it, and no keyframe is charged', async () => {
    const sim = makeSim();
    const image = (await request(sim.app).post('/v1/images').set(bearer()).send({ prompt: 'A neon street at night' })).body;
    const ids: string[] = [];
    for (let i = 0; i < 8; i++) {
      const res = await createVideo(sim, { keyframe_id: image.id, resolution: '720p', duration_seconds: 6 });
      expect(res.status).toBe(200);
      expect(res.body.keyframe).toBeNull(); // rule 1 holds even with keyframe_id
      ids.push(res.body.id);
    }
    sim.clock.advance(30);
    for (const id of ids) {
      const v = (await getVideo(sim, id)).body;
      expect(v.status).toBe('succeeded');
      expect(v.keyframe).toEqual({ id: image.id, status: 'ready' });
      expect(v.cost_cents).toBe(30);
    }
  });

  it('a keyframe generated for a video is an image of the account, reusable as keyframe_id', async () => {
    const sim = makeSim();
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await createVideo(sim)).body.id);
    sim.clock.advance(30);
    const withKeyframe = [];
    for (const id of ids) {
      const v = (await getVideo(sim, id)).body;
      if (v.keyframe) withKeyframe.push(v);
    }
    expect(withKeyframe).toHaveLength(5);
    const reused = await createVideo(sim, { keyframe_id: withKeyframe[0].keyframe.id });
    expect(reused.status).toBe(200);
  });
});

describe('DELETE /v1/videos/{id}: cancel from every status', () => {
  it('a queued generation cancels with exactly the five fields, then reads as canceled without cost or output', async () => {
    const sim = makeSim();
    const created = (await createVideo(sim)).body;
    sim.clock.advance(0.25);
    const res = await cancelVideo(sim, created.id);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      id: created.id,
      object: 'video',
      status: 'canceled',
      created_at: created.created_at,
      completed_at: '2026-01-01T00:00:00.250Z',
    });
    expect(Object.keys(res.body).sort()).toEqual(['completed_at', 'created_at', 'id', 'object', 'status']);

    const v = (await getVideo(sim, created.id)).body;
    expect(v.status).toBe('canceled');
    expect(v.cost_cents).toBeNull();
    expect(v.completed_at).toBe('2026-01-01T00:00:00.250Z');
    expect(v.output).toBeNull();
    expect(v.error).toBeNull();
  });

  it('a processing generation cancels with exactly the five fields and stays canceled whatever time passes', async () => {
    const sim = makeSim();
    const created = (await createVideo(sim)).body;
    await advanceUntil(sim, created.id, 'processing');
    const at = sim.clock.state().now;
    const res = await cancelVideo(sim, created.id);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ id: created.id, object: 'video', status: 'canceled', created_at: created.created_at, completed_at: at });

    const after = (await getVideo(sim, created.id)).body;
    expect(after).toMatchObject({ status: 'canceled', cost_cents: null, output: null, completed_at: at, compliance: null });
    sim.clock.advance(120);
    await request(sim.app).post('/_sim/clock/advance').send({ seconds: 3600 });
    expect((await getVideo(sim, created.id)).body).toEqual(after);
  });

  it('a generation canceled while queued never progresses afterwards', async () => {
    const sim = makeSim();
    const created = (await createVideo(sim)).body;
    await cancelVideo(sim, created.id);
    const before = (await getVideo(sim, created.id)).body;
    sim.clock.advance(600);
    const after = (await getVideo(sim, created.id)).body;
    expect(after).toEqual(before);
    expect(after.routed_model).toBeNull();
    expect(after.keyframe).toBeNull();
    expect(after.status).toBe('canceled');
  });

  it('cancel of a verifying generation is rejected with 400 not_cancelable, param null, and the generation goes on', async () => {
    const sim = makeSim();
    const created = (await createVideo(sim)).body;
    await advanceUntil(sim, created.id, 'verifying');
    const res = await cancelVideo(sim, created.id);
    expectError(res, 400, 'invalid_request_error', 'not_cancelable', null);
    expect((await getVideo(sim, created.id)).body.status).toBe('verifying');
    sim.clock.advance(10);
    expect((await getVideo(sim, created.id)).body.status).toBe('succeeded');
  });

  it('cancel of a succeeded generation is rejected with 400 not_cancelable and changes nothing', async () => {
    const sim = makeSim();
    const created = (await createVideo(sim)).body;
    sim.clock.advance(30);
    const before = (await getVideo(sim, created.id)).body;
    expect(before.status).toBe('succeeded');
    expectError(await cancelVideo(sim, created.id), 400, 'invalid_request_error', 'not_cancelable', null);
    expect((await getVideo(sim, created.id)).body).toEqual(before);
  });

  it('cancel of a canceled generation is rejected with 400 not_cancelable and keeps the first completed_at', async () => {
    const sim = makeSim();
    const created = (await createVideo(sim)).body;
    const first = await cancelVideo(sim, created.id);
    expect(first.status).toBe(200);
    sim.clock.advance(5);
    expectError(await cancelVideo(sim, created.id), 400, 'invalid_request_error', 'not_cancelable', null);
    const v = (await getVideo(sim, created.id)).body;
    expect(v.completed_at).toBe(first.body.completed_at);
  });

  it('cancel of a failed generation is rejected with 400 not_cancelable', async () => {
    const sim = makeSim({ scenario: renderFailure() });
    const created = (await createVideo(sim)).body;
    sim.clock.advance(30);
    const before = (await getVideo(sim, created.id)).body;
    expect(before.status).toBe('failed');
    expectError(await cancelVideo(sim, created.id), 400, 'invalid_request_error', 'not_cancelable', null);
    expect((await getVideo(sim, created.id)).body).toEqual(before);
  });

  it('cancel is accepted up to the last millisecond of the render and rejected from the first millisecond of verifying', async () => {
    const n = 6;
    const { ids, stages } = await revealStages(n);
    const idx = 2;
    const renderEnd = boundary(stages[idx] as StageVisit[], 'render');
    const queueEnd = boundary(stages[idx] as StageVisit[], 'queue');

    // Twin 1: cancel at the first millisecond of processing.
    const early = makeSim();
    await createBatch(early, n);
    advanceTo(early, queueEnd);
    expect((await getVideo(early, ids[idx] as string)).body.status).toBe('processing');
    const atQueueEnd = await cancelVideo(early, ids[idx] as string);
    expect(atQueueEnd.status).toBe(200);
    expect(atQueueEnd.body.completed_at).toBe(new Date(queueEnd).toISOString());

    // Twin 2: cancel at the last millisecond of the render.
    const late = makeSim();
    await createBatch(late, n);
    advanceTo(late, renderEnd - 1);
    const lastMs = await cancelVideo(late, ids[idx] as string);
    expect(lastMs.status).toBe(200);
    expect(lastMs.body.completed_at).toBe(new Date(renderEnd - 1).toISOString());
    const history = (await control(late, ids[idx] as string)).stages;
    const routingEnd = boundary(stages[idx] as StageVisit[], 'routing');
    expect(history[history.length - 1]).toEqual({ stage: 'render', entered_at: new Date(routingEnd).toISOString(), left_at: new Date(renderEnd - 1).toISOString() });
    late.clock.advance(60);
    expect((await control(late, ids[idx] as string)).stages).toEqual(history);
    expect((await getVideo(late, ids[idx] as string)).body).toMatchObject({ status: 'canceled', compliance: null, output: null, cost_cents: null });

    // Twin 3: at the render's end it is verifying and no longer cancelable.
    const verifying = makeSim();
    await createBatch(verifying, n);
    advanceTo(verifying, renderEnd);
    expectError(await cancelVideo(verifying, ids[idx] as string), 400, 'invalid_request_error', 'not_cancelable', null);
  });

  it('cancel of an unknown id is 404 resource_not_found', async () => {
    const sim = makeSim();
    expectError(await cancelVideo(sim, 'vid_nope'), 404, 'invalid_request_error', 'resource_not_found');
  });
});

function renderFailure(): Scenario {
  return fastWith((s) => ({
    ...s,
    stages: { ...s.stages, render: { ...s.stages.render, failure: { probability: 1, code: 'render_failed' } } },
  }));
}

describe('generations that fail or are flagged', () => {
  it('a render failure ends as failed with an api_error render_failed, no output, cost 0 and completed_at set', async () => {
    const sim = makeSim({ scenario: renderFailure() });
    const created = (await createVideo(sim)).body;
    sim.clock.advance(30);
    const v = (await getVideo(sim, created.id)).body;
    const history = (await control(sim, created.id)).stages;
    expect(v.status).toBe('failed');
    // Exactly type, code and message: no param, no stage.
    expect(v.error).toEqual({ type: 'api_error', code: 'render_failed', message: "The render stage failed (injected by scenario 'fast', failure probability 1)." });
    expect(v.output).toBeNull();
    expect(v.cost_cents).toBe(0);
    expect(v.compliance).toBeNull(); // output verification never ran
    expect(v.routed_model).toBe('render-3.2-hd-b'); // routing did run before the render
    expect(history.map((s) => s.stage)).not.toContain('output_verification');
    expect(v.completed_at).toBe(history[history.length - 1]?.left_at);
  });

  it('a failed generation was processing up to the end of the render stage', async () => {
    const sim = makeSim({ scenario: renderFailure() });
    const created = (await createVideo(sim)).body;
    await advanceUntil(sim, created.id, 'processing');
    const seen = new Set<string>();
    for (let i = 0; i < 200; i++) {
      const v = (await getVideo(sim, created.id)).body;
      seen.add(v.status);
      if (v.status === 'failed') break;
      sim.clock.advance(0.05);
    }
    expect([...seen]).toEqual(['processing', 'failed']);
  });

  it('an output rejection ends as failed with compliance_error at output_verification, a block flag, and the full price charged', async () => {
    const scenario = fastWith((s) => ({
      ...s,
      compliance: { ...s.compliance, output_verification: { ...s.compliance.output_verification, reject_share: 1 } },
    }));
    const sim = makeSim({ scenario });
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) ids.push((await createVideo(sim, { resolution: '720p', duration_seconds: 10 })).body.id);
    sim.clock.advance(30);
    for (const id of ids) {
      const v = (await getVideo(sim, id)).body;
      expect(v.status).toBe('failed');
      expect(v.error).toEqual({
        type: 'compliance_error',
        code: 'output_rejected',
        stage: 'output_verification',
        message: 'The output was rejected by output verification (policy_violation).',
      });
      expect(v.compliance).toEqual({
        verified: false,
        flags: [{ code: 'policy_violation', severity: 'block', message: 'The output was found to violate the content policy.' }],
      });
      expect(v.output).toBeNull();
      expect(v.cost_cents).toBe(expectedPrice('720p', 10, true)); // each had a keyframe generated
      expect(v.completed_at).not.toBeNull();
    }
  });

  it('flags without a block leave the generation succeeded and verified, with the flag listed', async () => {
    const flag = { code: 'low_contrast', severity: 'warning' as const, message: 'The output has low contrast.' };
    const scenario = fastWith((s) => ({
      ...s,
      compliance: { ...s.compliance, output_verification: { ...s.compliance.output_verification, flag_share: 1, flags: [flag] } },
    }));
    const sim = makeSim({ scenario });
    const created = (await createVideo(sim)).body;
    sim.clock.advance(30);
    const v = (await getVideo(sim, created.id)).body;
    expect(v.status).toBe('succeeded');
    expect(v.compliance).toEqual({ verified: true, flags: [flag] });
    expect(v.error).toBeNull();
    expect(v.output).toEqual({
      url: `http://localhost/cdn/videos/${created.id}.mp4`,
      thumbnail_url: `http://localhost/cdn/thumbnails/${created.id}.png`,
    });
  });
});

describe('the fast scenario timings', () => {
  it('every generation resolves within 10 virtual seconds, even at 16 s of output', async () => {
    const sim = makeSim();
    const ids: string[] = [];
    for (let i = 0; i < 30; i++) ids.push((await createVideo(sim, { duration_seconds: 16 - (i % 3) * 6 })).body.id);
    sim.clock.advance(10);
    for (const id of ids) {
      const v = (await getVideo(sim, id)).body;
      expect(v.status).toBe('succeeded');
      expect(Date.parse(v.completed_at) - Date.parse(v.created_at)).toBeLessThanOrEqual(10_000);
    }
  });
});

describe('the default scenario timings', () => {
  it('every one of 50 generations resolves within 600 virtual seconds and observable stages usually last 2 s or more', async () => {
    const sim = makeSim({ scenario: 'default' });
    const ids: string[] = [];
    for (let i = 0; i < 50; i++) {
      const res = await createVideo(sim, { duration_seconds: 4 + (i % 13), resolution: i % 2 ? '720p' : '1080p' });
      expect(res.status).toBe(200);
      ids.push(res.body.id);
    }
    await request(sim.app).post('/_sim/clock/advance').send({ seconds: 600 });

    const queue: number[] = [];
    const verifying: number[] = [];
    const total: number[] = [];
    for (const id of ids) {
      const v = (await getVideo(sim, id)).body;
      expect(v.status, id).toBe('succeeded');
      const spent = (Date.parse(v.completed_at) - Date.parse(v.created_at)) / 1000;
      expect(spent).toBeLessThanOrEqual(600);
      total.push(spent);
      const stages = (await control(sim, id)).stages;
      const len = (name: string) => {
        const s = stages.find((x) => x.stage === name);
        return s && s.left_at ? (Date.parse(s.left_at) - Date.parse(s.entered_at)) / 1000 : NaN;
      };
      queue.push(len('queue'));
      verifying.push(len('output_verification'));
    }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
    // "Usually 2 s or more": here every queue and every verification lasts that long.
    expect(queue.filter((q) => q >= 2)).toHaveLength(50);
    expect(median(queue)).toBe(16.076);
    expect(verifying.filter((q) => q >= 2)).toHaveLength(50);
    // "Most within 1-3 minutes": 45 of 50.
    expect(total.filter((t) => t >= 60 && t <= 180)).toHaveLength(45);
  });
});
