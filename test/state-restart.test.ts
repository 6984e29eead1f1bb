/**
 * Durable state (`--state FILE`), on the command line: a restart clients do not notice. Each test
 * starts `node dist/cli.js`, talks to it over HTTP, stops it (SIGTERM, or kill -9), starts another
 * on the same file, and checks what the clients see.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { once } from 'node:events';
import { appendFileSync, copyFileSync, existsSync, readFileSync, watch, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createSimulator } from '../src/index.js';
import { ROW_KINDS } from '../src/persistence/snapshot.js';
import { PROMPT, VALID_VIDEO, call, createVideoAt, queueFaultAt } from './helpers.js';
import { CLI, runCli } from './processes.js';
import { tempStateFiles } from './stateFiles.js';

const { dir, stateFile } = tempStateFiles('sim-state-test-');

const KEY = 'sk_test_state';
/** Fixed addresses: bodies that name media are the same whatever port a run listens on. */
const BASE = ['--base-url', 'http://localhost:9999'];

interface Running {
  child: ChildProcessWithoutNullStreams;
  url: string;
  stdout: string;
  stderr: () => string;
  stop: () => Promise<void>;
  kill9: () => Promise<void>;
}

const running = new Set<Running>();
afterEach(async () => {
  await Promise.all([...running].map((r) => r.kill9()));
});

/** `sim --port 0 ...args`, once it listens. */
async function startCli(args: string[]): Promise<Running> {
  const child = spawn(process.execPath, [CLI, '--port', '0', ...args]);
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  let stdout = '';
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  await new Promise<void>((resolve, reject) => {
    const onData = (chunk: Buffer): void => {
      stdout += chunk.toString();
      if (/^state: /m.test(stdout)) {
        child.stdout.off('data', onData);
        resolve();
      }
    };
    child.stdout.on('data', onData);
    child.once('exit', (code) => reject(new Error(`sim exited ${code}: ${stderr}`)));
  });
  const port = Number(/:(\d+) /.exec(stdout)?.[1]);
  const run: Running = {
    child,
    url: `http://127.0.0.1:${port}`,
    stdout,
    stderr: () => stderr,
    stop: () => {
      running.delete(run);
      child.kill('SIGTERM');
      return exited;
    },
    kill9: () => {
      running.delete(run);
      child.kill('SIGKILL');
      return exited;
    },
  };
  running.add(run);
  return run;
}

const idOf = (answer: { text: string }): string => (JSON.parse(answer.text) as { id: string }).id;
const advance = (sim: Running, seconds: number) => call(sim.url, 'POST', '/_sim/clock/advance', { body: { seconds } });

describe('sim --state FILE, manual clock', () => {
  it('restarts where it stopped: the same GET bodies, a new id for the next create, a stored Idempotency-Key replayed', async () => {
    const file = stateFile();
    const first = await startCli(['--scenario', 'fast', '--clock', 'manual', '--state', file, ...BASE]);
    expect(first.stdout).toContain(`state: ${file} (new)`);
    const keyed = await createVideoAt(first.url, {}, KEY, 'create-once');
    const other = await createVideoAt(first.url, {}, KEY);
    await advance(first, 4);
    const image = await call(first.url, 'POST', '/v1/images', { key: KEY, body: { prompt: PROMPT } });
    const before = {
      list: (await call(first.url, 'GET', '/v1/videos', { key: KEY })).text,
      one: (await call(first.url, 'GET', `/v1/videos/${idOf(keyed)}`, { key: KEY })).text,
      generations: (await call(first.url, 'GET', '/_sim/generations')).text,
      clock: (await call(first.url, 'GET', `/_sim/clock?api_key=${KEY}`)).text,
    };
    await first.stop();

    const second = await startCli(['--state', file, ...BASE]);
    expect(second.stdout).toContain('sim listening on');
    expect(second.stdout).toContain('(scenario fast, seed 42, clock manual)');
    expect(second.stdout).toMatch(new RegExp(`state: ${file} \\(\\d+ requests restored\\)`));
    expect({
      list: (await call(second.url, 'GET', '/v1/videos', { key: KEY })).text,
      one: (await call(second.url, 'GET', `/v1/videos/${idOf(keyed)}`, { key: KEY })).text,
      generations: (await call(second.url, 'GET', '/_sim/generations')).text,
      clock: (await call(second.url, 'GET', `/_sim/clock?api_key=${KEY}`)).text,
    }).toEqual(before);

    const replayed = await createVideoAt(second.url, {}, KEY, 'create-once');
    expect(replayed.headers.get('idempotent-replayed')).toBe('true');
    expect(replayed.text).toBe(keyed.text);
    const next = await createVideoAt(second.url, {}, KEY);
    expect(next.status).toBe(200);
    expect([idOf(keyed), idOf(other), idOf(image)]).not.toContain(idOf(next));
    // The image survives too, and its media file is served.
    expect((await call(second.url, 'GET', `/cdn/images/${idOf(image)}.png`)).status).toBe(200);
    await second.stop();
  });

  it('gives out no request id twice across a restart (control reads included)', async () => {
    const file = stateFile();
    const first = await startCli(['--scenario', 'fast', '--clock', 'manual', '--state', file]);
    await advance(first, 1);
    for (let i = 0; i < 3; i++) await call(first.url, 'GET', '/_sim/health');
    const lastBefore = (await call(first.url, 'GET', '/_sim/health')).headers.get('x-request-id');
    const createdBefore = (await createVideoAt(first.url, {}, KEY)).headers.get('x-request-id');
    await first.stop();

    const second = await startCli(['--state', file]);
    expect(lastBefore).toBe('req_0000000005');
    expect((await call(second.url, 'GET', '/_sim/health')).headers.get('x-request-id')).toBe('req_0000000006');
    const createdAfter = (await createVideoAt(second.url, {}, KEY)).headers.get('x-request-id');
    expect(createdBefore).toMatch(/_000001$/);
    expect(createdAfter).toBe(createdBefore?.replace(/_000001$/, '_000002'));
    await second.stop();
  });
});

describe('--state FILE, realtime clock', () => {
  it('counts the time the process was down: a generation due during the downtime has resolved after the restart', async () => {
    const file = stateFile();
    const scenario = join(dir, 'queue-60s.yaml');
    writeFileSync(scenario, 'extends: fast\nname: queue-60s\nstages:\n  queue:\n    duration: { type: fixed, value: 60 }\n');
    // The wall clock both simulators follow: the test moves it.
    let wallMs = Date.parse('2030-01-01T00:00:00Z');
    const now = (): number => wallMs;
    const speed = 100;
    const first = createSimulator({ scenario, clock: 'realtime', speed, state: file, now, baseUrl: 'http://localhost:9999', log: () => {} });
    await first.listen(0);
    const firstUrl = `http://127.0.0.1:${first.port}`;
    const created = await fetch(`${firstUrl}/v1/videos`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${KEY}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ model: 'video-3.2', prompt: PROMPT }),
    });
    const video = (await created.json()) as { id: string; status: string; created_at: string };
    expect(video.status).toBe('queued');
    await first.close();
    // Down for 1 s of wall time: 100 virtual seconds, past the 60 s the queue alone lasts.
    wallMs += 1000;

    const second = createSimulator({ state: file, now, baseUrl: 'http://localhost:9999', log: () => {} });
    await second.listen(0);
    const secondUrl = `http://127.0.0.1:${second.port}`;
    const after = (await (await fetch(`${secondUrl}/v1/videos/${video.id}`, { headers: { Authorization: `Bearer ${KEY}` } })).json()) as { status: string };
    expect(after.status).toBe('succeeded');
    const health = second.health();
    expect(health.clock).toMatchObject({ mode: 'realtime', speed });
    expect(Date.parse(health.clock.now) - Date.parse(video.created_at)).toBe(1000 * speed);
    await second.close();
  });
});

describe('sim --state FILE after kill -9', () => {
  it('restores every create whose answer was received, in a burst cut by kill -9', async () => {
    const file = stateFile();
    const first = await startCli(['--scenario', 'fast', '--clock', 'manual', '--state', file, ...BASE]);
    const received: string[] = [];
    let stopped = false;
    const worker = async (n: number): Promise<void> => {
      while (!stopped) {
        try {
          const answer = await call(first.url, 'POST', '/v1/videos', { key: `sk_test_burst${n}`, body: VALID_VIDEO });
          if (answer.status === 200) received.push(`${n} ${idOf(answer)}`);
        } catch {
          return; // the process is gone
        }
      }
    };
    const workers = [0, 1, 2, 3, 4, 5, 6, 7].map(worker);
    while (received.length < 80) await new Promise((resolve) => setTimeout(resolve, 5));
    await first.kill9();
    stopped = true;
    await Promise.all(workers);

    const second = await startCli(['--state', file, ...BASE]);
    for (const entry of received) {
      const [n, id] = entry.split(' ') as [string, string];
      expect((await call(second.url, 'GET', `/v1/videos/${id}`, { key: `sk_test_burst${n}` })).status, entry).toBe(200);
    }
    await second.stop();
  });

  it('drops a torn last line with a warning, and restores the rest', async () => {
    const file = stateFile();
    const first = await startCli(['--scenario', 'fast', '--clock', 'manual', '--state', file, ...BASE]);
    const created = await createVideoAt(first.url, {}, KEY);
    await first.stop();
    const lines = readFileSync(file, 'utf8').split('\n').length - 1;
    appendFileSync(file, '{"seq":9,"now":"2026-01-01T00:00:00.000Z","at":null,"wall":17');

    const second = await startCli(['--state', file, ...BASE]);
    expect(second.stderr()).toContain(`state: ${file}: line ${lines + 1} was cut short (the simulator was stopped while writing it): dropped`);
    expect((await call(second.url, 'GET', `/v1/videos/${idOf(created)}`, { key: KEY })).status).toBe(200);
    await createVideoAt(second.url, {}, KEY);
    await second.stop();
    // The file was cut back to whole lines before the next one was written.
    const text = readFileSync(file, 'utf8');
    expect(text.endsWith('\n')).toBe(true);
    const after = text.split('\n').slice(0, -1).map((l) => JSON.parse(l) as { seq?: number; method?: string });
    expect(after.filter((l) => l.method === 'POST').map((l) => l.seq)).toEqual([1, 3]);
  });
});

describe('a state file handed over', () => {
  it('restores the same state in a simulator on another port, from a copy, while the first still runs', async () => {
    const file = stateFile();
    const first = await startCli(['--scenario', 'fast', '--clock', 'manual', '--state', file]);
    const created = await createVideoAt(first.url, {}, KEY);
    await advance(first, 2);
    const download = await call(first.url, 'GET', '/_sim/state');
    expect(download.headers.get('content-disposition')).toBe('attachment; filename="state.jsonl"');
    expectCompacted(download.text);
    const copy = join(dir, 'copied.jsonl');
    writeFileSync(copy, download.text);
    const before = (await call(first.url, 'GET', `/v1/videos/${idOf(created)}`, { key: KEY })).text;

    const second = await startCli(['--state', copy]);
    expect(second.url).not.toBe(first.url);
    const port = (url: string) => new URL(url).port;
    const after = (await call(second.url, 'GET', `/v1/videos/${idOf(created)}`, { key: KEY })).text;
    expect(after).toBe(before.replaceAll(`localhost:${port(first.url)}`, `localhost:${port(second.url)}`));
    await Promise.all([first.stop(), second.stop()]);
  });

  it('refuses a file of another seed: exit 2, saying which and what to do', async () => {
    const file = stateFile();
    const first = await startCli(['--scenario', 'fast', '--clock', 'manual', '--state', file]);
    await createVideoAt(first.url, {}, KEY);
    await first.stop();
    const refused = await runCli(['--port', '0', '--seed', '7', '--state', file]);
    expect(refused.status).toBe(2);
    expect(refused.stderr).toBe(
      `sim: ${file} holds the state of scenario 'fast' with seed 42 (clock manual), but --seed 7 asks for another seed. ` +
        'Leave out --seed to continue that state, or start it with another --state file (or remove this one, or POST /_sim/reset to begin a new run in it).\n',
    );
    const otherScenario = await runCli(['--port', '0', '--scenario', 'flaky', '--state', file]);
    expect(otherScenario.status).toBe(2);
    expect(otherScenario.stderr).toContain("--scenario flaky asks for scenario 'flaky'");
  });

  it('refuses a file another running simulator holds: exit 1, naming its pid', async () => {
    const file = stateFile();
    const first = await startCli(['--scenario', 'fast', '--clock', 'manual', '--state', file]);
    const refused = await runCli(['--port', '0', '--state', file]);
    expect(refused.status).toBe(1);
    expect(refused.stderr).toContain(`sim: cannot keep the state: ${file} is held by another running simulator (pid ${first.child.pid}`);
    await first.stop();
  });

  it("restores a copy of a stopped simulator's file (the lock stays with the original)", async () => {
    const file = stateFile();
    const first = await startCli(['--scenario', 'fast', '--clock', 'manual', '--state', file]);
    await createVideoAt(first.url, {}, KEY);
    await first.stop();
    const copy = join(dir, 'copied-stopped.jsonl');
    copyFileSync(file, copy);
    const second = await startCli(['--state', copy]);
    expect(second.stdout).toContain(`state: ${copy} (1 request restored)`);
    await second.stop();
  });
});

describe('resets and the state file', () => {
  it('a global reset empties it (a new run); a per-account reset is kept', async () => {
    const file = stateFile();
    const first = await startCli(['--scenario', 'fast', '--clock', 'manual', '--state', file, ...BASE]);
    const kept = await createVideoAt(first.url, {}, 'sk_test_kept');
    const dropped = await createVideoAt(first.url, {}, 'sk_test_dropped');
    expect((await call(first.url, 'POST', '/_sim/reset', { body: { api_key: 'sk_test_dropped' } })).status).toBe(200);
    await first.stop();

    const second = await startCli(['--state', file, ...BASE]);
    expect((await call(second.url, 'GET', `/v1/videos/${idOf(kept)}`, { key: 'sk_test_kept' })).status).toBe(200);
    expect((await call(second.url, 'GET', `/v1/videos/${idOf(dropped)}`, { key: 'sk_test_dropped' })).status).toBe(404);
    expect((await call(second.url, 'POST', '/_sim/reset', { body: {} })).status).toBe(200);
    const health = JSON.parse((await call(second.url, 'GET', '/_sim/health')).text) as { state: { lines: number } };
    expect(health.state.lines).toBe(0);
    expect(readFileSync(file, 'utf8').trimEnd().split('\n')).toHaveLength(1);
    await second.stop();

    const third = await startCli(['--state', file, ...BASE]);
    expect(third.stdout).toContain(`state: ${file} (0 requests restored)`);
    expect((await call(third.url, 'GET', `/v1/videos/${idOf(kept)}`, { key: 'sk_test_kept' })).status).toBe(404);
    await third.stop();
  });
});

/** Every read a client or a test makes of the state, as answered (addresses fixed by BASE). */
async function readsOf(sim: Pick<Running, 'url'>, ids: string[]): Promise<Record<string, string>> {
  const out: Record<string, string> = {
    list: (await call(sim.url, 'GET', '/v1/videos?limit=100', { key: KEY })).text,
    generations: (await call(sim.url, 'GET', '/_sim/generations?limit=100')).text,
    journal: (await call(sim.url, 'GET', '/_sim/requests?limit=1000')).text,
    report: (await call(sim.url, 'GET', `/_sim/report?api_key=${KEY}`)).text,
    faults: (await call(sim.url, 'GET', '/_sim/faults')).text,
    clock: (await call(sim.url, 'GET', `/_sim/clock?api_key=${KEY}`)).text,
  };
  for (const id of ids) out[id] = (await call(sim.url, 'GET', `/v1/videos/${id}`, { key: KEY })).text;
  return out;
}

/**
 * The reads of a state as restored from `file` (which the reads append to), for the answers a
 * restarted `sim` must give: the same restore, in process, is the reference.
 */
async function readsRestoredFrom(file: string, ids: string[]): Promise<Record<string, string>> {
  const reference = createSimulator({ state: file, baseUrl: BASE[1], log: () => {} });
  try {
    await reference.listen(0);
    return await readsOf({ url: `http://127.0.0.1:${reference.port}` }, ids);
  } finally {
    await reference.close();
  }
}

/** A state with a bit of everything: creates (one under a key), an image, polls, an advance, a queued fault. */
async function someState(sim: Running): Promise<{ keyed: { text: string }; ids: string[] }> {
  const keyed = await createVideoAt(sim.url, {}, KEY, 'create-once');
  const ids = [idOf(keyed)];
  for (let i = 0; i < 5; i++) {
    ids.push(idOf(await createVideoAt(sim.url, {}, KEY)));
    await call(sim.url, 'GET', `/v1/videos/${ids[i]}`, { key: KEY });
  }
  await call(sim.url, 'POST', '/v1/images', { key: KEY, body: { prompt: PROMPT }, idempotencyKey: 'image-once' });
  await advance(sim, 3);
  await queueFaultAt(sim.url, { path: '/v1/videos', method: 'POST', api_key: KEY, status: 500 });
  return { keyed, ids };
}

/** A compacted state file: its header and a snapshot (its head, its rows, its end), and no request line. */
function expectCompacted(text: string): void {
  const kinds = text.split('\n').map((line) => Object.keys(line === '' ? {} : JSON.parse(line))[0]);
  expect(kinds.slice(0, 2)).toEqual(['state', 'snapshot']);
  expect(kinds.slice(-2)).toEqual(['snapshot_end', undefined]);
  expect(kinds.slice(2, -2).filter((kind) => !ROW_KINDS.has(kind as string))).toEqual([]);
}

describe('sim state compact FILE', () => {
  it('rewrites the file as its header and a snapshot (exit 0, the sizes), and a restart on it is invisible to clients', async () => {
    const file = stateFile();
    const first = await startCli(['--scenario', 'fast', '--clock', 'manual', '--state', file, ...BASE]);
    const { keyed, ids } = await someState(first);
    for (let i = 0; i < 200; i++) await call(first.url, 'GET', `/v1/videos/${ids[0]}`, { key: KEY });
    // (On demand it is written whatever its size: here, 214 requests and their 214 journal entries.)
    await first.stop();
    const logged = readFileSync(file, 'utf8');
    const before = await readsRestoredFrom(file, ids);
    writeFileSync(file, logged);

    const compactStarted = Date.now();
    const compacted = await runCli(['state', 'compact', file]);
    const compactEnded = Date.now();
    expect(compacted.stderr).toBe('');
    expect(compacted.status).toBe(0);
    const after = readFileSync(file, 'utf8');
    expect(compacted.stdout).toBe(
      `${file}: compacted from ${Buffer.byteLength(logged).toLocaleString('en-US')} bytes to ${Buffer.byteLength(after).toLocaleString('en-US')} bytes (a snapshot of 214 requests)\n`,
    );
    expectCompacted(after);

    const second = await startCli(['--state', file, ...BASE]);
    expect(second.stdout).toContain(`state: ${file} (214 requests restored)`);
    const health = JSON.parse((await call(second.url, 'GET', '/_sim/health')).text) as { state: { compacted_at: string; lines: number } };
    expect(health.state.lines).toBe(0);
    // Stamped while `sim state compact` ran, on its host clock (a second either way: that clock and this process's Date need not agree to the millisecond).
    expect(Date.parse(health.state.compacted_at)).toBeGreaterThanOrEqual(compactStarted - 1000);
    expect(Date.parse(health.state.compacted_at)).toBeLessThanOrEqual(compactEnded + 1000);
    expect(await readsOf(second, ids)).toEqual(before);
    // The queued fault is still there; then a stored key replays, and the next create gets a new id.
    expect((await call(second.url, 'POST', '/v1/videos', { key: KEY, body: VALID_VIDEO })).status).toBe(500);
    const replayed = await createVideoAt(second.url, {}, KEY, 'create-once');
    expect(replayed.headers.get('idempotent-replayed')).toBe('true');
    expect(replayed.text).toBe(keyed.text);
    const next = await createVideoAt(second.url, {}, KEY);
    expect(ids).not.toContain(idOf(next));
    await second.stop();
  });

  it('restores there from a copy on another port while the first still runs', async () => {
    const file = stateFile();
    const first = await startCli(['--scenario', 'fast', '--clock', 'manual', '--state', file, ...BASE]);
    const { ids } = await someState(first);
    await first.stop();
    const log = join(dir, 'log-copy.jsonl');
    copyFileSync(file, log);
    const before = await readsRestoredFrom(log, ids);
    expect((await runCli(['state', 'compact', file])).status).toBe(0);
    const again = await startCli(['--state', file, ...BASE]);
    const copy = join(dir, 'compacted-copy.jsonl');
    copyFileSync(file, copy);
    const other = await startCli(['--state', copy, ...BASE]);
    expect(other.url).not.toBe(again.url);
    expect(await readsOf(other, ids)).toEqual(before);
    await Promise.all([again.stop(), other.stop()]);
  });

  it('refuses a file a running simulator holds (exit 1, naming its pid) and one it cannot read (exit 2)', async () => {
    const file = stateFile();
    const running = await startCli(['--scenario', 'fast', '--clock', 'manual', '--state', file]);
    await createVideoAt(running.url, {}, KEY);
    const held = await runCli(['state', 'compact', file]);
    expect(held.status).toBe(1);
    expect(held.stderr).toContain(`sim: cannot compact: ${file} is held by another running simulator (pid ${running.child.pid}`);
    await running.stop();

    const missing = await runCli(['state', 'compact', join(dir, 'missing.jsonl')]);
    expect(missing.status).toBe(2);
    expect(missing.stderr).toBe(`sim: ${join(dir, 'missing.jsonl')} holds no state to compact (no such file, or an empty one)\n`);
    const notState = join(dir, 'not-state.jsonl');
    writeFileSync(notState, '{"transcript":1}\n');
    const refused = await runCli(['state', 'compact', notState]);
    expect(refused.status).toBe(2);
    expect(refused.stderr).toContain('this is a transcript (written by --record), not a state file');
    const directory = await runCli(['state', 'compact', dir]);
    expect(directory.status).toBe(2);
    expect(directory.stderr).toContain(`${dir} is not a regular file`);
  });

  it('leaves a snapshot of a format this version does not read to the version that wrote it: exit 2, saying what to do', async () => {
    const file = stateFile();
    const first = await startCli(['--scenario', 'fast', '--clock', 'manual', '--state', file]);
    await createVideoAt(first.url, {}, KEY);
    await first.stop();
    expect((await runCli(['state', 'compact', file])).status).toBe(0);
    writeFileSync(file, readFileSync(file, 'utf8').replace('{"snapshot":{"format":2,"version":"0.1.0"', '{"snapshot":{"format":3,"version":"0.9.0"'));
    const refused = await runCli(['--port', '0', '--state', file]);
    expect(refused.status).toBe(2);
    expect(refused.stderr).toBe(
      `sim: ${file} is not a state file this simulator can restore: line 2: a snapshot in format 3 (compacted by version 0.9.0 of the simulator); ` +
        'this version reads snapshot formats 1 and 2. A snapshot is tied to its format: open the file with version 0.9.0 (npx video-service-sim@0.9.0 --state FILE), ' +
        'or start with a new state file. Choose another --state file, or remove this one to start anew.\n',
    );
    expect((await runCli(['state', 'compact', file])).status).toBe(2);
  });

  it('killed with kill -9 while it writes, leaves a file that restores the same state', async () => {
    const file = stateFile();
    // A state big enough that writing its snapshot takes a while (about 6 MB): 3,000 creates whose
    // prompts are 1,300 characters long.
    const maker = createSimulator({ scenario: 'fast', clock: 'manual', state: file, baseUrl: 'http://localhost:9999', log: () => {} });
    const padding = ' and the rain goes on'.repeat(60);
    for (let i = 0; i < 3_000; i++) {
      maker.app.answer({
        method: 'POST',
        path: '/v1/videos',
        query: '',
        headers: { authorization: `Bearer sk_test_kill${i % 40}`, 'content-type': 'application/json' },
        body: Buffer.from(JSON.stringify({ model: 'video-3.2', prompt: `${PROMPT}${padding} ${i}` })),
      });
    }
    const expected = JSON.stringify(maker.core.toState());
    await maker.close();
    const original = readFileSync(file);
    expect(original.length).toBeGreaterThan(4_000_000);

    const child = spawn(process.execPath, [CLI, 'state', 'compact', file], { stdio: 'ignore' });
    const temporary = `${file}.${child.pid}.1.tmp`;
    // Killed as soon as its temporary file appears: while it writes it, or just after the rename.
    const watcher = watch(dir, (_event, name) => {
      if (name === basename(temporary)) child.kill('SIGKILL');
    });
    const [, signal] = (await once(child, 'exit')) as [number | null, string | null];
    watcher.close();
    expect(signal).toBe('SIGKILL');
    const after = readFileSync(file);
    // The old file, whole, or the new one, whole: never a mix.
    if (!after.equals(original)) expectCompacted(after.toString());
    const restored = createSimulator({ state: file, log: () => {} });
    expect(JSON.stringify(restored.core.toState())).toBe(expected);
    await restored.listen(0);
    // The file is taken again: what the killed compaction left beside it is gone.
    expect(existsSync(temporary)).toBe(false);
    await restored.close();
    // Thousands of creates made, restored and compacted: seconds of work on a loaded machine.
  }, 60_000);
});
