/**
 * Compaction past the bound, off the request path: the request that crosses the bound is answered
 * before any snapshot is written; the state is captured at once and written in slices while
 * requests go on, the lines written meanwhile following the snapshot; a compaction that fails (a
 * full disk: the temporary file is /dev/full) leaves the file as it was, answers every request, and
 * is tried again only after a delay on the host's clock (injected here), not on the next request;
 * the file restores the same state after it failed and after it succeeded. And the snapshot's rows:
 * a capture is the state as it was when taken, whatever happens after.
 */
import { copyFileSync, existsSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { isoTime } from '../src/core/time/clock.js';
import { createSimulator, type CreateSimulatorOptions, type SimulatorHandle } from '../src/index.js';
import type { StateStatus } from '../src/persistence/stateStore.js';
import { COMPACT_RETRY_FIRST_MS, Compactor, type CompactedFile } from '../src/persistence/compaction.js';
import { systemClock } from '../src/hostClock.js';
import { PROMPT, VALID_VIDEO, answerInProcess, fastWith } from './helpers.js';
import { parseStateText, tempStateFiles } from './stateFiles.js';

const { dir, stateFile } = tempStateFiles('sim-state-compaction-');

const START = 1_790_000_000_000;

/** A simulator on the manual clock with its host clock in the test's hands (`wall.now`), without the cross-check, for requests in bulk. */
function bulkSim(options: CreateSimulatorOptions): { sim: SimulatorHandle; wall: { now: number }; logs: string[] } {
  const wall = { now: START };
  const logs: string[] = [];
  const sim = createSimulator({ scenario: 'fast', clock: 'manual', now: () => wall.now, log: (line) => logs.push(line), ...options });
  return { sim, wall, logs };
}

const stateOf = (sim: SimulatorHandle): StateStatus => (answerInProcess(sim, 'GET', '/_sim/health').body as { state: StateStatus }).state;
const advanceClock = (sim: SimulatorHandle) => answerInProcess(sim, 'POST', '/_sim/clock/advance', { body: { seconds: 0.001 } });

/** Polls a video until the file crosses its bound and a compaction starts; every answer is a 200. */
function pollPastTheBound(sim: SimulatorHandle, id: string): void {
  for (let rounds = 0; stateOf(sim).compacting === undefined; rounds++) {
    for (let i = 0; i < 500; i++) expect(answerInProcess(sim, 'GET', `/v1/videos/${id}`, { key: 'sk_test_alice' }).status).toBe(200);
    // A state-changing request writes the polls held, and checks the bound.
    expect(advanceClock(sim).status).toBe(200);
    expect(rounds).toBeLessThan(200);
  }
}

/** Waits, a few milliseconds at a time, for the compaction under way to end (it writes files). */
async function compactionEnded(sim: SimulatorHandle): Promise<StateStatus> {
  for (let turns = 0; ; turns++) {
    const state = stateOf(sim);
    if (state.compacting === undefined) return state;
    expect(turns).toBeLessThan(6000);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

const coreState = (sim: SimulatorHandle): string => JSON.stringify(sim.core.toState());

describe('compaction past the bound', () => {
  it('answers the request that crosses the bound first, then writes the snapshot while requests go on; their lines follow it', async () => {
    const file = stateFile();
    const { sim } = bulkSim({ state: file });
    const created = answerInProcess(sim, 'POST', '/v1/videos', { key: 'sk_test_alice', body: VALID_VIDEO, idempotencyKey: 'once' });
    const id = created.body.id as string;
    pollPastTheBound(sim, id);
    // Answered, and nothing written yet: the file is still the log.
    expect(parseStateText(readFileSync(file, 'utf8')).snapshot).toBeUndefined();
    // The state is captured on the next turn; these requests come after it.
    await new Promise(setImmediate);
    const during = Array.from({ length: 40 }, () => advanceClock(sim));
    expect(during.map((answer) => answer.status)).toEqual(Array(40).fill(200));
    const state = await compactionEnded(sim);

    expect(state.compacted_at).toBe(isoTime(START));
    expect(state.lines).toBe(40);
    const parsed = parseStateText(readFileSync(file, 'utf8'));
    expect(parsed.snapshot).toMatchObject({ format: 2, compacted_at: isoTime(START) });
    const lines = parsed.entries.flatMap((e) => ('line' in e ? [e.line] : []));
    expect(lines.map((line) => line.id)).toEqual(during.map((answer) => answer.headers['X-Request-Id']));
    expect(lines.map((line) => line.seq)).toEqual(lines.map((_, i) => (parsed.snapshot?.seq as number) + 1 + i));
    const live = coreState(sim);
    await sim.close();

    const restored = bulkSim({ scenario: undefined, state: file }).sim;
    expect(coreState(restored)).toBe(live);
    expect(answerInProcess(restored, 'POST', '/v1/videos', { key: 'sk_test_alice', body: VALID_VIDEO, idempotencyKey: 'once' }).text).toBe(created.text);
    await restored.close();
  });

  it('that fails leaves the file as it was, answers every request, and is tried again after a delay, not on the next request', async () => {
    const file = stateFile();
    const { sim, wall, logs } = bulkSim({ state: file });
    const created = answerInProcess(sim, 'POST', '/v1/videos', { key: 'sk_test_alice', body: VALID_VIDEO });
    const id = created.body.id as string;
    // The first two compactions write to a full disk (their temporary files, FILE.PID.N.tmp).
    for (const n of [1, 2]) symlinkSync('/dev/full', `${file}.${process.pid}.${n}.tmp`);
    pollPastTheBound(sim, id);
    const failed = await compactionEnded(sim);
    const retryAt = START + COMPACT_RETRY_FIRST_MS;
    expect(failed).toMatchObject({ compacted_at: null, compaction_failed: 'ENOSPC', compaction_retry_at: isoTime(retryAt) });
    expect(logs).toContain(`state: cannot compact ${file} (ENOSPC); it is kept as it was and still appended to, and compaction is tried again in 10 s`);
    // The file as it was (the log, whole), still appended to; the failed compaction's temporary file is gone.
    expect(advanceClock(sim).status).toBe(200);
    const log = readFileSync(file, 'utf8');
    expect(parseStateText(log)).toMatchObject({ snapshot: undefined, torn: undefined });
    expect(existsSync(`${file}.${process.pid}.1.tmp`)).toBe(false);

    // It restores, after the failure, to the same state.
    const copy = stateFile();
    copyFileSync(file, copy);
    const fromCopy = bulkSim({ scenario: undefined, state: copy }).sim;
    expect(coreState(fromCopy)).toBe(coreState(sim));
    await fromCopy.close();

    // Not on the next requests: none starts one until the delay has passed on the host's clock.
    wall.now = retryAt - 1;
    for (let i = 0; i < 20; i++) {
      expect(advanceClock(sim).status).toBe(200);
      expect(stateOf(sim)).toMatchObject({ compaction_failed: 'ENOSPC' });
      expect(stateOf(sim).compacting).toBeUndefined();
    }
    // Then the next one does; it fails again, and the delay doubles.
    wall.now = retryAt;
    expect(advanceClock(sim).status).toBe(200);
    expect(stateOf(sim).compacting).toBe(true);
    expect(await compactionEnded(sim)).toMatchObject({ compacted_at: null, compaction_failed: 'ENOSPC', compaction_retry_at: isoTime(retryAt + 2 * COMPACT_RETRY_FIRST_MS) });
    expect(logs.filter((line) => line.startsWith('state: cannot compact')).at(-1)).toContain('tried again in 20 s');

    // The disk has room again: the next try, once due, compacts.
    wall.now = retryAt + 2 * COMPACT_RETRY_FIRST_MS;
    expect(advanceClock(sim).status).toBe(200);
    const compacted = await compactionEnded(sim);
    expect(compacted.compacted_at).toBe(isoTime(wall.now));
    expect(compacted.compaction_failed).toBeUndefined();
    expect(parseStateText(readFileSync(file, 'utf8')).snapshot).toBeDefined();
    expect(readdirSync(dir).filter((name) => name.endsWith('.tmp'))).toEqual([]);
    const live = coreState(sim);
    await sim.close();
    const restored = bulkSim({ scenario: undefined, state: file }).sim;
    expect(coreState(restored)).toBe(live);
    await restored.close();
  });
});

describe('a compaction whose file cannot be taken up', () => {
  it('leaves the state file whole: once renamed, the compacted file is the state file, and stopping the compaction does not empty it', async () => {
    const file = stateFile();
    const { sim } = bulkSim({ state: file });
    await sim.listen(0);
    const id = answerInProcess(sim, 'POST', '/v1/videos', { key: 'sk_test_alice', body: VALID_VIDEO }).body.id as string;
    await sim.close();
    const text = readFileSync(file, 'utf8');
    const header = parseStateText(text).header;
    const logs: string[] = [];
    // The state file as its store keeps it, whose reopening after the rename fails: the store
    // then stops keeping the state, which stops the compaction under way (`abort`).
    const compacted: CompactedFile = {
      file,
      path: file,
      core: sim.core,
      hostClock: systemClock,
      bytes: Buffer.byteLength(text),
      lines: text.split('\n').length - 2,
      seq: 1,
      warn: (line) => logs.push(line),
      mustStop: () => false,
      flush: () => {},
      header: () => header,
      adopt: () => {
        compactor.abort();
        return false;
      },
      compactionOver: () => {},
    };
    const compactor = new Compactor(compacted, null);
    expect(await compactor.now()).toBeUndefined();
    const after = parseStateText(readFileSync(file, 'utf8'));
    expect(after.header).toEqual(header);
    expect(after.items.some((row) => JSON.stringify(row).includes(id))).toBe(true);
    expect(readdirSync(dir).filter((name) => name.endsWith('.tmp'))).toEqual([]);
  });
});

describe('a capture of the state', () => {
  it('is the state as it was when taken: what happens after (stages ending early, resolutions, creates, cancels, faults taken) does not show in its rows', async () => {
    const scenario = fastWith((s) => {
      s.name = 'capture-test';
      s.limits = { ...s.limits, max_stored_generations: 4, max_accounts: 3, journal_size: 30 };
    });
    const { sim } = bulkSim({ scenario });
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) {
      const key = `sk_test_k${i % 4}`;
      const answer = answerInProcess(sim, 'POST', '/v1/videos', { key, body: { model: 'video-3.2', prompt: `${PROMPT} ${i}` }, idempotencyKey: `k${i}` });
      ids.push(answer.body.id as string);
    }
    answerInProcess(sim, 'POST', '/v1/images', { key: 'sk_test_k3', body: { prompt: PROMPT }, idempotencyKey: 'img' });
    answerInProcess(sim, 'POST', '/_sim/faults', { body: { path: '/v1/videos', method: 'POST', api_key: 'sk_test_k3', status: 500, times: 2 } });
    answerInProcess(sim, 'POST', `/_sim/generations/${ids[5]}/advance`);
    const before = coreState(sim);
    const capture = sim.core.captureState();

    // Everything changes: a stage ended early (its durations rewritten in place), all resolve, more creates, a cancel, a fault taken, an account dropped.
    answerInProcess(sim, 'POST', `/_sim/generations/${ids[4]}/advance`);
    answerInProcess(sim, 'POST', `/_sim/generations/${ids[3]}/fail`);
    answerInProcess(sim, 'DELETE', `/v1/videos/${ids[2]}`, { key: 'sk_test_k2' });
    answerInProcess(sim, 'POST', '/_sim/clock/advance', { body: { seconds: 600 } });
    for (let i = 0; i < 4; i++) answerInProcess(sim, 'POST', '/v1/videos', { key: `sk_test_later${i}`, body: VALID_VIDEO, idempotencyKey: `later${i}` });
    expect(coreState(sim)).not.toBe(before);

    // The rows, as a file holds them, loaded into a simulator of the same run.
    const other = bulkSim({ scenario }).sim;
    const loading = other.core.loadState(JSON.parse(JSON.stringify(capture.head)));
    let count = 0;
    for (const row of capture.rows()) {
      loading.add(JSON.parse(JSON.stringify(row)));
      count++;
    }
    loading.finish();
    expect(count).toBe(capture.count);
    expect(coreState(other)).toBe(before);
  });
});

/** Whether the object behind `ref` is gone after a full collection (V8's flag set at run time), once the current job let go of it. */
async function released(ref: WeakRef<object>): Promise<boolean> {
  await new Promise((resolve) => setTimeout(resolve, 0));
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as () => void)();
  return ref.deref() === undefined;
}

describe('a capture read as a compaction reads it (release)', () => {
  it('gives the rows a plain read gives, and lets go of each item once its row is made, not before', async () => {
    const { sim } = bulkSim({ scenario: fastWith((s) => (s.name = 'capture-release')) });
    const create = (key: string, i: number) =>
      answerInProcess(sim, 'POST', '/v1/videos', { key, body: { model: 'video-3.2', prompt: `${PROMPT} ${i}` }, idempotencyKey: `k${i}` });
    const kept = create('sk_test_kept', 0).body.id as string;
    const gone = [1, 2, 3].map((i) => create('sk_test_gone', i).body.id as string);
    // Resolved: the capture holds them as they are, not copies.
    answerInProcess(sim, 'POST', '/_sim/clock/advance', { body: { seconds: 600, api_key: 'sk_test_gone' } });
    const answer = new WeakRef(sim.core.accounts.peek('sk_test_gone')?.idempotency.entries()[0] as object);
    const generation = new WeakRef(sim.core.store.get(gone[0] as string) as object);
    const plain = [...sim.core.captureState().rows()].map((row) => JSON.parse(JSON.stringify(row)) as unknown);
    const capture = sim.core.captureState();
    const rows = capture.rows(true);
    const read: unknown[] = [];
    // Every account and stored answer, and the first generation (the kept account's).
    for (let next = rows.next(); !next.done; next = rows.next()) {
      read.push(JSON.parse(JSON.stringify(next.value)));
      if ('generation' in next.value) break;
    }
    expect(read.at(-1)).toMatchObject({ generation: { id: kept } });
    // The state drops the account: its stored answer, whose row is made, goes; its generation, whose row is not, is held.
    expect(answerInProcess(sim, 'POST', '/_sim/reset', { body: { api_key: 'sk_test_gone' } }).status).toBe(200);
    expect(await released(answer)).toBe(true);
    expect(await released(generation)).toBe(false);
    for (const row of rows) read.push(JSON.parse(JSON.stringify(row)));
    expect(await released(generation)).toBe(true);
    expect(read).toEqual(plain);
    expect(read).toHaveLength(capture.count);
    await sim.close();
  });
});

describe('reading a state file', () => {
  const fixture = (name: string): string => readFileSync(join(import.meta.dirname, 'fixtures', name), 'utf8');

  it('restores a single-line snapshot of format 1 longer than any other row may be (16 MiB)', async () => {
    const [header, snapshot, ...rest] = fixture('state-snapshot-format-1.jsonl').split('\n');
    // White space inside the JSON: the same snapshot on a line of 17 MiB.
    const long = stateFile();
    writeFileSync(long, [header, snapshot?.replace('{"snapshot":', `{"snapshot":${' '.repeat(17 * 2 ** 20)}`), ...rest].join('\n'));
    const short = stateFile();
    writeFileSync(short, fixture('state-snapshot-format-1.jsonl'));
    const fromLong = bulkSim({ scenario: undefined, state: long }).sim;
    const fromShort = bulkSim({ scenario: undefined, state: short }).sim;
    expect(coreState(fromLong)).toBe(coreState(fromShort));
    await Promise.all([fromLong.close(), fromShort.close()]);
  });

  it('starts anew on a file that holds only a header cut short, and says so', async () => {
    const file = stateFile();
    const [header] = fixture('state-snapshot-format-1.jsonl').split('\n');
    writeFileSync(file, (header as string).slice(0, 200));
    const { sim, logs } = bulkSim({ scenario: undefined, state: file });
    expect(logs).toContain(`state: ${file} holds only a header cut short (the simulator was stopped while writing it): starting with a new state`);
    expect(sim.stateRestored).toBeUndefined();
    await sim.close();
  });
});
