/**
 * Prompt triggers: a create's prompt that holds `[sim:DIRECTIVE]` gets the outcome the equivalent
 * queued fault gives, over HTTP. Each directive is held to a queued fault on a fresh simulator with
 * the same seed: the answers and the generation, once the clock moved, are the same bytes but for
 * the prompt. Then several directives, refused ones, plain text, `prompt_triggers: false`, image
 * prompts, the journal's `trigger`, the client report, a replay and a state restore.
 */
import { copyFileSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { formatReport } from '../src/commands/report.js';
import { PROMPT_DIRECTIVES } from '../src/core/faults/promptTriggers.js';
import { compactStateFile } from '../src/persistence/compact.js';
import { loadScenario } from '../src/scenarios/load.js';
import { replayTranscript } from '../src/transcript/replay.js';
import { advanceOk, bearer, expectError, expectNoInternalErrors, fastWith, makeSim, queueFault } from './helpers.js';
import { tempFiles } from './tempFiles.js';
import { parseTranscript } from './transcripts.js';

type Sim = ReturnType<typeof makeSim>;

const SEED = 11;
const PLAIN = 'A paper boat drifting down a gutter after the rain.';
const { dir, file: tmpFile } = tempFiles('sim-prompt-triggers-');

const KNOWN =
  'The known triggers are [sim:fail=keyframe], [sim:fail=routing], [sim:fail=render], [sim:reject=claim_linking], ' +
  '[sim:reject=output], [sim:flag=CODE], [sim:error=402], [sim:error=429], [sim:error=500]; any text that starts with [sim: is read as one.';

function create(sim: Sim, prompt: string, kind: 'videos' | 'images' = 'videos', key = 'sk_test_alice') {
  return request(sim.app)
    .post(`/v1/${kind}`)
    .set(bearer(key))
    .send(kind === 'videos' ? { model: 'video-3.2', prompt } : { prompt });
}

/** What a client and the control API see of an answer: status, the service's headers, the body's bytes. */
function seen(res: { status: number; text: string; headers: Record<string, string> }, prompt?: string) {
  const headers: Record<string, string> = {};
  for (const name of ['x-request-id', 'retry-after', 'x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset']) {
    if (res.headers[name] !== undefined) headers[name] = res.headers[name];
  }
  return { status: res.status, headers, body: prompt === undefined ? res.text : res.text.replaceAll(prompt, PLAIN) };
}

/**
 * A create with `prompt`, then (when it made a video) the clock moved past its pipeline: the create's
 * answer, the client's retrieve, the control API's generation and the next request's headers.
 */
async function createAndFollow(sim: Sim, prompt: string, kind: 'videos' | 'images' = 'videos') {
  const created = await create(sim, prompt, kind);
  const out: ReturnType<typeof seen>[] = [seen(created, prompt)];
  if (created.status === 200 && kind === 'videos') {
    await advanceOk(sim, 120);
    out.push(seen(await request(sim.app).get(`/v1/videos/${created.body.id}`).set(bearer()), prompt));
    // (Its request id counts the simulator's control requests, the queued fault's included.)
    out.push({ ...seen(await request(sim.app).get(`/_sim/generations/${created.body.id}`), prompt), headers: {} });
  }
  // The next request's rate-limit headers say whether the create spent a token.
  out.push(seen(await request(sim.app).get('/v1/videos?limit=1').set(bearer()), prompt));
  return out;
}

/** The same create on a fresh simulator of the same seed, with a queued fault instead of the trigger. */
async function withQueuedFault(fault: Record<string, unknown>, kind: 'videos' | 'images' = 'videos') {
  const sim = makeSim({ seed: SEED });
  await queueFault(sim, { path: `/v1/${kind}`, method: 'POST', ...fault });
  return createAndFollow(sim, PLAIN, kind);
}

async function withTrigger(directives: string, kind: 'videos' | 'images' = 'videos') {
  const sim = makeSim({ seed: SEED });
  const answers = await createAndFollow(sim, `${PLAIN} ${directives}`, kind);
  expectNoInternalErrors(sim);
  return { sim, answers };
}

async function journalEntries(sim: Sim, key = 'sk_test_alice') {
  const res = await request(sim.app).get('/_sim/requests').query({ api_key: key, limit: 100 });
  expect(res.status).toBe(200);
  return res.body.data as { method: string; path: string; status: number; trigger?: string[]; fault?: string; error_code?: string }[];
}

const FLAG = { code: 'soft_focus', severity: 'warning', message: 'Flagged by the prompt trigger [sim:flag=soft_focus].' };

describe('each directive gives exactly what the equivalent queued fault gives', () => {
  const cases: [string, Record<string, unknown>][] = [
    ['[sim:fail=keyframe]', { outcome: { fail_stage: 'keyframe' } }],
    ['[sim:fail=routing]', { outcome: { fail_stage: 'routing' } }],
    ['[sim:fail=render]', { outcome: { fail_stage: 'render' } }],
    ['[sim:reject=claim_linking]', { outcome: { claim_linking_rejected: true } }],
    ['[sim:reject=output]', { outcome: { output_rejected: true } }],
    ['[sim:flag=soft_focus]', { outcome: { flags: [FLAG] } }],
    ['[sim:error=402]', { status: 402 }],
    ['[sim:error=429]', { status: 429 }],
    ['[sim:error=500]', { status: 500 }],
  ];
  for (const [directive, fault] of cases) {
    it(`${directive} is ${JSON.stringify(fault)}`, async () => {
      const { answers } = await withTrigger(directive);
      expect(answers).toEqual(await withQueuedFault(fault));
    });
  }

  it('the outcomes are the ones named: a failure at the stage, the rejections, the flag, the errors with their headers', async () => {
    const render = (await withTrigger('[sim:fail=render]')).answers;
    expect(JSON.parse(render[1]!.body)).toMatchObject({ status: 'failed', error: { type: 'api_error', code: 'render_failed' } });
    const output = (await withTrigger('[sim:reject=output]')).answers;
    expect(JSON.parse(output[1]!.body)).toMatchObject({ status: 'failed', error: { type: 'compliance_error', code: 'output_rejected', stage: 'output_verification' } });
    const flagged = (await withTrigger('[sim:flag=soft_focus]')).answers;
    expect(JSON.parse(flagged[1]!.body)).toMatchObject({ status: 'succeeded', compliance: { verified: true, flags: [FLAG] } });
    const claim = (await withTrigger('[sim:reject=claim_linking]')).answers;
    expect(claim[0]!.status).toBe(422);
    expect(JSON.parse(claim[0]!.body).error).toMatchObject({ code: 'claim_linking_rejected', stage: 'claim_linking' });
    const limited = (await withTrigger('[sim:error=429]')).answers;
    expect(limited[0]).toMatchObject({ status: 429, headers: { 'retry-after': '1', 'x-ratelimit-remaining': '0' } });
    // No token spent: the next request spends the account's first.
    expect(limited[1]!.headers['x-ratelimit-remaining']).toBe('999999999');
    const broke = (await withTrigger('[sim:error=500]')).answers;
    expect(JSON.parse(broke[0]!.body).error).toMatchObject({ type: 'api_error', code: 'internal_error' });
  });

  it('an error directive takes no effect: nothing is created or charged, and it spends no rate-limit token', async () => {
    const sim = makeSim({ scenario: fastWith((s) => (s.rate_limits = { capacity: 2, refill_per_second: 0.001 })) });
    for (let i = 0; i < 3; i++) expect((await create(sim, `${PLAIN} [sim:error=500]`)).status).toBe(500);
    const list = await request(sim.app).get('/v1/videos').set(bearer());
    expect(list.body.data).toEqual([]);
    expect(list.headers['x-ratelimit-remaining']).toBe('1');
    // With the bucket empty, the rate limit answers first: the prompt is never read.
    expect((await create(sim, PLAIN)).status).toBe(200);
    const limited = await create(sim, `${PLAIN} [sim:error=500]`);
    expectError(limited, 429, 'rate_limit_error', 'rate_limit_exceeded');
    expect(limited.body.error.message).toMatch(/^Rate limit of 2 requests exceeded/);
  });
});

describe('several directives', () => {
  it('combine into one forced outcome, as one queued fault with those fields', async () => {
    const { sim, answers } = await withTrigger('[sim:fail=render] at dusk [sim:flag=soft_focus] [sim:fail=render]');
    expect(answers).toEqual(await withQueuedFault({ outcome: { fail_stage: 'render', flags: [FLAG] } }));
    // A repeated directive counts once.
    expect((await journalEntries(sim))[0]!.trigger).toEqual(['[sim:fail=render]', '[sim:flag=soft_focus]']);
  });

  it('[sim:reject=output] with a warning flag: rejected, reporting the flag and the block flag that rejected it', async () => {
    const { answers } = await withTrigger('[sim:reject=output][sim:flag=soft_focus]');
    expect(answers).toEqual(await withQueuedFault({ outcome: { output_rejected: true, flags: [FLAG] } }));
    const g = JSON.parse(answers[1]!.body);
    expect(g).toMatchObject({ status: 'failed', error: { code: 'output_rejected' } });
    expect(g.compliance).toEqual({
      verified: false,
      flags: [FLAG, { code: 'policy_violation', severity: 'block', message: 'The output was found to violate the content policy.' }],
    });
  });

  it('an error with outcome directives: the error answers, as a queued fault with a status and an outcome', async () => {
    const { answers } = await withTrigger('[sim:fail=render] [sim:error=429]');
    expect(answers).toEqual(await withQueuedFault({ status: 429, outcome: { fail_stage: 'render' } }));
  });

  it('two fail stages, or two errors, contradict each other: 400, nothing created', async () => {
    const sim = makeSim();
    const stages = await create(sim, `${PLAIN} [sim:fail=routing] [sim:fail=render]`);
    expect(expectError(stages, 400, 'invalid_request_error', 'invalid_parameter', 'prompt').message).toBe(
      "The prompt's triggers [sim:fail=routing] and [sim:fail=render] contradict each other (a generation fails at one stage); keep one of them.",
    );
    const errors = await create(sim, `${PLAIN} [sim:error=429][sim:error=500]`);
    expect(expectError(errors, 400, 'invalid_request_error', 'invalid_parameter', 'prompt').message).toBe(
      "The prompt's triggers [sim:error=429] and [sim:error=500] contradict each other (a create is answered with one error); keep one of them.",
    );
    const flags = await create(sim, '[sim:flag=a] [sim:flag=b] [sim:flag=c] [sim:flag=d]');
    expect(expectError(flags, 400, 'invalid_request_error', 'invalid_parameter', 'prompt').message).toBe(
      "The prompt holds more than 3 [sim:flag=CODE] triggers ('[sim:flag=d]' is one too many); a forced outcome carries at most 3 flags.",
    );
    expect((await request(sim.app).get('/v1/videos').set(bearer())).body.data).toEqual([]);
  });
});

describe('refused and plain text', () => {
  const refused: [string, string][] = [
    ['[sim:fail=upload]', "The prompt holds an unknown trigger '[sim:fail=upload]'."],
    ['[sim:explode]', "The prompt holds an unknown trigger '[sim:explode]'."],
    ['[sim: fail=render]', "The prompt holds an unknown trigger '[sim: fail=render]'."],
    ['[sim:Fail=render]', "The prompt holds an unknown trigger '[sim:Fail=render]'."],
    ['[sim:]', "The prompt holds an unknown trigger '[sim:]'."],
    ['[sim:fail=render', "The prompt holds a trigger with no closing bracket: '[sim:fail=render'."],
    ['[sim:flag=Soft Focus]', "The prompt holds an unknown trigger '[sim:flag=Soft Focus]': CODE is 1 to 100 lowercase letters, digits and _."],
    ['[sim:error=404]', "The prompt holds an unknown trigger '[sim:error=404]': a create's injected error is 402, 429, 500."],
    ['[sim:error=0500]', "The prompt holds an unknown trigger '[sim:error=0500]': a create's injected error is 402, 429, 500."],
  ];
  for (const [directive, what] of refused) {
    it(`${directive} is 400 invalid_parameter, param prompt, naming it and listing the known ones`, async () => {
      const sim = makeSim();
      for (const kind of ['videos', 'images'] as const) {
        const res = await create(sim, `${PLAIN} ${directive}`, kind);
        expect(expectError(res, 400, 'invalid_request_error', 'invalid_parameter', 'prompt').message).toBe(`${what} ${KNOWN}`);
      }
      expect((await request(sim.app).get('/v1/videos').set(bearer())).body.data).toEqual([]);
      expect((await journalEntries(sim)).map((e) => e.trigger)).toEqual([undefined, undefined, undefined]);
    });
  }

  it('quotes a long one clipped to 100 characters, and refuses the whole prompt for one bad trigger among good ones', async () => {
    const sim = makeSim();
    const long = `[sim:${'x'.repeat(200)}]`;
    const res = await create(sim, `[sim:fail=render] ${long}`);
    expect(expectError(res, 400, 'invalid_request_error', 'invalid_parameter', 'prompt').message).toBe(
      `The prompt holds an unknown trigger '${long.slice(0, 100)}…'. ${KNOWN}`,
    );
  });

  it('text that does not start with [sim: is plain prompt text', async () => {
    for (const text of ['[SIM:fail=render]', '[sim fail]', 'sim:fail=render]', '[ sim:fail=render]', '(sim:fail=render)']) {
      const sim = makeSim({ seed: SEED });
      const answers = await createAndFollow(sim, `${PLAIN} ${text}`);
      expect(answers, text).toEqual(await createAndFollow(makeSim({ seed: SEED }), PLAIN));
      expect(JSON.parse(answers[1]!.body).status).toBe('succeeded');
      expect((await journalEntries(sim))[0]!.trigger).toBeUndefined();
    }
  });

  it('the prompt is stored and answered as sent, directives included', async () => {
    const sim = makeSim();
    const prompt = `${PLAIN} [sim:fail=render]`;
    const created = await create(sim, prompt);
    expect(created.body.prompt).toBe(prompt);
    expect((await request(sim.app).get(`/v1/videos/${created.body.id}`).set(bearer())).body.prompt).toBe(prompt);
  });

  it('the negative prompt is never read for triggers', async () => {
    const sim = makeSim();
    const res = await request(sim.app).post('/v1/videos').set(bearer()).send({ model: 'video-3.2', prompt: PLAIN, negative_prompt: '[sim:explode] [sim:fail=render]' });
    expect(res.status).toBe(200);
    await advanceOk(sim, 120);
    expect((await request(sim.app).get(`/v1/videos/${res.body.id}`).set(bearer())).body.status).toBe('succeeded');
  });
});

describe('with queued faults on the same request', () => {
  it("the prompt's outcome replaces a queued fault's; the fault's shot is spent", async () => {
    const sim = makeSim({ seed: SEED });
    await queueFault(sim, { path: '/v1/videos', method: 'POST', outcome: { fail_stage: 'routing' } });
    const answers = await createAndFollow(sim, `${PLAIN} [sim:fail=render]`);
    expect(answers).toEqual((await withTrigger('[sim:fail=render]')).answers);
    expect((await request(sim.app).get('/_sim/faults')).body.faults).toEqual([]);
    const [entry] = await journalEntries(sim);
    expect(entry).toMatchObject({ trigger: ['[sim:fail=render]'], fault: 'queued fault: forced outcome {"fail_stage":"routing"}' });
  });

  it('a queued fault that answers comes first: the prompt is never read', async () => {
    const sim = makeSim();
    await queueFault(sim, { path: '/v1/videos', method: 'POST', status: 500 });
    const res = await create(sim, `${PLAIN} [sim:explode]`);
    expectError(res, 500, 'api_error', 'internal_error');
    expect((await journalEntries(sim))[0]).toMatchObject({ status: 500, fault: 'queued fault: 500 internal_error' });
    expect((await journalEntries(sim))[0]!.trigger).toBeUndefined();
  });
});

describe('with an Idempotency-Key', () => {
  it('a triggered outcome is stored under the key and replayed; a triggered error is not, and answers again', async () => {
    const sim = makeSim();
    const send = (prompt: string, key: string) =>
      request(sim.app).post('/v1/videos').set(bearer()).set('Idempotency-Key', key).send({ model: 'video-3.2', prompt });
    const first = await send(`${PLAIN} [sim:fail=render]`, 'k-outcome');
    const again = await send(`${PLAIN} [sim:fail=render]`, 'k-outcome');
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.text).toBe(first.text);
    expect((await send(`${PLAIN} [sim:error=500]`, 'k-error')).status).toBe(500);
    const retried = await send(`${PLAIN} [sim:error=500]`, 'k-error');
    expect(retried.status).toBe(500);
    expect(retried.headers['idempotent-replayed']).toBeUndefined();
  });
});

describe('image prompts', () => {
  it('[sim:reject=claim_linking] and [sim:error=STATUS] answer as the queued fault on POST /v1/images does', async () => {
    for (const [directive, fault] of [
      ['[sim:reject=claim_linking]', { outcome: { claim_linking_rejected: true } }],
      ['[sim:error=402]', { status: 402 }],
      ['[sim:error=429]', { status: 429 }],
      ['[sim:error=500]', { status: 500 }],
    ] as const) {
      const { answers } = await withTrigger(directive, 'images');
      expect(answers, directive).toEqual(await withQueuedFault(fault, 'images'));
      expect(answers[0]!.status).not.toBe(200);
    }
  });

  it("a video's directives are taken and change nothing: the image is made, as under the queued fault", async () => {
    const { sim, answers } = await withTrigger('[sim:fail=render] [sim:reject=output] [sim:flag=soft_focus]', 'images');
    expect(answers).toEqual(await withQueuedFault({ outcome: { fail_stage: 'render', output_rejected: true, flags: [FLAG] } }, 'images'));
    expect(answers[0]!.status).toBe(200);
    expect((await journalEntries(sim))[0]).toMatchObject({ path: '/v1/images', trigger: ['[sim:fail=render]', '[sim:reject=output]', '[sim:flag=soft_focus]'] });
  });
});

describe('prompt_triggers', () => {
  it('is on in every bundled scenario, and GET /_sim/scenario shows it', async () => {
    for (const name of ['default', 'fast', 'slow', 'flaky', 'compliance', 'low-balance', 'rate-limited', 'unreliable-network']) {
      expect(loadScenario(name).prompt_triggers, name).toBe(true);
    }
    const sim = makeSim();
    expect((await request(sim.app).get('/_sim/scenario')).body.prompt_triggers).toBe(true);
  });

  it('false: the prompt is plain text, [sim:...] included', async () => {
    const scenario = fastWith({ prompt_triggers: false });
    const sim = makeSim({ scenario, seed: SEED });
    expect((await request(sim.app).get('/_sim/scenario')).body.prompt_triggers).toBe(false);
    const answers = await createAndFollow(sim, `${PLAIN} [sim:fail=render] [sim:explode]`);
    expect(answers).toEqual(await createAndFollow(makeSim({ seed: SEED }), PLAIN));
    expect((await create(sim, '[sim:error=500]', 'images')).status).toBe(200);
    expect((await journalEntries(sim)).filter((e) => e.trigger !== undefined)).toEqual([]);
  });

  it('a scenario object without the key has them on', async () => {
    const scenario = fastWith((s) => delete (s as Partial<typeof s>).prompt_triggers);
    const sim = makeSim({ scenario });
    expect((await request(sim.app).get('/_sim/scenario')).body.prompt_triggers).toBe(true);
    expect((await create(sim, '[sim:error=500]')).status).toBe(500);
  });

  it('a scenario file with another value than a boolean is refused', () => {
    const file = join(dir, 'bad-triggers.yaml');
    writeFileSync(file, 'extends: fast\nname: bad-triggers\nprompt_triggers: "no"\n');
    expect(() => loadScenario(file)).toThrow(/prompt_triggers/);
  });
});

describe('what the simulator records', () => {
  it("the journal's trigger, and the client report's coverage.triggers", async () => {
    const sim = makeSim();
    await create(sim, `${PLAIN} [sim:error=500]`);
    await create(sim, `${PLAIN} [sim:error=500]`);
    await create(sim, `${PLAIN} [sim:fail=render][sim:flag=soft_focus]`);
    await create(sim, PLAIN);
    await create(sim, '[sim:explode]');
    const entries = await journalEntries(sim);
    expect(entries.map((e) => [e.status, e.trigger])).toEqual([
      [500, ['[sim:error=500]']],
      [500, ['[sim:error=500]']],
      [200, ['[sim:fail=render]', '[sim:flag=soft_focus]']],
      [200, undefined],
      [400, undefined],
    ]);
    expect(entries[0]).not.toHaveProperty('fault');
    const report = (await request(sim.app).get('/_sim/report').query({ api_key: 'sk_test_alice' })).body;
    expect(report.coverage.statuses).toEqual({ '200': 2, '400': 1, '500': 2 });
    expect(report.coverage.triggers).toEqual({ '[sim:error=500]': 2, '[sim:fail=render]': 1, '[sim:flag=soft_focus]': 1 });
    // The client's reaction is judged as to any 500: a create repeated without an Idempotency-Key.
    expect(report.findings.map((f: { code: string }) => f.code)).toEqual(['post_retry_without_idempotency_key']);
    expect(formatReport(report)).toContain(['PROMPT TRIGGER         REQUESTS', '[sim:error=500]               2', '[sim:fail=render]             1', '[sim:flag=soft_focus]         1'].join('\n'));
    const plain = makeSim();
    await create(plain, PLAIN);
    expect((await request(plain.app).get('/_sim/report').query({ api_key: 'sk_test_alice' })).body.coverage).not.toHaveProperty('triggers');
  });

  it('a replay of a transcript with triggered creates is identical', async () => {
    const file = tmpFile('transcript');
    const sim = makeSim({ seed: SEED, record: file });
    for (const directives of ['[sim:fail=keyframe]', '[sim:reject=claim_linking]', '[sim:error=429]', '[sim:flag=soft_focus] [sim:reject=output]', '[sim:explode]']) {
      await createAndFollow(sim, `${PLAIN} ${directives}`);
    }
    await create(sim, `${PLAIN} [sim:error=402]`, 'images');
    await sim.close();
    const transcript = parseTranscript(readFileSync(file, 'utf8'));
    const report = replayTranscript(transcript, { loadScenario: (name) => loadScenario(name) });
    expect(report.differences).toEqual([]);
    expect(report.identical).toBe(transcript.lines.length);
    expect(transcript.lines.filter((l) => l.method === 'POST' && l.path.startsWith('/v1/')).length).toBe(6);
  });

  it('a state restore gives back the triggered generations and the journal, from request lines and from a snapshot', async () => {
    const file = tmpFile('state');
    const first = makeSim({ seed: SEED, state: file });
    const failed = await create(first, `${PLAIN} [sim:fail=render]`);
    await create(first, `${PLAIN} [sim:error=500]`);
    await advanceOk(first, 120);
    const pending = await create(first, `${PLAIN} [sim:reject=output]`);
    const seenBefore = async (sim: Sim) => ({
      journal: await journalEntries(sim),
      failed: (await request(sim.app).get(`/_sim/generations/${failed.body.id}`)).text,
      pending: (await request(sim.app).get(`/_sim/generations/${pending.body.id}`)).text,
      report: (await request(sim.app).get('/_sim/report').query({ api_key: 'sk_test_alice' })).text,
    });
    const before = await seenBefore(first);
    expect(before.journal.map((e) => e.trigger)).toEqual([['[sim:fail=render]'], ['[sim:error=500]'], ['[sim:reject=output]']]);
    await first.close();

    const restored = makeSim({ state: file });
    expect(await seenBefore(restored)).toEqual(before);
    // The restored generation goes on to its triggered fate.
    await advanceOk(restored, 120);
    expect((await request(restored.app).get(`/v1/videos/${pending.body.id}`).set(bearer())).body).toMatchObject({ status: 'failed', error: { code: 'output_rejected' } });
    await restored.close();

    const snapshotFile = tmpFile('state');
    copyFileSync(file, snapshotFile);
    await compactStateFile(snapshotFile, () => {});
    const fromSnapshot = makeSim({ state: snapshotFile });
    const after = await seenBefore(fromSnapshot);
    expect(after.journal.slice(0, 3)).toEqual(before.journal);
    expect(after.failed).toBe(before.failed);
    await fromSnapshot.close();
  });
});

describe('where the directives are listed', () => {
  it('the dashboard\'s create form and docs/live-control.md list every directive', () => {
    const page = readFileSync(new URL('../assets/dashboard/index.html', import.meta.url), 'utf8');
    const control = readFileSync(new URL('../docs/live-control.md', import.meta.url), 'utf8');
    for (const directive of PROMPT_DIRECTIVES) {
      expect(page, directive).toContain(directive);
      expect(control, directive).toContain(directive);
    }
  });
});
