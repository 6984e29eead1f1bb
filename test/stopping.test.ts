/**
 * Stopping drains: on `close()`, `POST /_sim/shutdown`, SIGTERM or SIGINT the server stops
 * accepting, every request it already received gets its answer (injected latency still being
 * waited out is cut short), idle keep-alive connections do not hold it open, and the `sim` process
 * exits 0 once drained. No test here measures time: a drain that waited for its grace, or for the
 * latency, would outlast the test's timeout, as the grace given is far longer than it.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { connect } from 'node:net';
import { fileURLToPath } from 'node:url';
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { createSimulator } from '../src/index.js';
import { bearer, createVideo, journalOf, makeSim, PROMPT, queueFault } from './helpers.js';
import { CLI, childProcesses } from './processes.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const LATENCY = { path: '/v1/videos', method: 'POST', latency_ms: 60_000, times: 3 };

/** `n` creates (three by default), sent together to `url`; each resolves to its status and body (or the error's code). */
function threeCreates(url: string, n = 3): Promise<{ status: number | string; body?: { id?: string } }>[] {
  return Array.from({ length: n }, () =>
    fetch(`${url}/v1/videos`, {
      method: 'POST',
      headers: { ...bearer(), 'Content-Type': 'application/json' },
      body: JSON.stringify({ model: 'video-3.2', prompt: PROMPT }),
    }).then(
      async (res) => ({ status: res.status, body: (await res.json()) as { id?: string } }),
      (e: { cause?: { code?: string } }) => ({ status: e.cause?.code ?? 'failed' }),
    ),
  );
}

/** A `sleep` that never ends by itself, and a promise that resolves once `n` waits have begun. */
function endlessSleeps(n: number): { sleep: () => Promise<void>; begun: Promise<void> } {
  let count = 0;
  let all!: () => void;
  const begun = new Promise<void>((resolve) => (all = resolve));
  return {
    begun,
    sleep: () => {
      if (++count === n) all();
      return new Promise<void>(() => {});
    },
  };
}

describe('close() of an in-process simulator', () => {
  it('sends every answer still waiting out injected latency at once, and is not held by an idle connection', async () => {
    const waits = endlessSleeps(3);
    // A grace the test's timeout cannot outlast: close() resolves only if nothing waits for it.
    const sim = makeSim({ sleep: waits.sleep, drainGraceMs: 600_000 });
    // The test suite's second validator compiles on first use: not while the clock below runs.
    expect((await createVideo(sim, {}, 'sk_test_warm_up')).status).toBe(200);
    await queueFault(sim, LATENCY);
    const url = await sim.listen(0);
    // A keep-alive connection that has gone idle.
    expect((await fetch(`${url}/_sim/health`)).status).toBe(200);
    const creates = threeCreates(url);
    await waits.begun;

    await sim.close();

    // The three waiting creates, not the idle connection's earlier answer.
    expect(sim.stopped).toEqual({ drained: 3 });
    const answers = await Promise.all(creates);
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200]);
    expect(new Set(answers.map((a) => a.body?.id)).size).toBe(3);
    expect((await journalOf(sim, 'sk_test_alice')).map((r) => `${r.method} ${r.status}`)).toEqual(['POST 200', 'POST 200', 'POST 200']);
    // No new connection is accepted.
    await expect(fetch(`${url}/_sim/health`)).rejects.toThrow();
  });

  it('is not held by a connection that has sent nothing yet (a spare a client opened ahead of a request): it is closed', async () => {
    // A grace the test's timeout cannot outlast: close() resolves only if nothing waits for it.
    const sim = makeSim({ drainGraceMs: 600_000 });
    await sim.listen(0);
    const spare = connect(sim.port as number, '127.0.0.1');
    await new Promise((resolve) => spare.once('connect', resolve));
    const closed = new Promise((resolve) => spare.once('close', resolve));
    let received = '';
    spare.on('data', (chunk: Buffer) => (received += chunk.toString()));

    await sim.close();

    await closed;
    expect(received).toBe('');
    expect(sim.stopped).toEqual({ drained: 0 });
  });

  it('sends a waiting answer with Connection: close, then closes its connection', async () => {
    const waits = endlessSleeps(1);
    const sim = makeSim({ sleep: waits.sleep });
    await queueFault(sim, { ...LATENCY, times: 1 });
    await sim.listen(0);
    const socket = connect(sim.port as number, '127.0.0.1');
    let text = '';
    socket.on('data', (chunk: Buffer) => (text += chunk.toString()));
    const closed = new Promise((resolve) => socket.once('close', resolve));
    const body = JSON.stringify({ model: 'video-3.2', prompt: PROMPT });
    socket.write(
      `POST /v1/videos HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer sk_test_alice\r\n` +
        `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
    );
    await waits.begun;
    await sim.close();
    await closed;
    expect(text).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    expect(text).toMatch(/\r\nConnection: close\r\n/i);
  });

  it('ends with the close: listening again, answers wait out injected latency again until the next close', async () => {
    const waits = endlessSleeps(1);
    const sim = makeSim({ sleep: waits.sleep });
    await sim.listen(0);
    await sim.close();
    const url = await sim.listen(0);
    await queueFault(sim, { ...LATENCY, times: 1 });
    let answered = false;
    // One create: the one the queued latency holds (more would race the close to reach the server).
    const create = threeCreates(url, 1)[0]!.then((a) => ((answered = true), a));
    await waits.begun;
    await new Promise((resolve) => setImmediate(resolve));
    expect(answered).toBe(false);
    await sim.close();
    expect((await create).status).toBe(200);
  });

  it('cuts a connection still mid-request once the grace is over, with nothing answered or journaled', async () => {
    // Not behind the test suite's validator, which would read the body first (and report the cut).
    const sim = createSimulator({ scenario: 'fast', clock: 'manual', drainGraceMs: 50 });
    await sim.listen(0);
    const socket = connect(sim.port as number, '127.0.0.1');
    await new Promise((resolve) => socket.once('connect', resolve));
    socket.on('error', () => {});
    const closed = new Promise((resolve) => socket.once('close', resolve));
    socket.write('POST /v1/videos HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"mod');
    let received = '';
    socket.on('data', (chunk: Buffer) => (received += chunk.toString()));
    await sim.close();
    await closed;
    expect(received).toBe('');
    expect((await request(sim.app).get('/_sim/requests')).body.data).toEqual([]);
  });

  it('POST /_sim/shutdown drains the same way, then calls onShutdown', async () => {
    const waits = endlessSleeps(3);
    let shutDown!: () => void;
    const stopped = new Promise<void>((resolve) => (shutDown = resolve));
    const sim = makeSim({ sleep: waits.sleep, onShutdown: () => shutDown() });
    await queueFault(sim, LATENCY);
    const url = await sim.listen(0);
    const creates = threeCreates(url);
    await waits.begun;
    const res = await fetch(`${url}/_sim/shutdown`, { method: 'POST' });
    expect(await res.json()).toEqual({ status: 'shutting_down' });
    await stopped;
    expect((await Promise.all(creates)).map((a) => a.status)).toEqual([200, 200, 200]);
    // The app itself still answers (supertest), without the latency it no longer waits for.
    const after = await request(sim.app).get('/_sim/requests').query({ api_key: 'sk_test_alice' });
    expect(after.body.data).toHaveLength(3);
  });
});

// ---------------------------------------------------------------------------------------------
// The `sim` process.

const children = childProcesses();

/** Starts `sim --scenario fast --clock manual --port 0`; resolves once it listens. */
function startSim(): Promise<{ child: ChildProcess; url: string; stderr: () => Promise<string> }> {
  const env = { ...process.env };
  for (const name of Object.keys(env)) if (name === 'PORT' || name.startsWith('SIM_')) delete env[name];
  const child = spawn(process.execPath, [CLI, '--scenario', 'fast', '--clock', 'manual', '--port', '0'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  children.add(child);
  let err = '';
  child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
  // All it wrote to stderr, once its output has closed.
  const stderr = new Promise<string>((resolve) => child.once('close', () => resolve(err)));
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const port = /listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(out)?.[1];
      if (port) resolve({ child, url: `http://127.0.0.1:${port}`, stderr: () => stderr });
    });
    child.once('exit', (code) => reject(new Error(`exited ${code} before listening`)));
  });
}

function exit(child: ChildProcess): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  return new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
}

/** Polls the journal (a real process runs in real time) until it holds `n` requests. */
async function untilJournaled(url: string, n: number): Promise<void> {
  for (const deadline = Date.now() + 5000; Date.now() < deadline; ) {
    const res = await fetch(`${url}/_sim/requests`);
    if (((await res.json()) as { data: unknown[] }).data.length >= n) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`the journal did not reach ${n} requests within 5 s`);
}

describe('the sim process, stopping', () => {
  const stops: [string, (sim: { child: ChildProcess; url: string }) => unknown][] = [
    ['SIGTERM', (sim) => sim.child.kill('SIGTERM')],
    ['SIGINT', (sim) => sim.child.kill('SIGINT')],
    ['POST /_sim/shutdown', (sim) => fetch(`${sim.url}/_sim/shutdown`, { method: 'POST' }).then((r) => r.json())],
  ];
  for (const [how, stop] of stops) {
    it(`on ${how}, answers every request waiting out a 60 s injected latency, says so in one line and exits 0`, async () => {
      const sim = await startSim();
      const fault = await fetch(`${sim.url}/_sim/faults`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(LATENCY) });
      expect(fault.status).toBe(200);
      // An idle keep-alive connection must not hold the exit.
      expect((await fetch(`${sim.url}/_sim/health`)).status).toBe(200);
      const creates = threeCreates(sim.url);
      await untilJournaled(sim.url, 3);

      const exited = exit(sim.child);
      await stop(sim);
      const { code, signal } = await exited;

      expect(signal).toBeNull();
      expect(code).toBe(0);
      const answers = await Promise.all(creates);
      expect(answers.map((a) => a.status)).toEqual([200, 200, 200]);
      expect(answers.every((a) => typeof a.body?.id === 'string')).toBe(true);
      expect(await sim.stderr()).toBe(`sim: stopped (${how}): drained 3 requests in progress\n`);
    });
  }

  // That the hang is let go at once, not waited out nor cut at the drain's grace, is held in-process
  // on a host clock that never moves (test/network-faults.test.ts, "a stop closes held connections
  // at once"): the process stops through the same close(). Here, what the process shows of it.
  it('on SIGTERM during a network hang of 600 s, closes the held connection with nothing sent and exits 0, drained', async () => {
    const sim = await startSim();
    const hang = { path: '/v1/videos', method: 'POST', network: 'hang', hang_ms: 600_000 };
    const fault = await fetch(`${sim.url}/_sim/faults`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(hang) });
    expect(fault.status).toBe(200);
    const [held] = threeCreates(sim.url, 1);
    await untilJournaled(sim.url, 1);
    expect(((await (await fetch(`${sim.url}/_sim/health`)).json()) as { network: { hung: number } }).network.hung).toBe(1);

    const exited = exit(sim.child);
    sim.child.kill('SIGTERM');
    const { code } = await exited;
    expect(code).toBe(0);
    // The drain ended (no request was cut at the exit's deadline); the hang was no request answered.
    expect(await sim.stderr()).toBe('sim: stopped (SIGTERM): drained 0 requests in progress\n');
    // The client got no answer: the connection closed with nothing sent.
    expect((await held)?.status).toBe('UND_ERR_SOCKET');
  });
});
