/**
 * A state file past V8's limit on a string's length (2^29 - 24 characters, about 512 MiB): a
 * simulator process holds a state whose snapshot is bigger than that, compacts its file as it runs
 * (the snapshot written as rows, off the request path: every request is answered meanwhile, none
 * with an error), and a restart restores it in bounded memory.
 *
 * The state: creates with prompts and negative prompts of the longest length allowed (4,000
 * characters) under Idempotency-Keys, on the manual clock (nothing resolves): each holds its
 * request twice (the generation, the stored answer and its fingerprint) beside its journal entry,
 * about 27 KB of snapshot for an 8 KB line. The file is compacted as it grows; then requests that
 * change no state (bodies of 1 MiB that are not JSON: 400) take it past its bound once more, and the
 * compaction that follows captures the whole state.
 *
 * Prints what it measured (the figures of docs/state.md, "Measured").
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { call } from '../helpers.js';
import { CLI } from '../processes.js';

const dir = mkdtempSync(join(tmpdir(), 'sim-state-large-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** V8's longest string (`buffer.constants.MAX_STRING_LENGTH` on 64-bit Node 20 and 22). */
const MAX_STRING_LENGTH = 2 ** 29 - 24;
/** The snapshot made: past the longest string, with a margin. */
const SNAPSHOT_BYTES = 600 * 2 ** 20;
const ACCOUNTS = 50;
/** Generous liveness bounds (the figures measured are printed): a request answered in under a second while the file is compacted. */
const LIVENESS_MS = 1000;

interface Running {
  child: ChildProcessWithoutNullStreams;
  url: string;
  stdout: () => string;
  stderr: () => string;
  startedMs: number;
}

const children = new Set<ChildProcessWithoutNullStreams>();
afterEach(() => {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  children.clear();
});

/** `sim --port 0 ...args`, once it says where its state is (after restoring it); `startedMs`: how long that took. */
async function startCli(args: string[]): Promise<Running> {
  const began = performance.now();
  const child = spawn(process.execPath, [CLI, '--port', '0', ...args]);
  children.add(child);
  let stdout = '';
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  await new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      if (/^state: /m.test(stdout)) resolve();
    });
    child.once('exit', (code) => reject(new Error(`sim exited ${code}: ${stderr}`)));
  });
  const port = Number(/:(\d+) /.exec(stdout)?.[1]);
  return { child, url: `http://127.0.0.1:${port}`, stdout: () => stdout, stderr: () => stderr, startedMs: performance.now() - began };
}

async function stop(sim: Running): Promise<number | null> {
  const exited = new Promise<number | null>((resolve) => sim.child.once('exit', (code) => resolve(code)));
  sim.child.kill('SIGTERM');
  return exited;
}

interface StateHealth {
  bytes: number;
  lines: number;
  compacted_at: string | null;
  compacting?: true;
  compaction_failed?: string;
}
const stateOf = async (sim: Running): Promise<StateHealth> => (JSON.parse((await call(sim.url, 'GET', '/_sim/health')).text) as { state: StateHealth }).state;

/** The CPU time a process has used (user and system, all its threads), from /proc (Linux; clock ticks of 10 ms). */
function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/** The resident memory a process reached at most, from /proc (Linux). */
function peakRssBytes(pid: number): number {
  const kb = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  return Number(kb) * 1024;
}

const MiB = (bytes: number): string => `${(bytes / 2 ** 20).toFixed(0)} MiB`;

const text4000 = (seed: string): string => `${seed} A lighthouse on a cliff at dawn, waves below. `.repeat(80).slice(0, 4000);

describe('a state file past the longest string', () => {
  it('is compacted by the running simulator without an error answered, and restored after a restart', async () => {
    const file = join(dir, 'state.jsonl');
    const scenario = join(dir, 'large.yaml');
    // Nothing evicted (generations, their answers under an Idempotency-Key), nothing refused for the
    // rate; the journal's size as it was when the figures in docs/state.md were measured.
    writeFileSync(
      scenario,
      JSON.stringify({
        extends: 'fast',
        name: 'large-state',
        limits: { max_stored_generations: 1_000_000, max_idempotency_keys: 1_000_000, journal_size: 10_000 },
        rate_limits: { capacity: 1_000_000, refill_per_second: 1000 },
      }),
    );
    const first = await startCli(['--scenario', scenario, '--clock', 'manual', '--state', file, '--base-url', 'http://localhost:9999']);

    // Creates, eight at a time, until the state's snapshot is past the longest string.
    const negative = text4000('Not');
    let creates = 0;
    // About 19 KB of snapshot each (measured: the generation, its journal record, its answer under
    // its Idempotency-Key, which keeps a digest of the request rather than the request).
    const perCreate = 18_000;
    const target = Math.ceil(SNAPSHOT_BYTES / perCreate);
    const createOne = async (i: number): Promise<void> => {
      const body = JSON.stringify({ model: 'video-3.2', prompt: text4000(String(i)), negative_prompt: negative });
      const answer = await call(first.url, 'POST', '/v1/videos', { key: `sk_test_large${i % ACCOUNTS}`, raw: body, idempotencyKey: `create-${i}` });
      expect(answer.status).toBe(200);
    };
    const madeAt = performance.now();
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (creates < target) await createOne(creates++);
      }),
    );
    const madeMs = performance.now() - madeAt;
    const logged = statSync(file).size;

    // The file was compacted as it grew (the snapshot outweighs the lines it stands for). Now
    // requests that change nothing but the file, until the next compaction begins: it captures the
    // whole state. While it runs, requests go on, each timed.
    const earlier = (await stateOf(first)).compacted_at;
    const junk = 'x'.repeat(2 ** 20 - 64);
    for (let i = 0; (await stateOf(first)).compacting === undefined; i++) {
      expect((await call(first.url, 'POST', '/v1/videos', { key: 'sk_test_large0', raw: junk })).status).toBe(400);
      expect(i).toBeLessThan(3000);
    }
    const compactingAt = performance.now();
    const latencies: number[] = [];
    let state = await stateOf(first);
    for (let j = 0; state.compacting; j++) {
      const sent = performance.now();
      const polled = await call(first.url, 'GET', '/v1/videos?limit=1', { key: `sk_test_large${j % ACCOUNTS}` });
      latencies.push(performance.now() - sent);
      expect(polled.status).toBe(200);
      if (j % 10 === 0) state = await stateOf(first);
      // A liveness bound by count, not by time: a compaction that never ends fails here (a poll takes a millisecond or a few).
      expect(j, 'the compaction is still under way after 200,000 polls').toBeLessThan(200_000);
    }
    const compactedMs = performance.now() - compactingAt;
    state = await stateOf(first);
    expect(state.compaction_failed).toBeUndefined();
    expect(state.compacted_at).not.toBe(earlier);
    expect(first.child.exitCode).toBeNull();
    expect(first.stderr()).not.toMatch(/cannot compact|RangeError|ERR_STRING_TOO_LONG/);
    const compacted = statSync(file).size;
    expect(compacted).toBeGreaterThan(MAX_STRING_LENGTH);
    latencies.sort((a, b) => a - b);
    const maxLatency = latencies.at(-1) ?? 0;
    expect(maxLatency).toBeLessThan(LIVENESS_MS);

    const id = (JSON.parse((await call(first.url, 'GET', '/v1/videos?limit=1', { key: 'sk_test_large3' })).text) as { data: { id: string }[] }).data[0]?.id;
    // Status and body of each read (not their headers: a date, a request id).
    const reads = async (sim: Running) => {
      const read = async (path: string, key?: string) => {
        const { status, text } = await call(sim.url, 'GET', path, { key });
        return { status, text };
      };
      return {
        video: await read(`/v1/videos/${id}`, 'sk_test_large3'),
        list: await read('/v1/videos?limit=100', 'sk_test_large7'),
        generations: await read('/_sim/generations?limit=100'),
        journal: await read('/_sim/requests?limit=50&api_key=sk_test_large5'),
      };
    };
    const before = await reads(first);
    expect(await stop(first)).toBe(0);

    // A restart restores the file: its snapshot's rows, then the lines after it.
    const second = await startCli(['--state', file]);
    const restoredMs = second.startedMs;
    const peak = peakRssBytes(second.child.pid as number);
    const restoredCpu = cpuSeconds(second.child.pid as number);
    expect(second.stdout()).toMatch(/requests restored/);
    expect(await reads(second)).toEqual(before);
    const replayed = await call(second.url, 'POST', '/v1/videos', {
      key: `sk_test_large${7 % ACCOUNTS}`,
      body: { model: 'video-3.2', prompt: text4000('7'), negative_prompt: negative },
      idempotencyKey: 'create-7',
    });
    expect(replayed.status).toBe(200);
    expect(JSON.parse(replayed.text)).toMatchObject({ prompt: text4000('7') });
    expect(await stop(second)).toBe(0);

    process.stdout.write(
      [
        `state of ${creates} creates made in ${(madeMs / 1000).toFixed(1)} s (the file compacted as it grew: ${MiB(logged)}); compacted whole (snapshot and tail) ${MiB(compacted)} in ${(compactedMs / 1000).toFixed(1)} s`,
        `requests while compacting: ${latencies.length}, latency median ${latencies[Math.floor(latencies.length / 2)]?.toFixed(1)} ms, p99 ${latencies[Math.floor(latencies.length * 0.99)]?.toFixed(1)} ms, max ${maxLatency.toFixed(1)} ms`,
        `restart: restored in ${(restoredMs / 1000).toFixed(1)} s, ${restoredCpu.toFixed(1)} s of CPU (${((restoredCpu / compacted) * 100 * 2 ** 20).toFixed(2)} s of CPU per 100 MiB), peak RSS ${MiB(peak)}`,
        '',
      ].join('\n'),
    );
  });
});
