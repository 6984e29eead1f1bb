/**
 * The state file on a volume that fills up: a tmpfs of a few MiB, mounted for each test (this
 * needs root, as CI has; each is unmounted after the file's tests). Nothing acknowledged is lost,
 * and the file is kept again once there is room.
 *
 * - A start on a full disk says which file it could not write, and leaves no lock file behind to
 *   hold up the next start.
 * - An append that finds no room waits in memory, in order, and the answer of its request with it;
 *   once there is room the lines are written and the answers sent. A `kill -9` then, or while it
 *   waits, loses nothing that was answered; a stop while it waits sends no answer for it.
 * - A compaction is not begun without room for its new file and the appends meanwhile, and one
 *   under way gives way to an append that finds no room; either way the file is still appended
 *   to, and compaction is tried again once there is room (on the host's clock, injected here).
 */
import { spawn, execFileSync, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { once } from 'node:events';
import { closeSync, existsSync, mkdtempSync, openSync, readFileSync, readdirSync, rmSync, rmdirSync, statSync, writeFileSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { isoTime } from '../src/core/time/clock.js';
import { createSimulator, type SimulatorHandle } from '../src/index.js';
import { COMPACT_RETRY_FIRST_MS } from '../src/persistence/compaction.js';
import type { StateStatus } from '../src/persistence/stateStore.js';
import { answerInProcess } from './helpers.js';
import { CLI, childProcesses, cleanEnv, runCli } from './processes.js';
import { parseStateText } from './stateFiles.js';

const children = childProcesses();
const MiB = 1024 * 1024;
const KEY = 'sk_test_fulldisk';
/** The longest prompt: a create's line is longer than a page of the disk, so each one needs room. */
const LONG_PROMPT = 'A lighthouse on a cliff at dawn, waves crashing below. '.padEnd(4000, 'x');

const mounts: string[] = [];
afterAll(() => {
  for (const dir of mounts) {
    // Lazily: a file a failed test left open must not keep the mount.
    execFileSync('umount', ['-l', dir]);
    rmdirSync(dir);
  }
});

/** A tmpfs of `size` (as mount takes it: `2m`), mounted for this file's tests. */
function smallDisk(size: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'sim-small-disk-'));
  execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', dir]);
  mounts.push(dir);
  return dir;
}

/** Fills the volume of `dir` to its last byte, as another program would: the file that does it. */
function fill(dir: string): string {
  const path = join(dir, 'filler');
  const fd = openSync(path, 'a');
  try {
    for (const size of [MiB, 64 * 1024, 4096, 1]) {
      const chunk = Buffer.alloc(size, 0x61);
      try {
        for (;;) writeSync(fd, chunk);
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'ENOSPC') throw e;
      }
    }
  } finally {
    closeSync(fd);
  }
  return path;
}

describe('a start on a full disk', () => {
  it('says which file it could not write, exits 2, and leaves no lock file to hold up the next start', async () => {
    const disk = smallDisk('1m');
    const filler = fill(disk);
    const file = join(disk, 'state.jsonl');
    expect(await runCli(['--port', '0', '--state', file])).toEqual({
      status: 2,
      stdout: '',
      stderr: `sim: cannot write the state file ${file}: cannot write the lock file ${file}.lock (ENOSPC)\n`,
    });
    const transcript = join(disk, 'transcript.jsonl');
    expect(await runCli(['--port', '0', '--record', transcript])).toEqual({
      status: 2,
      stdout: '',
      stderr: `sim: cannot write the transcript ${transcript}: cannot write the lock file ${transcript}.lock (ENOSPC)\n`,
    });
    expect(readdirSync(disk)).toEqual(['filler']);
    // Room again: the next start takes the file at once.
    rmSync(filler);
    const sim = await startSim(file);
    expect((await stateOf(sim.url)).file).toBe(file);
    sim.child.kill('SIGTERM');
    await sim.exited;
    expect(readdirSync(disk)).toEqual(['state.jsonl']);
  });
});

interface Running {
  url: string;
  child: ChildProcessWithoutNullStreams;
  stderr: () => string;
  /** The exit status and signal, once it has exited. */
  exited: Promise<[number | null, NodeJS.Signals | null]>;
}

/** `sim --state FILE` (scenario fast, manual clock) on a free port, once it listens. */
async function startSim(file: string): Promise<Running> {
  const child = spawn(process.execPath, [CLI, '--port', '0', '--scenario', 'fast', '--clock', 'manual', '--state', file], { env: cleanEnv() });
  children.add(child);
  let stdout = '';
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
  await new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      if (/^state: /m.test(stdout)) resolve();
    });
    child.once('exit', (code) => reject(new Error(`sim exited ${code}: ${stderr}`)));
  });
  return { url: `http://127.0.0.1:${/:(\d+) /.exec(stdout)?.[1]}`, child, stderr: () => stderr, exited };
}

const headers = { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' };
const create = (url: string): Promise<Response> =>
  fetch(`${url}/v1/videos`, { method: 'POST', headers, body: JSON.stringify({ model: 'video-3.2', prompt: LONG_PROMPT }) });
const idOf = async (res: Response): Promise<string> => ((await res.json()) as { id: string }).id;
const stateOf = async (url: string): Promise<StateStatus> => ((await (await fetch(`${url}/_sim/health`)).json()) as { state: StateStatus }).state;

async function createOk(url: string): Promise<string> {
  const res = await create(url);
  expect(res.status).toBe(200);
  return idOf(res);
}

/** Every generation of the account, in creation order. */
async function listIds(url: string): Promise<string[]> {
  const res = await fetch(`${url}/v1/videos?limit=100`, { headers });
  return ((await res.json()) as { data: { id: string }[] }).data.map((video) => video.id);
}

/**
 * Sends a create and waits until the simulator has handled it (its line is counted, written or
 * waiting), without waiting for its answer: `answer`, whenever it comes.
 */
async function createHandled(url: string): Promise<{ answer: Promise<Response> }> {
  const before = (await stateOf(url)).lines;
  const answer = create(url);
  // Caught here so that a connection cut before it is looked at is not an unhandled rejection.
  answer.catch(() => {});
  for (;;) {
    const state = await stateOf(url);
    if (state.lines !== before) break;
    // A state no longer kept counts no more lines.
    expect(state).not.toHaveProperty('write_failed');
  }
  return { answer };
}

describe('an append that finds no room', () => {
  it('waits with its answer, in order, until there is room; a kill -9 then or meanwhile loses nothing answered', { timeout: 60_000 }, async () => {
    const disk = smallDisk('2m');
    const file = join(disk, 'state.jsonl');
    let sim = await startSim(file);
    const acknowledged: string[] = [];
    for (let i = 0; i < 3; i++) acknowledged.push(await createOk(sim.url));

    let filler = fill(disk);
    // Each create's line is longer than a page: the first one after the disk filled finds no room.
    const first = (await createHandled(sim.url)).answer;
    const blocked = await stateOf(sim.url);
    expect(blocked).toMatchObject({ write_blocked: 'ENOSPC' });
    expect(blocked.write_blocked_since).toMatch(/^\d{4}-\d\d-\d\dT/);
    expect(blocked).not.toHaveProperty('write_failed');
    // Two more wait behind it, in their order; a read is answered meanwhile.
    const waiting = [first, (await createHandled(sim.url)).answer, (await createHandled(sim.url)).answer];
    expect((await fetch(`${sim.url}/v1/videos?limit=1`, { headers })).status).toBe(200);
    expect(await Promise.race([first.then(() => 'answered'), stateOf(sim.url).then(() => 'waiting')])).toBe('waiting');
    expect(sim.stderr()).toContain(`state: cannot write the state file ${file} (ENOSPC): the lines of the requests from now on wait in memory`);

    // Room again: the lines are written (tried again every second), and the answers sent.
    rmSync(filler);
    for (const res of await Promise.all(waiting)) {
      expect(res.status).toBe(200);
      acknowledged.push(await idOf(res));
    }
    const written = await stateOf(sim.url);
    expect(written).not.toHaveProperty('write_blocked');
    expect(written).not.toHaveProperty('write_failed');
    expect(sim.stderr()).toContain(`state: the state file ${file} is written again: the lines that waited for room are in it`);
    acknowledged.push(await createOk(sim.url));

    sim.child.kill('SIGKILL');
    await sim.exited;
    sim = await startSim(file);
    expect(await listIds(sim.url)).toEqual(acknowledged);

    // A kill -9 while a line waits: its request was never answered, and every answered one is kept.
    filler = fill(disk);
    const cut = (await createHandled(sim.url)).answer;
    sim.child.kill('SIGKILL');
    await sim.exited;
    await expect(cut).rejects.toThrow();
    rmSync(filler);
    sim = await startSim(file);
    expect(await listIds(sim.url)).toEqual(acknowledged);

    // A stop while a line waits (POST /_sim/shutdown, answered at once): the waiting answer is never
    // sent, and the stop says so.
    filler = fill(disk);
    const stopped = (await createHandled(sim.url)).answer;
    expect((await fetch(`${sim.url}/_sim/shutdown`, { method: 'POST' })).status).toBe(200);
    expect((await sim.exited)[0]).toBe(0);
    await expect(stopped).rejects.toThrow();
    expect(sim.stderr()).toContain(
      `request lines could not be written to ${file} (ENOSPC) before the simulator stopped: they are not kept, and the requests among them that change state were not answered`,
    );
    rmSync(filler);
    sim = await startSim(file);
    expect(await listIds(sim.url)).toEqual(acknowledged);
    sim.child.kill('SIGTERM');
    await sim.exited;
  });
});

const START = 1_790_000_000_000;

/** A simulator with its state on `file`, its host clock in the test's hands, answering in-process. */
function bulkSim(file: string): { sim: SimulatorHandle; wall: { now: number }; logs: string[] } {
  const wall = { now: START };
  const logs: string[] = [];
  const sim = createSimulator({ scenario: 'fast', clock: 'manual', now: () => wall.now, log: (line) => logs.push(line), state: file });
  return { sim, wall, logs };
}

let creates = 0;
/** A create of the longest prompts under an Idempotency-Key: a snapshot holds it about two and a half times. */
function createOne(sim: SimulatorHandle) {
  const answer = answerInProcess(sim, 'POST', '/v1/videos', {
    key: KEY,
    idempotencyKey: `k${++creates}`,
    body: { model: 'video-3.2', prompt: LONG_PROMPT, negative_prompt: LONG_PROMPT },
  });
  expect(answer.status).toBe(200);
  return answer;
}

const stateIn = (sim: SimulatorHandle): StateStatus =>
  (JSON.parse(sim.app.answer({ method: 'GET', path: '/_sim/health', query: '', headers: {}, body: null }).body) as { state: StateStatus }).state;

/** Creates until the file crosses its bound and a compaction starts (about 4 MiB of lines). */
function createUntilCompacting(sim: SimulatorHandle): void {
  for (let i = 0; stateIn(sim).compacting === undefined; i++) {
    expect(i).toBeLessThan(2000);
    createOne(sim);
  }
}

/** Waits, a turn of the event loop at a time, until no compaction is under way and no line waits. */
async function settled(sim: SimulatorHandle): Promise<StateStatus> {
  for (let turns = 0; ; turns++) {
    const state = stateIn(sim);
    if (state.compacting === undefined && state.write_blocked === undefined) return state;
    expect(turns).toBeLessThan(100_000);
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
}

const coreState = (sim: SimulatorHandle): string => JSON.stringify(sim.core.toState());

/** Restores `file` in a simulator of its own: the same state as `live`. */
async function expectRestored(file: string, live: string): Promise<void> {
  const restored = createSimulator({ clock: 'manual', state: file, now: () => START, log: () => {} });
  expect(coreState(restored)).toBe(live);
  await restored.close();
}

describe('a compaction on a volume short of room', () => {
  it('is not begun without room for its new file and the appends meanwhile; the file is appended to, and compacted once there is room', async () => {
    const disk = smallDisk('24m');
    // About 6.5 MiB left once the file crosses its bound (4 MiB): short of the new file and the room for appends.
    const filler = join(disk, 'filler');
    writeFileSync(filler, Buffer.alloc(13.5 * MiB, 0x61));
    const file = join(disk, 'state.jsonl');
    const { sim, wall, logs } = bulkSim(file);
    createUntilCompacting(sim);
    const waiting = await settled(sim);
    expect(waiting).toMatchObject({ compacted_at: null, compaction_retry_at: isoTime(START + COMPACT_RETRY_FIRST_MS) });
    const { free_bytes: free, needed_bytes: needed } = waiting.compaction_no_room as { free_bytes: number; needed_bytes: number };
    expect(free).toBeLessThan(needed);
    expect(free).toBeGreaterThan(5 * MiB);
    for (const field of ['compaction_failed', 'write_failed', 'write_blocked']) expect(waiting).not.toHaveProperty(field);
    // No temporary file was begun.
    expect(readdirSync(disk).sort()).toEqual(['filler', 'state.jsonl', 'state.jsonl.lock']);
    expect(logs).toContain(
      `state: not compacting ${file} for now: its volume has ${free} bytes free, and a compaction needs about ${needed} ` +
        '(the new file, and room left for the appends meanwhile); it is still appended to, and compaction is tried again once there is room (checked every 10 s)',
    );

    // Still appended to; not tried again before its time, though the file is past its bound.
    const size = statSync(file).size;
    wall.now += COMPACT_RETRY_FIRST_MS - 1;
    for (let i = 0; i < 5; i++) createOne(sim);
    expect(statSync(file).size).toBeGreaterThan(size);
    expect(stateIn(sim)).not.toHaveProperty('compacting');

    // Room again: the next append past the retry time compacts the file.
    rmSync(filler);
    wall.now += 1;
    createOne(sim);
    expect(stateIn(sim).compacting).toBe(true);
    const compacted = await settled(sim);
    expect(compacted.compacted_at).toBe(isoTime(wall.now));
    for (const field of ['compaction_no_room', 'compaction_retry_at', 'write_failed']) expect(compacted).not.toHaveProperty(field);
    expect(parseStateText(readFileSync(file, 'utf8')).snapshot).toMatchObject({ format: 2 });
    const live = coreState(sim);
    await sim.close();
    await expectRestored(file, live);
  });

  it('under way gives way to an append that finds no room: its temporary file goes, the append is written, and it is tried again once there is room', async () => {
    const disk = smallDisk('24m');
    const file = join(disk, 'state.jsonl');
    const { sim, wall } = bulkSim(file);
    createUntilCompacting(sim);
    const temporary = `${file}.${process.pid}.1.tmp`;
    // Until part of the new file is written (a slice at a time, between turns of the event loop).
    for (let turns = 0; !(existsSync(temporary) && statSync(temporary).size >= 2 * MiB); turns++) {
      expect(stateIn(sim).compacting).toBe(true);
      expect(turns).toBeLessThan(100_000);
      await new Promise(setImmediate);
    }
    // Another program takes the rest of the volume: the next line finds no room but what the compaction holds.
    const filler = fill(disk);
    const created = createOne(sim);
    const state = await settled(sim);
    for (const field of ['write_failed', 'write_blocked', 'compaction_failed']) expect(state).not.toHaveProperty(field);
    expect(state).toMatchObject({ compacted_at: null, compaction_retry_at: isoTime(START + COMPACT_RETRY_FIRST_MS) });
    expect(state.compaction_no_room?.needed_bytes).toBeGreaterThan(state.compaction_no_room?.free_bytes as number);
    expect(existsSync(temporary)).toBe(false);
    const lines = parseStateText(readFileSync(file, 'utf8')).entries.flatMap((entry) => ('line' in entry ? [entry.line] : []));
    expect(lines.at(-1)?.id).toBe(created.headers['X-Request-Id']);

    rmSync(filler);
    wall.now += COMPACT_RETRY_FIRST_MS;
    createOne(sim);
    const compacted = await settled(sim);
    expect(compacted.compacted_at).toBe(isoTime(wall.now));
    expect(compacted).not.toHaveProperty('compaction_no_room');
    const live = coreState(sim);
    await sim.close();
    await expectRestored(file, live);
  });
});
