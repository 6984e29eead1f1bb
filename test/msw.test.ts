/**
 * `video-service-sim/msw` as a test suite uses it: the built browser bundle's handlers under
 * `msw/node`, answering byte for byte as a server does for the same scenario, seed, clock and
 * requests; the media; network faults as a page sees them; the control handle; the transcript,
 * replayed by `sim replay`; `close()`.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import FakeTimers from '@sinonjs/fake-timers';
import { setupServer } from 'msw/node';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { runReplay } from '../src/commands/replay.js';
import { createSimulator, SimulatorControlError, VerificationError, type SimulatorHandle } from '../src/index.js';
import type { createSimulatorHandlers as CreateHandlers, hostClockOf as HostClockOf } from '../src/msw/index.js';
import { PROMPT } from './helpers.js';

const BASE = 'https://api.example.test';
const KEY = 'sk_test_page';
const bundle = (await import(new URL('../dist/browser/msw.js', import.meta.url).href)) as { createSimulatorHandlers: typeof CreateHandlers; hostClockOf: typeof HostClockOf };
const { createSimulatorHandlers, hostClockOf } = bundle;

const server = setupServer();
beforeAll(() => server.listen({ onUnhandledFrame: 'bypass' }));
afterEach(() => server.resetHandlers());
afterAll(() => server.close());

const dir = mkdtempSync(join(tmpdir(), 'sim-msw-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const sims: SimulatorHandle[] = [];
afterAll(async () => {
  for (const sim of sims) await sim.close();
});

/** A server with the same options, listening; its answers are compared with the handlers'. */
async function twinServer(options: { scenario?: string; seed?: number } = {}): Promise<string> {
  const sim = createSimulator({ scenario: options.scenario ?? 'fast', seed: options.seed ?? 7, clock: 'manual', baseUrl: BASE, log: () => {} });
  sims.push(sim);
  await sim.listen(0);
  return `http://127.0.0.1:${sim.port}`;
}

interface Step {
  method: string;
  path: string;
  key?: string | null;
  body?: unknown;
  raw?: string;
  headers?: Record<string, string>;
}

/** What a client sees of an answer that the service documents: status, body, and these headers. */
const DOCUMENTED = ['content-type', 'retry-after', 'x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset', 'x-request-id', 'idempotent-replayed'];

async function send(origin: string, step: Step): Promise<{ status: number; body: string; headers: Record<string, string | null> }> {
  const headers: Record<string, string> = { ...step.headers };
  if (step.key !== null) headers.Authorization = `Bearer ${step.key ?? KEY}`;
  const body = step.raw ?? (step.body === undefined ? undefined : JSON.stringify(step.body));
  if (body !== undefined && headers['Content-Type'] === undefined) headers['Content-Type'] = 'application/json';
  const res = await fetch(`${origin}${step.path}`, { method: step.method, headers, body });
  return { status: res.status, body: await res.text(), headers: Object.fromEntries(DOCUMENTED.map((h) => [h, res.headers.get(h)])) };
}

describe('the same answers as a server', () => {
  it('a client session, errors included, byte for byte: status, body and the documented headers', async () => {
    const origin = await twinServer();
    const sim = createSimulatorHandlers({ baseUrl: BASE, scenario: 'fast', seed: 7, clock: 'manual' });
    server.use(...sim.handlers);
    const steps: Step[] = [
      { method: 'POST', path: '/v1/videos', body: { model: 'video-3.2', prompt: PROMPT, duration_seconds: 4 } },
      { method: 'POST', path: '/v1/videos', body: { model: 'video-3.2', prompt: PROMPT }, headers: { 'Idempotency-Key': 'k-1' } },
      { method: 'POST', path: '/v1/videos', body: { model: 'video-3.2', prompt: PROMPT }, headers: { 'Idempotency-Key': 'k-1' } },
      { method: 'POST', path: '/v1/videos', body: { model: 'video-9', prompt: PROMPT } },
      { method: 'POST', path: '/v1/videos', raw: '{"model":' },
      { method: 'POST', path: '/v1/videos', body: { model: 'video-3.2', prompt: PROMPT, colour: 'red' } },
      { method: 'GET', path: '/v1/videos?limit=1' },
      { method: 'GET', path: '/v1/videos?limit=0' },
      { method: 'GET', path: '/v1/videos', key: null },
      { method: 'GET', path: '/v1/videos', key: 'sk_test_revoked' },
      { method: 'GET', path: '/v1/nothing' },
      { method: 'POST', path: '/v1/images', body: { prompt: PROMPT, aspect_ratio: '1:1' } },
      { method: 'POST', path: '/_sim/clock/advance', key: null, body: { seconds: 10 } },
      { method: 'GET', path: '/v1/videos' },
      { method: 'GET', path: '/_sim/generations', key: null },
      { method: 'GET', path: '/_sim/requests', key: null },
      { method: 'GET', path: `/_sim/report?api_key=${KEY}`, key: null },
    ];
    for (const step of steps) {
      const [page, served] = [await send(BASE, step), await send(origin, step)];
      expect(page, `${step.method} ${step.path}`).toEqual(served);
    }
    const created = JSON.parse((await send(BASE, { method: 'POST', path: '/v1/videos', body: { model: 'video-3.2', prompt: PROMPT } })).body) as { id: string };
    await send(origin, { method: 'POST', path: '/v1/videos', body: { model: 'video-3.2', prompt: PROMPT } });
    const cancel: Step = { method: 'DELETE', path: `/v1/videos/${created.id}` };
    expect(await send(BASE, cancel)).toEqual(await send(origin, cancel));
  });

  it("serves a video's file and thumbnail with the server's bytes and ETag, ranges included", async () => {
    const origin = await twinServer();
    const sim = createSimulatorHandlers({ baseUrl: BASE, scenario: 'fast', seed: 7, clock: 'manual' });
    server.use(...sim.handlers);
    const create: Step = { method: 'POST', path: '/v1/videos', body: { model: 'video-3.2', prompt: PROMPT, duration_seconds: 4 } };
    const { id } = JSON.parse((await send(BASE, create)).body) as { id: string };
    await send(origin, create);
    await sim.control.clock.advance(10);
    await send(origin, { method: 'POST', path: '/_sim/clock/advance', key: null, body: { seconds: 10 } });
    const video = JSON.parse((await send(BASE, { method: 'GET', path: `/v1/videos/${id}` })).body) as { status: string; output: { url: string; thumbnail_url: string } };
    expect(video.status).toBe('succeeded');
    expect(video.output.url).toBe(`${BASE}/cdn/videos/${id}.mp4`);
    for (const url of [video.output.url, video.output.thumbnail_url]) {
      const path = new URL(url).pathname;
      for (const headers of [{}, { Range: 'bytes=0-99' }] as Record<string, string>[]) {
        const page = await fetch(url, { headers });
        const served = await fetch(`${origin}${path}`, { headers });
        expect(page.status).toBe(served.status);
        for (const h of ['content-type', 'etag', 'content-length', 'content-range', 'accept-ranges', 'cache-control']) expect(page.headers.get(h), h).toBe(served.headers.get(h));
        expect(Buffer.from(await page.arrayBuffer()).equals(Buffer.from(await served.arrayBuffer()))).toBe(true);
      }
    }
    const missing = await fetch(`${BASE}/cdn/videos/vid_nope.mp4`);
    expect(missing.status).toBe(404);
  });
});

describe('network faults as a page sees them', () => {
  it('reset: fetch rejects with a TypeError; phase after: the create was carried out', async () => {
    const sim = createSimulatorHandlers({ baseUrl: BASE, scenario: 'fast', clock: 'manual' });
    server.use(...sim.handlers);
    await sim.control.faults.queue({ path: '/v1/videos', method: 'POST', network: 'reset', phase: 'after', api_key: KEY });
    await expect(send(BASE, { method: 'POST', path: '/v1/videos', body: { model: 'video-3.2', prompt: PROMPT } })).rejects.toThrow(TypeError);
    expect((await sim.control.generations.list({ apiKey: KEY })).data).toHaveLength(1);
  });

  it("gateway: the gateway's page with its status", async () => {
    const sim = createSimulatorHandlers({ baseUrl: BASE, scenario: 'fast', clock: 'manual' });
    server.use(...sim.handlers);
    await sim.control.faults.queue({ path: '/v1/videos', method: 'GET', network: 'gateway', gateway_status: 504, api_key: KEY });
    const res = await fetch(`${BASE}/v1/videos`, { headers: { Authorization: `Bearer ${KEY}` } });
    expect(res.status).toBe(504);
    expect(res.headers.get('content-type')).toBe('text/html');
    expect(await res.text()).toContain('504 Gateway Timeout');
  });

  it('on a host clock the test moves (hostClock): latency, then hang_ms, end when it has moved by them, and the realtime clock follows its now()', async () => {
    const clock = FakeTimers.createClock(Date.parse('2030-01-01T00:00:00.000Z'));
    const sim = createSimulatorHandlers({ baseUrl: BASE, scenario: 'fast', clock: 'realtime', hostClock: hostClockOf(clock) });
    server.use(...sim.handlers);
    expect((await sim.control.clock.get()).now).toBe('2030-01-01T00:00:00.000Z');
    await sim.control.faults.queue({ path: '/v1/videos', method: 'GET', latency_ms: 3000, api_key: KEY });
    await sim.control.faults.queue({ path: '/v1/videos', method: 'GET', network: 'hang', hang_ms: 5000, api_key: KEY });
    let delayedDone = false;
    const delayed = send(BASE, { method: 'GET', path: '/v1/videos' }).finally(() => (delayedDone = true));
    await untilTimers(clock, 1);
    await clock.tickAsync(2999);
    expect(delayedDone).toBe(false);
    await clock.tickAsync(1);
    expect((await delayed).status).toBe(200);
    let hungDone = false;
    const hung = send(BASE, { method: 'GET', path: '/v1/videos' }).finally(() => (hungDone = true));
    hung.catch(() => {});
    await untilTimers(clock, 1);
    await clock.tickAsync(4999);
    expect(hungDone).toBe(false);
    await clock.tickAsync(1);
    await expect(hung).rejects.toThrow(TypeError);
    expect((await sim.control.clock.get()).now).toBe('2030-01-01T00:00:08.000Z');
  });
});

/** Resolves once `clock` holds `n` timers (the handlers have begun to wait on it), after real turns of the event loop. */
async function untilTimers(clock: { countTimers(): number }, n: number): Promise<void> {
  for (let turn = 0; clock.countTimers() < n; turn++) {
    if (turn > 1000) throw new Error(`the clock holds ${clock.countTimers()} timers, not ${n}`);
    await new Promise((resolve) => setImmediate(resolve));
  }
}

describe('the handle', () => {
  it('control answers as SimulatorControl does, and refuses with a SimulatorControlError', async () => {
    const sim = createSimulatorHandlers({ baseUrl: BASE, scenario: 'fast', clock: 'manual' });
    expect((await sim.control.clock.advance(5)).now).toBe('2026-01-01T00:00:05.000Z');
    await expect(sim.control.generations.get('vid_nope')).rejects.toBeInstanceOf(SimulatorControlError);
    await expect(sim.control.generations.get('vid_nope')).rejects.toMatchObject({ status: 404 });
  });

  it('transcript() replays identically with sim replay', async () => {
    const sim = createSimulatorHandlers({ baseUrl: BASE, scenario: 'fast', seed: 3, clock: 'manual' });
    server.use(...sim.handlers);
    await send(BASE, { method: 'POST', path: '/v1/videos', body: { model: 'video-3.2', prompt: PROMPT }, headers: { 'Idempotency-Key': 'k' } });
    await sim.control.clock.advance(10);
    await send(BASE, { method: 'GET', path: '/v1/videos' });
    const file = join(dir, 'page.jsonl');
    writeFileSync(file, sim.transcript());
    let out = '';
    expect(await runReplay(file, {}, { out: (t) => (out += t), err: (t) => (out += t) })).toBe(0);
    expect(out).toBe('replayed 3 requests: 3 identical\n');
  });

  it('verifies and waits as a server does: control and /_sim alike; a wait held until the request arrives; close() ends held waits with 503', async () => {
    const sim = createSimulatorHandlers({ baseUrl: BASE, scenario: 'fast', clock: 'manual' });
    server.use(...sim.handlers);
    const waiting = sim.control.waitForRequest({ method: 'POST', path: '/v1/videos', body: { prompt: PROMPT } });
    await send(BASE, { method: 'POST', path: '/v1/videos', body: { model: 'video-3.2', prompt: PROMPT }, headers: { 'Idempotency-Key': 'k' } });
    expect((await waiting).map((e) => [e.seq, e.idempotency_key])).toEqual([[1, 'k']]);
    expect(await sim.control.verify({ method: 'POST', idempotency_key: true }, { exactly: 1 })).toMatchObject({ verified: true, count: 1 });
    const refused = await sim.control.verify({ method: 'DELETE' }).catch((e: unknown) => e);
    // The bundle's own copy of the class: instanceof holds across copies.
    expect(refused).toBeInstanceOf(VerificationError);
    expect((refused as VerificationError).message).toBe(
      ['Expected at least 1 request matching {"method":"DELETE"}; found 0.', 'Closest requests in the journal:', '  #1 POST /v1/videos (sk_test_page) -> 200, seen queued; differs: method'].join('\n'),
    );
    const overHandlers = await send(BASE, { method: 'POST', path: '/_sim/verify', key: null, body: { request: { seen: 'queued' } } });
    expect(JSON.parse(overHandlers.body)).toMatchObject({ verified: true, count: 1 });
    // Held waits, through the control and through the handlers, end when the handlers close.
    const held = sim.control.waitForRequest({ method: 'DELETE' }, { timeoutMs: 30_000 }).catch((e: unknown) => e);
    const heldOverHandlers = send(BASE, { method: 'POST', path: '/_sim/requests/wait', key: null, body: { request: { method: 'DELETE' }, timeout_ms: 30_000 } });
    await new Promise((resolve) => setTimeout(resolve, 50));
    sim.close();
    expect(await held).toMatchObject({ status: 503, code: 'simulator_closed' });
    expect((await heldOverHandlers).status).toBe(503);
  });

  it('close(): the handlers answer 503 simulator_closed', async () => {
    const sim = createSimulatorHandlers({ baseUrl: BASE, scenario: 'fast', clock: 'manual' });
    server.use(...sim.handlers);
    sim.close();
    const res = await send(BASE, { method: 'GET', path: '/v1/videos' });
    expect(res.status).toBe(503);
    expect(JSON.parse(res.body)).toMatchObject({ error: { type: 'api_error', code: 'simulator_closed' } });
  });

  it.each([
    [{ baseUrl: 'api.example.test' }, /baseUrl must be an http\(s\) URL/],
    [{ baseUrl: '/api' }, /baseUrl must be an http\(s\) URL \(a path such as \/api needs a page/],
    [{ baseUrl: BASE, clock: 'fast' }, /clock must be 'manual' or 'realtime'/],
    [{ baseUrl: BASE, seed: 1.5 }, /seed must be an integer/],
  ])('a bad option throws a RangeError naming it: %j', (options, message) => {
    expect(() => createSimulatorHandlers(options as Parameters<typeof createSimulatorHandlers>[0])).toThrow(RangeError);
    expect(() => createSimulatorHandlers(options as Parameters<typeof createSimulatorHandlers>[0])).toThrow(message);
  });

  it('a scenario as YAML text or a value extends a bundled one; a bad one names its problems in ready, a misspelled name at once', async () => {
    const text = createSimulatorHandlers({ baseUrl: BASE, scenario: 'extends: fast\nseed: 11\n', clock: 'manual' });
    await text.ready;
    expect((await text.control.health()).seed).toBe(11);
    const value = createSimulatorHandlers({ baseUrl: BASE, scenario: { extends: 'flaky', seed: 12 } });
    expect((await value.control.health()).seed).toBe(12);
    const bad = createSimulatorHandlers({ baseUrl: BASE, scenario: 'extends: fast\nbogus: 1\n' });
    await expect(bad.ready).rejects.toThrow(/bogus: unknown key/);
    await expect(bad.control.health()).rejects.toThrow(/bogus: unknown key/);
    expect(() => createSimulatorHandlers({ baseUrl: BASE, scenario: 'fsat' })).toThrow(/did you mean fast\?/);
  });

  it('the bundle loads no Node built-in, evaluates no code, and weighs at most 150 KB gzipped (without msw and the clips)', () => {
    const read = (file: string): string => readFileSync(new URL(`../dist/browser/${file}`, import.meta.url), 'utf8');
    const entry = read('msw.js');
    // What the entry loads with it: the chunks it imports statically (the clips and the scenario parser load on demand).
    const shared = [...entry.matchAll(/(?:from|import)\s*"\.\/(chunks\/[^"]+)"/g)].map((m) => read(m[1] as string));
    for (const code of [entry, ...shared]) {
      expect(code).not.toMatch(/from\s*"node:|require\("node:|new Function|\beval\(/);
      expect(new Set([...code.matchAll(/from\s*"([^".][^"]*)"/g)].map((m) => m[1]))).toEqual(new Set(code === entry ? ['msw'] : []));
    }
    const gzipped = [entry, ...shared].reduce((sum, code) => sum + gzipSync(code, { level: 9 }).length, 0);
    expect(gzipped).toBeLessThanOrEqual(150 * 1024);
  });
});
