/**
 * State snapshots, in-process: a snapshot of the core's state restores exactly the state that
 * replaying the log restores (the same state as plain data, the same answers to every read, the
 * same answers to the requests that follow); compaction past the bound; GET /_sim/state with and
 * without --state; snapshots refused.
 */
import { copyFileSync, existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { get as httpGet, type IncomingMessage } from 'node:http';
import { join } from 'node:path';
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { createSimulator, type CreateSimulatorOptions, type SimulatorHandle } from '../src/index.js';
import { compactStateFile } from '../src/persistence/compact.js';
import { parseStateText, tempStateFiles } from './stateFiles.js';
import { StateRefusedError } from '../src/persistence/open.js';
import { COMPACT_MIN_TAIL_BYTES } from '../src/persistence/compaction.js';
import { PROMPT, fastWith, makeSim as makeCheckedSim } from './helpers.js';

const { dir, stateFile } = tempStateFiles('sim-state-snapshot-');

/** The host's clock, fixed: the journal keeps it, and two simulators compared must read the same. */
const WALL = 1_790_000_000_000;
const makeSim = (options: CreateSimulatorOptions = {}) => makeCheckedSim({ now: () => WALL, ...options });
/** Without the cross-check, for requests in bulk. */
const makeBulkSim = (options: CreateSimulatorOptions) => createSimulator({ clock: 'manual', now: () => WALL, log: () => {}, ...options });

/** A scenario that exercises every part of the state: buckets and a route group, faults, failures, flags, balances, evictions. */
const SCENARIO = fastWith((s) => {
  s.name = 'snapshot-test';
  s.rate_limits = {
    capacity: 9,
    refill_per_second: 0.5,
    groups: [{ name: 'images', method: 'POST', path: '/v1/images', capacity: 2, refill_per_second: 0.1 }],
  };
  s.limits = { ...s.limits, max_stored_generations: 3, max_accounts: 4, journal_size: 40 };
  s.idempotency = { retention_seconds: 30 };
  s.http.faults = [{ status: 500, probability: 0.08 }];
  s.stages.render.failure = { probability: 0.3, code: 'render_failed' };
  s.compliance.output_verification = {
    reject_share: 0.2,
    flag_share: 0.3,
    flags: [
      { code: 'policy_violation', severity: 'block', message: 'Blocked.' },
      { code: 'low_confidence', severity: 'info', message: 'Low confidence.' },
    ],
  };
  s.accounts = { sk_test_poor: { balance_cents: 150 } };
});

interface Answer {
  status: number;
  text: string;
  headers: Record<string, string | undefined>;
}

/** One request; the answer's status, body and the headers a client reads. */
async function send(sim: SimulatorHandle, method: string, path: string, options: { key?: string; body?: unknown; idem?: string } = {}): Promise<Answer> {
  let call = request(sim.app)[method.toLowerCase() as 'get' | 'post' | 'delete'](path);
  if (options.key) call = call.set('Authorization', `Bearer ${options.key}`);
  if (options.idem) call = call.set('Idempotency-Key', options.idem);
  const res = options.body === undefined ? await call : await call.send(options.body as object);
  const headers: Answer['headers'] = {};
  for (const name of ['x-request-id', 'x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset', 'retry-after', 'idempotent-replayed']) headers[name] = res.headers[name];
  return { status: res.status, text: res.text, headers };
}

const KEYS = ['sk_test_alice', 'sk_test_bob', 'sk_test_poor', 'sk_test_carol'];
const idOf = (a: Answer): string | undefined => (a.status === 200 ? (JSON.parse(a.text) as { id: string }).id : undefined);

/** A run over four accounts (a fifth one past max_accounts from the third round): creates, polls, images, keyframes reused, cancels, faults, clocks, live control, resets. */
async function run(sim: SimulatorHandle, rounds: number, tag: string): Promise<Answer[]> {
  const answers: Answer[] = [];
  const keep = async (a: Promise<Answer>): Promise<Answer> => {
    const answer = await a;
    answers.push(answer);
    return answer;
  };
  for (let round = 0; round < rounds; round++) {
    const made: [string, string][] = [];
    for (const key of KEYS) {
      const body = { model: 'video-3.2', prompt: `${PROMPT} ${tag} ${round} ${key}`, duration_seconds: 8 };
      const created = await keep(send(sim, 'POST', '/v1/videos', { key, body, idem: round % 2 === 0 ? `${tag}-${round}-${key}` : undefined }));
      const id = idOf(created);
      if (id) made.push([key, id]);
      // Its balance covers one generation in flight, not two: 402.
      if (key === 'sk_test_poor' && round === 0) await keep(send(sim, 'POST', '/v1/videos', { key, body: { ...body, prompt: `${body.prompt} again` } }));
      // The same keyed request again: a replay (or the same refusal).
      if (round % 2 === 0) await keep(send(sim, 'POST', '/v1/videos', { key, body, idem: `${tag}-${round}-${key}` }));
      for (let i = 0; i < 3; i++) await keep(send(sim, 'GET', id ? `/v1/videos/${id}` : '/v1/videos', { key }));
    }
    const image = await keep(send(sim, 'POST', '/v1/images', { key: 'sk_test_alice', body: { prompt: `${tag} ${round}` }, idem: `${tag}-img-${round}` }));
    const imageId = idOf(image);
    if (imageId) await keep(send(sim, 'POST', '/v1/videos', { key: 'sk_test_alice', body: { model: 'video-3.1', prompt: PROMPT, keyframe_id: imageId } }));
    await keep(send(sim, 'POST', '/_sim/faults', { body: { path: '/v1/videos', method: 'POST', api_key: 'sk_test_bob', status: 429 } }));
    await keep(send(sim, 'POST', '/_sim/faults', { body: { path: '/v1/videos', api_key: 'sk_test_carol', outcome: { fail_stage: 'routing' } } }));
    await keep(send(sim, 'POST', '/_sim/clock/advance', { body: { seconds: 3 } }));
    await keep(send(sim, 'POST', '/_sim/clock/advance', { body: { seconds: 0.7, api_key: 'sk_test_bob' } }));
    const [first, second, third] = made;
    if (first) await keep(send(sim, 'POST', `/_sim/generations/${first[1]}/advance`));
    if (second) await keep(send(sim, 'DELETE', `/v1/videos/${second[1]}`, { key: second[0] }));
    if (third) await keep(send(sim, 'POST', `/_sim/generations/${third[1]}/${round % 2 === 0 ? 'fail' : 'finish'}`));
    if (round === 1) await keep(send(sim, 'POST', '/_sim/reset', { body: { api_key: 'sk_test_poor' } }));
    // A fifth account: the least recently used one is dropped.
    if (round >= 2) await keep(send(sim, 'GET', '/v1/videos', { key: `sk_test_extra${round}` }));
  }
  return answers;
}

/** Every control and /v1 read, answered as sent (health without its state line, which names the file). */
async function reads(sim: SimulatorHandle): Promise<Record<string, unknown>> {
  const out: Record<string, unknown> = {};
  const health = await send(sim, 'GET', '/_sim/health');
  const { state: _file, ...rest } = JSON.parse(health.text) as Record<string, unknown>;
  out.health = rest;
  // changed_since=327680: the cursor of the list across accounts after its fifth change (5 × 65536).
  for (const path of ['/_sim/generations?limit=100', '/_sim/generations?changed_since=0&limit=3', '/_sim/generations?changed_since=327680', '/_sim/requests?limit=1000', '/_sim/faults', '/_sim/clock']) {
    out[path] = await send(sim, 'GET', path);
  }
  for (const key of KEYS) {
    out[`report ${key}`] = await send(sim, 'GET', `/_sim/report?api_key=${key}`);
    out[`clock ${key}`] = await send(sim, 'GET', `/_sim/clock?api_key=${key}`);
    out[`list ${key}`] = await send(sim, 'GET', '/v1/videos?limit=100', { key });
  }
  const listed = JSON.parse((out['/_sim/generations?limit=100'] as Answer).text) as { data: { id: string }[] };
  for (const g of listed.data) out[g.id] = await send(sim, 'GET', `/_sim/generations/${g.id}`);
  return out;
}

const stateOf = (sim: SimulatorHandle): string => JSON.stringify(sim.core.toState());

/** The same state in both, then the same reads and the same requests after them give the same answers. */
async function expectSameState(a: SimulatorHandle, b: SimulatorHandle): Promise<void> {
  expect(stateOf(b)).toBe(stateOf(a));
  expect(await reads(b)).toEqual(await reads(a));
  expect(await run(b, 2, 'after')).toEqual(await run(a, 2, 'after'));
  expect(stateOf(b)).toBe(stateOf(a));
}

describe('a snapshot', () => {
  it('restores exactly the state the log restores: the same state, reads and next answers (ids, fates, 429s, replays)', async () => {
    const file = stateFile();
    const live = makeSim({ scenario: SCENARIO, state: file });
    const answers = await run(live, 4, 'before');
    // The run reached every part of the state it is meant to.
    expect(answers.map((a) => a.status)).toEqual(expect.arrayContaining([200, 402, 429, 500]));
    expect(answers.some((a) => a.headers['idempotent-replayed'] === 'true')).toBe(true);
    expect(live.core.accounts.evicted).toBeGreaterThan(0);
    expect(live.core.store.evictedGenerations).toBeGreaterThan(0);
    const liveState = stateOf(live);
    await live.close();

    const compacted = join(dir, 'compacted.jsonl');
    copyFileSync(file, compacted);
    const sizes = await compactStateFile(compacted, () => {});
    expect(sizes).toMatchObject({ before: statSync(file).size, after: statSync(compacted).size });
    const parsed = parseStateText(readFileSync(compacted, 'utf8'));
    expect(parsed.snapshot?.seq).toBe(parseStateText(readFileSync(file, 'utf8')).entries.filter((e) => 'line' in e).length);
    expect(parsed.entries).toEqual([]);

    const fromLog = makeSim({ scenario: undefined, state: file });
    const fromSnapshot = makeSim({ scenario: undefined, state: compacted });
    expect(stateOf(fromLog)).toBe(liveState);
    expect(fromSnapshot.stateRestored).toBe(fromLog.stateRestored);
    await expectSameState(fromLog, fromSnapshot);
    await Promise.all([fromLog.close(), fromSnapshot.close()]);
  });

  it('replays the tail after it: a compacted file that went on restores like the log of the whole run', async () => {
    const log = stateFile();
    const compacted = stateFile();
    const a = makeSim({ scenario: SCENARIO, state: log });
    await run(a, 2, 'one');
    await a.close();
    copyFileSync(log, compacted);
    await compactStateFile(compacted, () => {});
    // Both go on with the same requests: one appends to its log, the other to its snapshot.
    const onLog = makeSim({ scenario: undefined, state: log });
    const onSnapshot = makeSim({ scenario: undefined, state: compacted });
    expect(await run(onSnapshot, 2, 'two')).toEqual(await run(onLog, 2, 'two'));
    await Promise.all([onLog.close(), onSnapshot.close()]);
    expect(parseStateText(readFileSync(compacted, 'utf8')).entries.length).toBeGreaterThan(0);

    const fromLog = makeSim({ scenario: undefined, state: log });
    const fromSnapshot = makeSim({ scenario: undefined, state: compacted });
    await expectSameState(fromLog, fromSnapshot);
    await Promise.all([fromLog.close(), fromSnapshot.close()]);
  });

  it('gives answers stored under Idempotency-Keys the address of the simulator it is restored on', async () => {
    const file = stateFile();
    const first = makeSim({ scenario: SCENARIO, state: file, cdnUrl: 'http://first.localhost:1/cdn' });
    const image = await send(first, 'POST', '/v1/images', { key: 'sk_test_alice', body: { prompt: PROMPT }, idem: 'img' });
    expect(image.text).toContain('"url":"http://first.localhost:1/cdn/images/');
    await first.close();
    const compacted = stateFile();
    copyFileSync(file, compacted);
    await compactStateFile(compacted, () => {});
    const fromLog = makeSim({ scenario: undefined, state: file, cdnUrl: 'http://second.localhost:2/cdn' });
    const fromSnapshot = makeSim({ scenario: undefined, state: compacted, cdnUrl: 'http://second.localhost:2/cdn' });
    const replayed = await send(fromSnapshot, 'POST', '/v1/images', { key: 'sk_test_alice', body: { prompt: PROMPT }, idem: 'img' });
    expect(replayed.headers['idempotent-replayed']).toBe('true');
    expect(replayed.text).toBe(image.text.replace('first.localhost:1', 'second.localhost:2'));
    expect(await send(fromLog, 'POST', '/v1/images', { key: 'sk_test_alice', body: { prompt: PROMPT }, idem: 'img' })).toEqual(replayed);
    expect(stateOf(fromSnapshot)).toBe(stateOf(fromLog));
    await Promise.all([fromLog.close(), fromSnapshot.close()]);
  });
});

describe('compaction past the bound', () => {
  it('rewrites the file as its header and a snapshot once the tail outgrows it, and the file restores the same state', async () => {
    const file = stateFile();
    const sim = makeBulkSim({ scenario: 'fast', state: file });
    const created = await send(sim, 'POST', '/v1/videos', { key: 'sk_test_alice', body: { model: 'video-3.2', prompt: PROMPT }, idem: 'once' });
    const id = idOf(created) as string;
    // Polls: lines that change little, so that a snapshot is far smaller than their log.
    const poll = { method: 'GET', path: `/v1/videos/${id}`, query: '', headers: { authorization: 'Bearer sk_test_alice' }, body: null };
    let health = JSON.parse((await send(sim, 'GET', '/_sim/health')).text) as { state: { bytes: number; lines: number; compacted_at: string | null } };
    for (let i = 0; health.state.compacted_at === null; i++) {
      sim.app.answer(poll);
      // A state-changing request writes the polls held.
      if (i % 500 === 499) await send(sim, 'POST', '/_sim/clock/advance', { body: { seconds: 0.001 } });
      if (i % 500 === 499) health = JSON.parse((await send(sim, 'GET', '/_sim/health')).text);
      expect(i).toBeLessThan(100_000);
    }
    const text = readFileSync(file, 'utf8');
    expect(Object.keys(JSON.parse(text.split('\n')[1] as string))).toEqual(['snapshot']);
    expect(health.state.bytes).toBeLessThan(COMPACT_MIN_TAIL_BYTES);
    expect(health.state.lines).toBe(parseStateText(text).entries.filter((e) => 'line' in e).length);
    expect(Date.parse(health.state.compacted_at)).not.toBeNaN();
    await send(sim, 'GET', `/v1/videos/${id}`, { key: 'sk_test_alice' });
    const liveState = stateOf(sim);
    await sim.close();

    const restored = makeSim({ scenario: undefined, state: file });
    expect(stateOf(restored)).toBe(liveState);
    const replayed = await send(restored, 'POST', '/v1/videos', { key: 'sk_test_alice', body: { model: 'video-3.2', prompt: PROMPT }, idem: 'once' });
    expect(replayed.text).toBe(created.text);
    expect(replayed.headers['idempotent-replayed']).toBe('true');
    expect(JSON.parse((await send(restored, 'GET', '/_sim/health')).text).state.compacted_at).toBe(health.state.compacted_at);
    await restored.close();
  });

  it('compacts a file past the bound even when its snapshot is bigger than its lines: rows restore faster than requests replay', async () => {
    const file = stateFile();
    const sim = makeBulkSim({ scenario: 'fast', state: file });
    // Creates with long prompts: the state holds each prompt more than once (the generation, its keyframe image).
    const prompt = 'A long prompt. '.repeat(260);
    let i = 0;
    while (!existsSync(file) || statSync(file).size < COMPACT_MIN_TAIL_BYTES + 100_000) {
      const created = sim.app.answer({
        method: 'POST',
        path: '/v1/videos',
        query: '',
        headers: { authorization: `Bearer sk_test_long${i % 50}`, 'content-type': 'application/json' },
        body: Buffer.from(JSON.stringify({ model: 'video-3.2', prompt: `${prompt}${i++}` })),
      });
      expect(created.status).toBe(200);
    }
    const logged = statSync(file).size;
    let health = JSON.parse((await send(sim, 'GET', '/_sim/health')).text) as { state: { lines: number; compacted_at: string | null; compacting?: true } };
    for (let turns = 0; health.state.compacting; turns++) {
      expect(turns).toBeLessThan(6000);
      await new Promise((resolve) => setTimeout(resolve, 5));
      health = JSON.parse((await send(sim, 'GET', '/_sim/health')).text);
    }
    expect(health.state).toMatchObject({ lines: 0, compacted_at: new Date(WALL).toISOString() });
    expect(statSync(file).size).toBeGreaterThan(logged);
    const liveState = stateOf(sim);
    await sim.close();
    expect(parseStateText(readFileSync(file, 'utf8')).entries.filter((e) => 'line' in e)).toEqual([]);
    const restored = makeSim({ scenario: undefined, state: file });
    expect(stateOf(restored)).toBe(liveState);
    await restored.close();
  });
});

describe('GET /_sim/state', () => {
  it('without --state answers the state as a compacted file, which restores the same state', async () => {
    const sim = makeSim({ scenario: SCENARIO });
    await run(sim, 3, 'handed');
    expect((await send(sim, 'GET', '/_sim/health')).text).not.toContain('"state"');
    const download = await send(sim, 'GET', '/_sim/state');
    expect(download.status).toBe(200);
    const file = stateFile();
    writeFileSync(file, download.text);
    const parsed = parseStateText(download.text);
    expect(parsed.header).toMatchObject({ state: 1, seed: SCENARIO.seed, scenario: { name: 'snapshot-test' }, clock: { mode: 'manual' } });
    expect(parsed.snapshot).toMatchObject({ format: 2, version: '0.1.0' });
    expect(parsed.entries).toEqual([]);

    const restored = makeSim({ scenario: undefined, state: file });
    await expectSameState(sim, restored);
    await restored.close();
  });

  it('sends a large state as the client reads it: chunked, the state as it was when asked, other requests answered meanwhile', async () => {
    const sim = makeBulkSim({ scenario: 'fast' });
    const url = await sim.listen(0, '127.0.0.1');
    // About 3 MB of state: a few chunks of 1 MiB.
    const prompt = 'a lighthouse at dawn '.repeat(150);
    const create = () =>
      fetch(`${url}/v1/videos`, { method: 'POST', headers: { Authorization: 'Bearer sk_test_big', 'Content-Type': 'application/json' }, body: JSON.stringify({ model: 'video-3.2', prompt }) });
    for (let i = 0; i < 1000; i++) expect((await create()).status).toBe(200);

    // The first chunk read, then the download left unread while other requests come.
    const res = await new Promise<IncomingMessage>((resolve, reject) => httpGet(`${url}/_sim/state`, resolve).on('error', reject));
    expect(res.headers['content-length']).toBeUndefined();
    expect(res.headers['transfer-encoding']).toBe('chunked');
    const chunks: Buffer[] = [];
    await new Promise<void>((resolve) =>
      res.once('data', (chunk: Buffer) => {
        chunks.push(chunk);
        res.pause();
        resolve();
      }),
    );
    expect((await create()).status).toBe(200);
    expect((await fetch(`${url}/_sim/health`)).status).toBe(200);
    const ended = new Promise((resolve) => res.on('end', resolve));
    res.on('data', (chunk: Buffer) => chunks.push(chunk));
    res.resume();
    await ended;
    const text = Buffer.concat(chunks).toString('utf8');
    expect(Buffer.byteLength(text)).toBeGreaterThan(2 * 1024 * 1024);
    // The 1,000 generations stored when it was asked for, not the one created while it was read.
    expect(parseStateText(text).items.filter((item) => 'generation' in item)).toHaveLength(1000);
    await sim.close();
  });

  it('with --state answers the header and a snapshot of the state now, and leaves the file as it is', async () => {
    const file = stateFile();
    const sim = makeSim({ scenario: SCENARIO, state: file });
    await run(sim, 2, 'kept');
    const before = readFileSync(file, 'utf8');
    const download = await send(sim, 'GET', '/_sim/state');
    const copy = stateFile();
    writeFileSync(copy, download.text);
    expect(download.text.split('\n')[0]).toBe(before.split('\n')[0]);
    const restored = makeSim({ scenario: undefined, state: copy });
    await expectSameState(sim, restored);
    await Promise.all([sim.close(), restored.close()]);
  });
});

describe('a snapshot refused', () => {
  /** A compacted state file of one create: its text, and its rows. */
  async function compactedFile(): Promise<{ file: string; text: string; rows: string[] }> {
    const file = stateFile();
    const sim = makeSim({ state: file });
    await send(sim, 'POST', '/v1/videos', { key: 'sk_test_alice', body: { model: 'video-3.2', prompt: PROMPT }, idem: 'k' });
    await sim.close();
    await compactStateFile(file, () => {});
    const text = readFileSync(file, 'utf8');
    return { file, text, rows: text.split('\n') };
  }

  it('of a format this version does not read: what to do, and that replaying works across versions', async () => {
    const { file, text } = await compactedFile();
    writeFileSync(file, text.replace('{"snapshot":{"format":2,"version":"0.1.0"', '{"snapshot":{"format":7,"version":"3.0.0"'));
    expect(() => makeSim({ scenario: undefined, state: file })).toThrow(StateRefusedError);
    expect(() => makeSim({ scenario: undefined, state: file })).toThrow(
      `line 2: a snapshot in format 7 (compacted by version 3.0.0 of the simulator); this version reads snapshot formats 1 and 2. ` +
        'A snapshot is tied to its format: open the file with version 3.0.0 (npx video-service-sim@3.0.0 --state FILE), or start with a new state file',
    );
  });

  it('that is damaged, cut, or not on line 2: the line named', async () => {
    const { file, text, rows } = await compactedFile();
    const refusal = (content: string): string => {
      writeFileSync(file, content);
      try {
        makeSim({ scenario: undefined, state: file });
      } catch (e) {
        expect(e).toBeInstanceOf(StateRefusedError);
        return (e as Error).message;
      }
      throw new Error('restored');
    };
    const generationLine = rows.findIndex((row) => row.startsWith('{"generation":')) + 1;
    const endLine = rows.length - 1;
    expect(rows[endLine - 1]).toBe(`{"snapshot_end":{"rows":${endLine - 3}}}`);
    expect(refusal(text.replace('"evicted_accounts":', '"evicted_accounts":"none","was":'))).toContain('line 2: snapshot.state.evicted_accounts: expected a number, got "none"');
    expect(refusal(text.replace('"request":{', '"request":null,"was":{'))).toContain(`line ${generationLine}: the snapshot's state is damaged`);
    expect(refusal(text.replace('{"generation":', '{"generations":'))).toContain(
      `line ${generationLine}: expected a row of the snapshot (control_requests, account, idempotency, generation, account_changes, image, journal, fault) or its end row, got one with "generations"`,
    );
    // Cut: its end row gone, or a row.
    expect(refusal(`${rows.slice(0, endLine - 1).join('\n')}\n`)).toContain(`line ${endLine}: the snapshot of line 2 has no end row: the file ends (or is cut) after ${endLine - 3} of its rows`);
    expect(refusal(text.replace(`${rows[generationLine - 1]}\n`, ''))).toContain(
      `line ${endLine - 1}: the snapshot of line 2 says it holds ${endLine - 3} rows, but ${endLine - 4} come before its end`,
    );
    expect(refusal(`${text}${rows[1]}\n`)).toContain(`line ${endLine + 1}: a snapshot after the second line`);
  });
});

describe('a snapshot of format 1 (a single line, as earlier versions wrote it)', () => {
  it('restores the state its log restores, and the lines after it replay on it', async () => {
    const fixtures = join(import.meta.dirname, 'fixtures');
    // Written by the previous version: a run's log, and the same run compacted (`sim state compact`), each followed by the same requests.
    const log = stateFile();
    const compacted = stateFile();
    copyFileSync(join(fixtures, 'state-log-of-snapshot-format-1.jsonl'), log);
    copyFileSync(join(fixtures, 'state-snapshot-format-1.jsonl'), compacted);
    expect(JSON.parse(readFileSync(compacted, 'utf8').split('\n')[1] as string).snapshot).toMatchObject({ format: 1, seq: 17 });
    const fromLog = makeSim({ scenario: undefined, state: log });
    const fromSnapshot = makeSim({ scenario: undefined, state: compacted });
    expect(fromSnapshot.stateRestored).toBe(fromLog.stateRestored);
    // 11 generations and 2 images made by POST /v1/images, all of which count against the limit.
    expect(fromSnapshot.core.store.storedGenerations).toBe(13);
    expect(fromLog.core.store.storedGenerations).toBe(13);
    // The journal's `createdId` (what a create made, for the client report's lost answers) and a
    // generation's account change number (`account_change`, the cursor of its account's control
    // list) came after format 1: replaying the log gives them, the old snapshot cannot (it numbers
    // each account's changes in the order of the global ones). So did a stored answer's digest of
    // its request (the old snapshot holds the request itself, which a repeat still matches) and its
    // rank among the answers of all accounts (`seq`: the old snapshot's go account by account).
    // So did what a journal record keeps for request patterns: the body's fields and the statuses
    // the answer showed (`body`, `seen`). Nothing else differs.
    const withoutCreatedIds = (sim: SimulatorHandle): string =>
      stateOf(sim)
        .replaceAll(/"createdId":"[^"]*",/g, '')
        .replaceAll(/"account_change":\d+,/g, '')
        .replaceAll(/"fingerprint":"(?:[^"\\]|\\.)*",/g, '')
        .replaceAll(/,"seq":\d+\}/g, '}')
        .replaceAll(/,"body":(null|\{[^{}]*\}),"seen":\d+\}/g, '}');
    expect(withoutCreatedIds(fromSnapshot)).toBe(withoutCreatedIds(fromLog));
    // The journal's entries show those fields (`seen`, `body`) where the record has them.
    const readsWithoutKept = async (sim: SimulatorHandle): Promise<Record<string, unknown>> => {
      const out = await reads(sim);
      const journal = out['/_sim/requests?limit=1000'] as Answer;
      out['/_sim/requests?limit=1000'] = { ...journal, text: journal.text.replaceAll(/,"seen":\[[^\]]*\]/g, '').replaceAll(/,"body":\{[^{}]*\}/g, '') };
      return out;
    };
    try {
      expect(await readsWithoutKept(fromSnapshot)).toEqual(await readsWithoutKept(fromLog));
    } finally {
      await Promise.all([fromLog.close(), fromSnapshot.close()]);
    }
  });
});
