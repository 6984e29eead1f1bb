/**
 * Network faults in what the simulator records: a transcript keeps each lost answer (kind, phase,
 * bytes of the body sent) and `sim replay` reproduces and compares it, in-process and against a
 * running target; a state file keeps an `after` request's effects across a restart.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runReplay } from '../src/commands/replay.js';
import { createSimulator, loadScenario } from '../src/index.js';
import { replayTranscript } from '../src/transcript/replay.js';
import { PROMPT, fastWith, makeSim, queueFault } from './helpers.js';
import { eventually, rawRequest } from './rawHttp.js';
import { parseTranscript } from './transcripts.js';

const dir = mkdtempSync(join(tmpdir(), 'sim-network-recording-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const KEY = 'sk_test_rec';
const BASE = 'http://localhost:8080';
const transcriptFile = join(dir, 'transcript.jsonl');

function send(url: string, method: string, path: string, body?: Record<string, unknown>, key?: string) {
  return rawRequest(url, {
    method,
    path,
    headers: {
      authorization: `Bearer ${KEY}`,
      connection: 'close',
      ...(body && { 'content-type': 'application/json' }),
      ...(key && { 'idempotency-key': key }),
    },
    ...(body && { body: JSON.stringify(body) }),
  });
}

const CREATE = { model: 'video-3.2', prompt: PROMPT };

/** Records a client's run over real sockets that meets every kind of network fault, in both phases. */
beforeAll(async () => {
  const sim = makeSim({ scenario: 'fast', clock: 'manual', record: transcriptFile, baseUrl: BASE });
  await sim.listen(0);
  // The answers carry the base URL given; the requests go to the port.
  const url = `http://127.0.0.1:${sim.port}`;
  try {
    await queueFault(sim, { path: '/v1/videos', method: 'POST', network: 'reset', phase: 'after' });
    await send(url, 'POST', '/v1/videos', CREATE, 'k1');
    await send(url, 'POST', '/v1/videos', CREATE, 'k1');
    await queueFault(sim, { path: '/v1/videos', method: 'POST', network: 'close', phase: 'before' });
    await send(url, 'POST', '/v1/videos', CREATE);
    await queueFault(sim, { path: '/v1/videos', method: 'POST', network: 'truncate', truncate_bytes: 12 });
    await send(url, 'POST', '/v1/videos', CREATE);
    await queueFault(sim, { path: '/v1/videos', method: 'GET', network: 'gateway', gateway_status: 504, phase: 'after' });
    await send(url, 'GET', '/v1/videos');
    await queueFault(sim, { path: '/v1/videos', method: 'GET', network: 'slow', bytes_per_second: 10_485_760 });
    await send(url, 'GET', '/v1/videos');
    await queueFault(sim, { path: '/v1/images', network: 'hang', hang_ms: 600_000 });
    const held = eventually('the hang held', async () => (await request(sim.app).get('/_sim/health')).body.network.hung, (n) => n === 1);
    await rawRequest(url, {
      method: 'POST',
      path: '/v1/images',
      headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ prompt: PROMPT }),
      giveUp: held,
    });
    await request(sim.app).post('/_sim/clock/advance').send({ seconds: 30 });
    await send(url, 'GET', '/v1/videos');
  } finally {
    await sim.close();
  }
});

describe('a transcript with network faults', () => {
  it('records each lost answer: the service status (null when it never got the request), kind, phase and body bytes sent', () => {
    const { lines } = parseTranscript(readFileSync(transcriptFile, 'utf8'));
    const service = lines.filter((l) => l.path.startsWith('/v1'));
    expect(service.map((l) => [l.method, l.path, l.status, l.network])).toEqual([
      ['POST', '/v1/videos', 200, { kind: 'reset', phase: 'after', body_bytes: 0 }],
      ['POST', '/v1/videos', 200, undefined],
      ['POST', '/v1/videos', null, { kind: 'close', phase: 'before', body_bytes: 0 }],
      ['POST', '/v1/videos', 200, { kind: 'truncate', phase: 'after', body_bytes: 12 }],
      ['GET', '/v1/videos', 200, { kind: 'gateway', phase: 'after', body_bytes: expect.any(Number), gateway_status: 504 }],
      ['GET', '/v1/videos', 200, { kind: 'slow', phase: 'after', body_bytes: expect.any(Number) }],
      ['POST', '/v1/images', null, { kind: 'hang', phase: 'before', body_bytes: 0 }],
      ['GET', '/v1/videos', 200, undefined],
    ]);
    // The lost create's answer is the one its retry with the key replays.
    expect(service[1]?.response).toBe(service[0]?.response);
    expect(service[2]?.response).toBe('');
  });

  it('replays identical in-process: the same kinds, phases and bytes sent', () => {
    const transcript = parseTranscript(readFileSync(transcriptFile, 'utf8'));
    const report = replayTranscript(transcript, { loadScenario });
    expect(report.differences).toEqual([]);
    expect(report.identical).toBe(transcript.lines.length);
  });

  it('a replay that meets another network fault than the recorded one reports it', async () => {
    const text = readFileSync(transcriptFile, 'utf8').replace('"network":{"kind":"reset","phase":"after"', '"network":{"kind":"close","phase":"after"');
    const tampered = join(dir, 'tampered.jsonl');
    writeFileSync(tampered, text);
    let out = '';
    const status = await runReplay(tampered, {}, { out: (t) => (out += t), err: () => {} });
    expect(status).toBe(1);
    expect(out).toMatch(/seq \d+ POST \/v1\/videos: status 200; bodies identical; network fault close \(after, 0 body bytes\) recorded, reset \(after, 0 body bytes\) replayed\n/);
  });

  it('replays identical against a running target, which meets the same faults on its sockets', async () => {
    const target = createSimulator({ scenario: 'fast', clock: 'manual', baseUrl: BASE, log: () => {} });
    await target.listen(0);
    let out = '';
    let err = '';
    try {
      const status = await runReplay(transcriptFile, { target: `http://127.0.0.1:${target.port}` }, { out: (t) => (out += t), err: (t) => (err += t) });
      expect({ status, out, err }).toEqual({ status: 0, out: expect.stringMatching(/: \d+ identical\n$/), err: '' });
      expect(target.core.held.held).toBe(0);
    } finally {
      await target.close();
    }
  });
});

describe('a state file with network faults', () => {
  it('a restart keeps what a request lost after taking effect did, and nothing of one lost before', async () => {
    const file = join(dir, 'state.jsonl');
    const first = createSimulator({ scenario: 'fast', clock: 'manual', state: file, log: () => {} });
    const url = await first.listen(0);
    await queueFault(first, { path: '/v1/videos', method: 'POST', network: 'reset', phase: 'after' });
    expect((await send(url, 'POST', '/v1/videos', CREATE, 'kept')).end).toBe('reset');
    await queueFault(first, { path: '/v1/videos', method: 'POST', network: 'reset', phase: 'before' });
    expect((await send(url, 'POST', '/v1/videos', { ...CREATE, prompt: 'lost before' })).end).toBe('reset');
    const before = (await request(first.app).get('/_sim/generations').query({ api_key: KEY })).body.data as { id: string; prompt: string }[];
    expect(before).toHaveLength(1);
    await first.close();

    const second = createSimulator({ state: file, log: () => {} });
    try {
      expect(second.stateRestored).toBeGreaterThan(0);
      const after = (await request(second.app).get('/_sim/generations').query({ api_key: KEY })).body.data as { id: string; prompt: string }[];
      expect(after.map((g) => [g.id, g.prompt])).toEqual(before.map((g) => [g.id, g.prompt]));
      // The queued faults were spent before the restart, and stay spent.
      expect((await request(second.app).get('/_sim/faults')).body.queued).toBe(0);
      // The create's Idempotency-Key was stored though its answer was lost: its retry answers the original.
      const retry = await request(second.app).post('/v1/videos').set('Authorization', `Bearer ${KEY}`).set('Idempotency-Key', 'kept').send(CREATE);
      expect(retry.status).toBe(200);
      expect(retry.headers['idempotent-replayed']).toBe('true');
      expect(retry.body.id).toBe(before[0]?.id);
      const journal = (await request(second.app).get('/_sim/requests').query({ api_key: KEY })).body.data as { status: number | null; network?: object }[];
      expect(journal.slice(0, 2).map((e) => [e.status, e.network])).toEqual([
        [null, { kind: 'reset', phase: 'after' }],
        [null, { kind: 'reset', phase: 'before' }],
      ]);
    } finally {
      await second.close();
    }
  });
});

describe('a hang the held-connections bound closed', () => {
  it('is closed again by a replay and a restore: the same answer, the same journal', async () => {
    const record = join(dir, 'bounded.jsonl');
    const state = join(dir, 'bounded-state.jsonl');
    const scenario = fastWith((s) => (s.limits.max_hung_connections = 0));
    const sim = makeSim({ scenario, clock: 'manual', record, state });
    await sim.listen(0);
    await queueFault(sim, { path: '/v1/videos', method: 'POST', network: 'hang', phase: 'after', hang_ms: 600_000 });
    const lost = await send(`http://127.0.0.1:${sim.port}`, 'POST', '/v1/videos', CREATE);
    expect(lost.end).toBe('close');
    const journalOf = async (s: typeof sim): Promise<unknown> => (await request(s.app).get('/_sim/requests').query({ api_key: KEY })).body;
    const journaled = await journalOf(sim);
    expect(journaled).toMatchObject({ data: [{ network: { kind: 'close', phase: 'after' }, fault: expect.stringContaining('closed instead') }] });
    await sim.close();

    const report = replayTranscript(parseTranscript(readFileSync(record, 'utf8')), { loadScenario: (name) => loadScenario(name) });
    expect(report).toMatchObject({ replayed: 2, identical: 2, differences: [] });

    const restored = makeSim({ scenario, clock: 'manual', state });
    expect(restored.logs).toEqual([]);
    expect(await journalOf(restored)).toEqual(journaled);
    await restored.close();
  });
});
