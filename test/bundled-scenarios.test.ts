/**
 * The bundled scenarios do what their header comments (and docs/scenarios.md) say, measured over
 * HTTP on the manual clock: `flaky`'s fault and failure rates, `compliance`'s rejections and flags,
 * `rate-limited`'s bucket, `low-balance`'s 402, `slow`'s queue, `default`'s and `fast`'s timings.
 * Then determinism: the same seed and script give a byte-identical transcript, and polling every
 * virtual second or every ten gives the same outcomes.
 */
import request from 'supertest';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  PROMPT,
  advance,
  advanceOk,
  answerInProcess,
  bearer,
  cancelVideo,
  createVideo,
  expectError,
  expectShare,
  generationsOf,
  getVideo,
  makeSim,
  quantile,
  recordSleeps,
  stageSeconds,
  tally,
} from './helpers.js';
import type { SimGeneration as Gen } from './helpers.js';

type Sim = ReturnType<typeof makeSim>;

/**
 * Creates until a 200, retrying 500s and 429s unchanged, and with `retry422` a claim-linking 422
 * with a changed prompt (an unchanged retry would be judged the same). Returns the created video
 * and the error answers seen.
 */
async function createRetrying(sim: Sim, key: string, body: Record<string, unknown> = {}, retry422 = false) {
  const errors: { status: number; body: { error: Record<string, unknown> } }[] = [];
  let changes = 0;
  for (let attempt = 0; attempt < 50; attempt++) {
    const prompt = `${(body.prompt as string | undefined) ?? PROMPT}${changes > 0 ? ` (take ${changes + 1})` : ''}`;
    const res = await createVideo(sim, { ...body, prompt }, key);
    if (res.status === 422 && retry422) changes++;
    if (res.status === 200) return { video: res.body as Gen, errors };
    if (res.status === 500 || res.status === 429 || (retry422 && res.status === 422)) {
      errors.push({ status: res.status, body: res.body });
      continue;
    }
    throw new Error(`create answered ${res.status}: ${JSON.stringify(res.body)}`);
  }
  throw new Error('create never succeeded in 50 attempts');
}

/** Seconds a generation showed `status` (sum of the stages that show it). */
function statusSeconds(g: Gen, status: 'queued' | 'processing' | 'verifying'): number {
  const stages = { queued: ['queue'], processing: ['keyframe', 'routing', 'render'], verifying: ['output_verification'] }[status];
  return stages.reduce((sum, s) => sum + (stageSeconds(g, s) ?? 0), 0);
}

function lifeSeconds(g: Gen): number {
  if (g.completed_at === null) throw new Error(`${g.id} is not resolved`);
  return (Date.parse(g.completed_at) - Date.parse(g.created_at)) / 1000;
}

// ---------------------------------------------------------------------------------------------

describe('flaky', () => {
  let sim: Sim;
  beforeAll(() => {
    sim = makeSim({ scenario: 'flaky' });
  });

  it('about 7% of /v1 requests are 500 api_error and 7% 429 with Retry-After: 1 (±3.5 points over 400 requests)', async () => {
    const key = 'sk_test_flaky_http';
    const counts: Record<number, number> = {};
    let created: string | null = null;
    for (let i = 0; i < 400; i++) {
      let res;
      if (i % 4 === 0) res = await createVideo(sim, {}, key);
      else if (i % 4 === 1 && created) res = await getVideo(sim, created, key);
      else res = await request(sim.app).get('/v1/videos').query({ limit: 5 }).set(bearer(key));
      counts[res.status] = (counts[res.status] ?? 0) + 1;
      if (res.status === 200 && i % 4 === 0) created = res.body.id;
      if (res.status === 500) {
        const err = expectError(res, 500, 'api_error', 'internal_error');
        expect(err.message).toContain("injected by scenario 'flaky'");
      } else if (res.status === 429) {
        const err = expectError(res, 429, 'rate_limit_error', 'rate_limit_exceeded');
        expect(err.message).toContain("injected by scenario 'flaky'");
        expect(res.headers['retry-after']).toBe('1');
      } else {
        expect(res.status).toBe(200);
      }
    }
    expect(counts).toEqual({ 200: 353, 429: 24, 500: 23 });
    expectShare('500 share', (counts[500] ?? 0) / 400, 0.07, 0.035);
    expectShare('429 share', (counts[429] ?? 0) / 400, 0.07, 0.035);
    // The journal names the injection of every faulted request.
    const journal = await request(sim.app).get('/_sim/requests').query({ api_key: key, limit: 1000 });
    const faulted = (journal.body.data as { status: number; fault?: string }[]).filter((e) => e.status !== 200);
    expect(faulted).toHaveLength((counts[500] ?? 0) + (counts[429] ?? 0));
    for (const e of faulted) expect(e.fault).toMatch(/flaky/);
  });

  it('at least 10% of 200 generations fail at some stage, with messages naming the injection', async () => {
    const key = 'sk_test_flaky_gens';
    for (let i = 0; i < 200; i++) await createRetrying(sim, key);
    await advanceOk(sim, 700, key);
    const gens = await generationsOf(sim, key);
    expect(gens).toHaveLength(200);
    expect(tally(gens.map((g) => g.status))).toEqual({ succeeded: 172, failed: 28 });
    const failed = gens.filter((g) => g.status === 'failed');
    expect(failed.length / 200, `failed share ${failed.length}/200`).toBeGreaterThanOrEqual(0.1);
    const stageFailures = failed.filter((g) => g.error?.type === 'api_error');
    // "About 15% fail at the keyframe, routing or render stage" (9-21% over 200 generations).
    expectShare('stage failure share', stageFailures.length / 200, 0.15, 0.06);
    const byStage: Record<string, number> = {};
    const expected: Record<string, string> = { keyframe: 'keyframe_failed', routing: 'upstream_timeout', render: 'render_failed' };
    for (const g of stageFailures) {
      const stage = g.stages.at(-1)?.stage as string;
      byStage[stage] = (byStage[stage] ?? 0) + 1;
      expect(g.error?.code).toBe(expected[stage]);
      expect(g.error?.message).toMatch(/flaky scenario/);
    }
    expect(Object.keys(byStage).sort()).toEqual(['keyframe', 'render', 'routing']);
    for (const g of failed.filter((f) => f.error?.type === 'compliance_error')) {
      expect(g.error).toMatchObject({ code: 'output_rejected', stage: 'output_verification' });
      expect(g.compliance?.verified).toBe(false);
    }
  }, 60_000);

  it('realtime requests get latency jitter of at least 10 ms', async () => {
    // The waits go through an injected sleep: recorded, not slept.
    const { sleep, slept } = recordSleeps();
    const realtime = makeSim({ scenario: 'flaky', clock: 'realtime', sleep });
    const statuses: number[] = [];
    for (let i = 0; i < 8; i++) statuses.push((await request(realtime.app).get('/v1/videos').set(bearer('sk_test_latency'))).status);
    // Every answer waits, injected faults included: lognormal, median 60 ms, clamped to 10-800 ms.
    expect(slept).toEqual([10, 73, 75, 138, 83, 210, 76, 87]);
    expect(statuses).toEqual([429, 200, 500, 200, 200, 500, 200, 200]);
  });
});

describe('compliance', () => {
  let sim: Sim;
  beforeAll(() => {
    sim = makeSim({ scenario: 'compliance' });
  });

  it('a prompt naming a celebrity, real person, brand, trademark or logo is a 422 with the rule message', async () => {
    const person = 'Claim linking rejected the prompt: it depicts a real, identifiable person.';
    const brand = 'Claim linking rejected the prompt: it references a protected brand or trademark.';
    const cases: [string, string][] = [
      ['A celebrity walking on a red carpet.', person],
      ['Two CELEBRITIES dancing in the rain.', person],
      ['A real person reading a newspaper.', person],
      ['A famous actress waving.', person],
      ['A giant logo on a skyscraper.', brand],
      ['Our brand mascot in a forest.', brand],
      ['A trademark stamped on leather.', brand],
    ];
    for (const [prompt, message] of cases) {
      const res = await createVideo(sim, { prompt }, 'sk_test_claims');
      const err = expectError(res, 422, 'compliance_error', 'claim_linking_rejected');
      expect(err, prompt).toEqual({ type: 'compliance_error', code: 'claim_linking_rejected', message, stage: 'claim_linking' });
    }
    const image = await request(sim.app).post('/v1/images').set(bearer('sk_test_claims')).send({ prompt: 'A logo.' });
    expect(expectError(image, 422, 'compliance_error', 'claim_linking_rejected').message).toBe(brand);
    expect(await generationsOf(sim, 'sk_test_claims')).toEqual([]);
  });

  it('over 300 generations: ~5% of other prompts 422, ~15% output rejections, ~30% of the rest flagged; verified false exactly with a block flag', async () => {
    const key = 'sk_test_compliance';
    let creates = 0;
    let rejected422 = 0;
    for (let i = 0; i < 300; i++) {
      const { errors } = await createRetrying(sim, key, { prompt: `${PROMPT} Shot ${i}.` }, true);
      creates += errors.length + 1;
      for (const e of errors) {
        expect(e.status).toBe(422);
        expect(e.body.error).toMatchObject({ type: 'compliance_error', code: 'claim_linking_rejected', stage: 'claim_linking' });
        rejected422++;
      }
    }
    expectShare('claim-linking share of other prompts', rejected422 / creates, 0.05, 0.035);
    expect([rejected422, creates]).toEqual([11, 311]);
    await advanceOk(sim, 700, key);
    const gens = await generationsOf(sim, key);
    expect(gens).toHaveLength(300);
    const rejected = gens.filter((g) => g.status === 'failed');
    const passed = gens.filter((g) => g.status === 'succeeded');
    expect(rejected.length + passed.length).toBe(300);
    expectShare('output rejection share', rejected.length / 300, 0.15, 0.06);
    const flagged = passed.filter((g) => (g.compliance?.flags.length ?? 0) > 0);
    expectShare('flagged share of the passed', flagged.length / passed.length, 0.3, 0.08);
    expect([rejected.length, passed.length, flagged.length]).toEqual([35, 265, 86]);
    for (const g of rejected) {
      expect(g.error).toEqual({
        type: 'compliance_error',
        code: 'output_rejected',
        message: `The output was rejected by output verification (${g.compliance?.flags[0]?.code}).`,
        stage: 'output_verification',
      });
    }
    // Each rejection shows one blocking flag of the scenario's list, each passed generation at most
    // one non-blocking flag; every flag of the list is used.
    const distinct = (lists: unknown[]) => [...new Set(lists.map((l) => JSON.stringify(l)))].sort().map((l) => JSON.parse(l));
    const policy = { code: 'policy_violation', severity: 'block', message: 'The output was found to violate the content policy.' };
    const likeness = { code: 'likeness_detected', severity: 'block', message: 'The output contains the likeness of a real person.' };
    const watermark = { code: 'possible_watermark', severity: 'warning', message: 'A watermark-like pattern was detected in the output.' };
    const lowConfidence = { code: 'low_confidence', severity: 'info', message: 'Verification ran with low confidence.' };
    expect(distinct(rejected.map((g) => g.compliance?.flags))).toEqual(distinct([[policy], [likeness]]));
    expect(distinct(passed.map((g) => g.compliance?.flags))).toEqual(distinct([[], [watermark], [lowConfidence]]));
    for (const g of gens) {
      const hasBlock = (g.compliance?.flags ?? []).some((f) => f.severity === 'block');
      expect(g.compliance?.verified, g.id).toBe(!hasBlock);
    }
  }, 60_000);
});

describe('rate-limited', () => {
  it('the 11th immediate request is 429 with Retry-After; advancing the account clock by it lets the next one through', async () => {
    const sim = makeSim({ scenario: 'rate-limited' });
    const key = 'sk_test_bucket';
    // Polls spend tokens like any other request.
    const created = await createVideo(sim, {}, key);
    expect(created.status).toBe(200);
    for (let i = 1; i < 10; i++) {
      const res = await getVideo(sim, created.body.id, key);
      expect(res.status).toBe(200);
      expect(res.headers['x-ratelimit-limit']).toBe('10');
      expect(res.headers['x-ratelimit-remaining']).toBe(String(9 - i));
      expect(res.headers['x-ratelimit-reset']).toBe(String(i + 1));
    }
    const limited = await getVideo(sim, created.body.id, key);
    expectError(limited, 429, 'rate_limit_error', 'rate_limit_exceeded');
    const retryAfter = Number(limited.headers['retry-after']);
    expect(retryAfter).toBe(1);
    expect(limited.headers['x-ratelimit-remaining']).toBe('0');
    expect(limited.headers['x-ratelimit-limit']).toBe('10');
    expect(limited.headers['x-ratelimit-reset']).toBe('10');
    // Other accounts are not limited.
    expect((await request(sim.app).get('/v1/videos').set(bearer('sk_test_other'))).status).toBe(200);
    await advanceOk(sim, retryAfter, key);
    const recovered = await getVideo(sim, created.body.id, key);
    expect(recovered.status).toBe(200);
    expect(recovered.headers['x-ratelimit-remaining']).toBe('0');
    expect((await getVideo(sim, created.body.id, key)).status).toBe(429);
  });
});

describe('low-balance', () => {
  let sim: Sim;
  beforeAll(() => {
    sim = makeSim({ scenario: 'low-balance' });
  });

  it('the fourth 1080p 8 s create is 402 insufficient_balance with no param or stage', async () => {
    const key = 'sk_test_low1';
    for (let i = 0; i < 3; i++) expect((await createVideo(sim, {}, key)).status).toBe(200);
    const refused = await createVideo(sim, {}, key);
    const err = expectError(refused, 402, 'insufficient_balance', 'insufficient_balance');
    expect(Object.keys(err).sort()).toEqual(['code', 'message', 'type']);
    // Resolved, the three cost 82 cents with a keyframe and 80 without.
    await advanceOk(sim, 700, key);
    for (const g of await generationsOf(sim, key)) {
      expect(g.status).toBe('succeeded');
      expect(g.cost_cents).toBe(g.keyframe === null ? 80 : 82);
    }
    // At most 250 - 3 x 80 = 10 cents are left: still no fourth video.
    expectError(await createVideo(sim, {}, key), 402, 'insufficient_balance', 'insufficient_balance');
  });

  it('canceling one frees its reservation, so a create succeeds again; the canceled one costs nothing', async () => {
    const key = 'sk_test_low2';
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await createVideo(sim, {}, key)).body.id);
    expectError(await createVideo(sim, {}, key), 402, 'insufficient_balance', 'insufficient_balance');
    expect((await cancelVideo(sim, ids[0] as string, key)).status).toBe(200);
    expect((await createVideo(sim, {}, key)).status).toBe(200);
    await advanceOk(sim, 700, key);
    expect((await getVideo(sim, ids[0] as string, key)).body).toMatchObject({ status: 'canceled', cost_cents: null });
  });

  it('a keyframe image costs 2 cents; every new account starts with 250', async () => {
    const key = 'sk_test_low3';
    const image = await request(sim.app).post('/v1/images').set(bearer(key)).send({ prompt: PROMPT });
    expect(image.body.cost_cents).toBe(2);
    // 248 left: three 82-cent videos (246) fit, then nothing.
    for (let i = 0; i < 3; i++) expect((await createVideo(sim, {}, key)).status).toBe(200);
    expectError(await createVideo(sim, {}, key), 402, 'insufficient_balance', 'insufficient_balance');
  });
});

describe('slow', () => {
  it('queue median over 200 generations within 10% of 240 s, at least 30 s and at most 20 min; renders about twice default; nothing fails', async () => {
    const sim = makeSim({ scenario: 'slow' });
    const key = 'sk_test_slow';
    for (let i = 0; i < 200; i++) expect((await createVideo(sim, {}, key)).status).toBe(200);
    await advanceOk(sim, 2000, key);
    const gens = await generationsOf(sim, key);
    expect(gens).toHaveLength(200);
    const queue = gens.map((g) => stageSeconds(g, 'queue') as number);
    const median = quantile(queue, 0.5);
    expect(Math.abs(median - 240) / 240, `queue median ${median}`).toBeLessThanOrEqual(0.1);
    expect(median).toBe(246.687);
    expect(Math.min(...queue)).toBeGreaterThanOrEqual(30);
    expect(Math.max(...queue)).toBeLessThanOrEqual(1200);
    expect([Math.min(...queue), Math.max(...queue)]).toEqual([45.927, 852.59]);
    // Render median 14 s per output second: 112 s for 8 s of video (default: 7 s per second).
    const render = quantile(gens.map((g) => stageSeconds(g, 'render') as number), 0.5);
    expect(Math.abs(render - 112) / 112, `render median ${render}`).toBeLessThanOrEqual(0.1);
    expect(render).toBe(111.887);
    for (const g of gens) expect(g.status).toBe('succeeded');
  }, 60_000);
});

describe('default', () => {
  it('200 generations: all resolve within 600 s (most in 1-3 minutes), each observable status lasts 2 s or more for 90%, no failures, no flags', async () => {
    const sim = makeSim({ scenario: 'default' });
    const key = 'sk_test_default';
    for (let i = 0; i < 200; i++) {
      const res = await createVideo(sim, { duration_seconds: [4, 8, 12, 16][i % 4], resolution: i % 3 === 0 ? '720p' : '1080p' }, key);
      expect(res.status).toBe(200);
      if (i === 0) expect(res.headers['x-ratelimit-limit']).toBe('1000');
    }
    await advanceOk(sim, 600, key);
    const gens = await generationsOf(sim, key);
    expect(gens).toHaveLength(200);
    let inOneToThree = 0;
    for (const g of gens) {
      expect(g.status, g.id).toBe('succeeded');
      expect(g.error).toBeNull();
      expect(g.compliance).toEqual({ verified: true, flags: [] });
      expect(lifeSeconds(g)).toBeLessThanOrEqual(600);
      if (lifeSeconds(g) >= 60 && lifeSeconds(g) <= 180) inOneToThree++;
    }
    expect(inOneToThree / 200, `${inOneToThree} of 200 within 1-3 minutes`).toBeGreaterThan(0.5);
    expect(inOneToThree).toBe(171);
    for (const status of ['queued', 'processing', 'verifying'] as const) {
      const seen = gens.filter((g) => statusSeconds(g, status) >= 2).length;
      expect(seen / 200, `${status} lasted >= 2 s for ${seen} of 200`).toBeGreaterThanOrEqual(0.9);
      expect(seen, status).toBe(200);
    }
  }, 60_000);
});

describe('fast', () => {
  it('every generation (any duration and resolution) resolves within 10 virtual seconds, as succeeded with no flags', async () => {
    const sim = makeSim({ scenario: 'fast' });
    const key = 'sk_test_fast';
    for (let i = 0; i < 60; i++) {
      const res = await createVideo(sim, { duration_seconds: [4, 16, 8][i % 3], resolution: i % 2 ? '720p' : '1080p' }, key);
      expect(res.status).toBe(200);
      expect(res.headers['x-ratelimit-limit']).toBe('1000000000');
    }
    await advanceOk(sim, 10, key);
    const gens = await generationsOf(sim, key);
    expect(gens).toHaveLength(60);
    for (const g of gens) {
      expect(g.status).toBe('succeeded');
      expect(g.compliance).toEqual({ verified: true, flags: [] });
      expect(lifeSeconds(g)).toBeLessThanOrEqual(10);
    }
  });
});

// ---------------------------------------------------------------------------------------------

describe('determinism on flaky', () => {
  const SEED = 4242;
  let simA: Sim;
  let simB: Sim;
  beforeAll(() => {
    simA = makeSim({ scenario: 'flaky', seed: SEED });
    simB = makeSim({ scenario: 'flaky', seed: SEED });
  });

  /** A scripted run of about 30 requests and advances; every answer's status, key headers and body text. */
  async function transcript(sim: Sim): Promise<string[]> {
    const out: string[] = [];
    const key = 'sk_test_transcript';
    const record = (label: string, res: request.Response) =>
      out.push(
        `${label} -> ${res.status} retry-after=${res.headers['retry-after'] ?? '-'} remaining=${res.headers['x-ratelimit-remaining'] ?? '-'} replayed=${res.headers['idempotent-replayed'] ?? '-'} ${res.text}`,
      );
    const ids: string[] = [];
    const bodies: Record<string, unknown>[] = [
      {},
      { resolution: '720p', duration_seconds: 4 },
      { model: 'video-3.0', negative_prompt: 'blur' },
      { model: 'video-3.1', duration_seconds: 16 },
      { prompt: 'A lighthouse in a storm, seen from a boat.' },
      {},
      { resolution: '720p' },
    ];
    for (const body of bodies) {
      const res = await createVideo(sim, body, key);
      record(`POST /v1/videos ${JSON.stringify(body)}`, res);
      if (res.status === 200) ids.push(res.body.id);
    }
    const image = await request(sim.app).post('/v1/images').set(bearer(key)).send({ prompt: PROMPT });
    record('POST /v1/images', image);
    record('advance 20', await advance(sim, 20, key));
    for (const id of ids) record(`GET ${id}`, await getVideo(sim, id, key));
    record('LIST', await request(sim.app).get('/v1/videos').query({ limit: 3 }).set(bearer(key)));
    if (ids[0]) record(`DELETE ${ids[0]}`, await cancelVideo(sim, ids[0], key));
    record('advance 90', await advance(sim, 90, key));
    for (const id of ids) record(`GET ${id}`, await getVideo(sim, id, key));
    for (let i = 0; i < 2; i++) {
      const res = await request(sim.app)
        .post('/v1/videos')
        .set(bearer(key))
        .set('Idempotency-Key', 'transcript-1')
        .send({ model: 'video-3.2', prompt: PROMPT });
      record(`POST idempotent ${i}`, res);
    }
    record('advance 400', await advance(sim, 400, key));
    for (const id of ids) record(`GET ${id}`, await getVideo(sim, id, key));
    record('LIST all', await request(sim.app).get('/v1/videos').query({ limit: 100 }).set(bearer(key)));
    record('CONTROL', await request(sim.app).get('/_sim/generations').query({ api_key: key, limit: 100 }));
    record('JOURNAL', await request(sim.app).get('/_sim/requests').query({ api_key: key, limit: 100 }));
    return out;
  }

  it('two fresh simulators with the same seed give a byte-identical transcript; another seed another one', async () => {
    const a = await transcript(simA);
    const b = await transcript(simB);
    expect(a).toHaveLength(33);
    expect(b).toEqual(a);
    // The script met the scenario's faults, so the comparison is not trivial.
    expect(a.filter((line) => / -> (429|500) /.test(line)).map((line) => line.slice(0, line.indexOf(' -> ') + 7))).toEqual([
      'POST /v1/videos {"resolution":"720p","duration_seconds":4} -> 500',
      'POST /v1/videos {"resolution":"720p"} -> 500',
      'GET vid_KscayS3wNcnGY8XhOeNbthZM -> 429',
    ]);
    // A different seed changes the transcript (ids, at least).
    expect((await request(simB.app).post('/_sim/reset').send({ seed: SEED + 1 })).status).toBe(200);
    const c = await transcript(simB);
    expect(c).not.toEqual(a);
  });

  it("another account's interleaved requests do not change an account's injected faults", async () => {
    const statuses = async (interleave: boolean) => {
      expect((await request(simA.app).post('/_sim/reset').send({})).status).toBe(200);
      const out: number[] = [];
      for (let i = 0; i < 60; i++) {
        out.push((await request(simA.app).get('/v1/videos').set(bearer('sk_test_mine'))).status);
        if (interleave) await request(simA.app).get('/v1/videos').set(bearer('sk_test_noisy'));
      }
      return out;
    };
    const alone = await statuses(false);
    const interleaved = await statuses(true);
    expect(tally(alone)).toEqual({ 200: 51, 429: 3, 500: 6 });
    expect(interleaved).toEqual(alone);
  });

  /**
   * 50 generations on flaky (25 created at once, 25 after 100 s, injected faults retried), polled
   * with a GET every `step` virtual seconds until 600 s. Returns every generation's final state and
   * how often each status answered the polls. The polls and the clock's advances (1,200 requests
   * at `step` 1) are answered in process by the request path itself, without HTTP around them.
   */
  async function pollingRun(sim: Sim, step: number) {
    expect((await request(sim.app).post('/_sim/reset').send({})).status).toBe(200);
    const key = 'sk_test_polling';
    const ids: string[] = [];
    const createBatch = async () => {
      for (let i = 0; i < 25; i++) {
        const body = { resolution: i % 2 ? '720p' : '1080p', duration_seconds: [4, 8, 16][i % 3] };
        ids.push((await createRetrying(sim, key, body)).video.id);
      }
    };
    await createBatch();
    const polls: number[] = [];
    for (let t = 0; t < 600; t += step) {
      if (t === 100) await createBatch();
      polls.push(answerInProcess(sim, 'GET', `/v1/videos/${ids[polls.length % ids.length]}`, { key }).status);
      expect(answerInProcess(sim, 'POST', '/_sim/clock/advance', { body: { seconds: step, api_key: key } }).status).toBe(200);
    }
    const gens = await generationsOf(sim, key);
    expect(gens.map((g) => g.id)).toEqual(ids);
    return { polls: tally(polls), gens: gens.map((g) => ({
      id: g.id,
      status: g.status,
      error: g.error,
      routed_model: g.routed_model,
      keyframe: g.keyframe,
      cost_cents: g.cost_cents,
      created_at: g.created_at,
      completed_at: g.completed_at,
      compliance: g.compliance,
      stages: g.stages,
    })) };
  }

  it('polling every virtual second or every ten gives identical outcomes for 50 generations', async () => {
    const everySecond = await pollingRun(simA, 1);
    const everyTen = await pollingRun(simB, 10);
    // The polls met injected faults (and were not retried).
    expect(everySecond.polls).toEqual({ 200: 516, 429: 48, 500: 36 });
    expect(everyTen.polls).toEqual({ 200: 52, 429: 4, 500: 4 });
    expect(everySecond.gens).toHaveLength(50);
    // Some generations failed and some succeeded, so outcomes are really being compared.
    expect(tally(everySecond.gens.map((g) => g.status))).toEqual({ succeeded: 42, failed: 8 });
    expect(everyTen.gens).toEqual(everySecond.gens);
  }, 60_000);
});
