/**
 * `sim replay FILE --target URL` against a simulator that writes other addresses into its answers
 * (started with another `--base-url`) says so, instead of only listing the answers that differ.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runReplay } from '../src/commands/replay.js';
import { createSimulator } from '../src/index.js';
import { PROMPT, bearer, makeSim } from './helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'sim-replay-addresses-'));
const file = join(dir, 'transcript.jsonl');
const RECORDED_BASE = 'http://localhost:8080';

beforeAll(async () => {
  const recorded = makeSim({ scenario: 'fast', clock: 'manual', record: file, baseUrl: RECORDED_BASE });
  const created = await request(recorded.app).post('/v1/videos').set(bearer('sk_test_r')).send({ model: 'video-3.2', prompt: PROMPT });
  await request(recorded.app).post('/_sim/clock/advance').send({ seconds: 10 });
  const video = await request(recorded.app).get(`/v1/videos/${created.body.id}`).set(bearer('sk_test_r'));
  expect(video.body.output.url).toBe(`${RECORDED_BASE}/cdn/videos/${created.body.id}.mp4`);
  await recorded.close();
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Replays the transcript against a target started with `baseUrl`; the exit status and the output. */
async function replayAgainst(baseUrl: string, controlToken?: string): Promise<{ status: number; out: string; err: string }> {
  const target = createSimulator({ scenario: 'fast', clock: 'manual', baseUrl, controlToken, log: () => {} });
  await target.listen(0);
  let out = '';
  let err = '';
  try {
    const status = await runReplay(file, { target: `http://127.0.0.1:${target.port}`, controlToken }, { out: (t) => (out += t), err: (t) => (err += t) });
    return { status, out, err };
  } finally {
    await target.close();
  }
}

describe('sim replay --target', () => {
  it('says that the target writes other addresses, and with which flag to start it, when its base URL differs', async () => {
    const { status, out, err } = await replayAgainst('http://sim.example:9000');
    expect(status).toBe(1);
    expect(out).toMatch(/replayed 3 requests: 2 identical, 1 different\n$/);
    expect(err).toBe(
      'sim replay: note: the target writes other addresses into its answers than the recording simulator did: media at ' +
        `http://sim.example:9000/cdn, where the transcript has ${RECORDED_BASE}/cdn (it was recorded with the base URL ${RECORDED_BASE}). ` +
        `Start the target with --base-url ${RECORDED_BASE} for identical answers.\n`,
    );
  });

  it('says so of a target with a control token too (the note is read with the token)', async () => {
    const { status, err } = await replayAgainst('http://sim.example:9000', 'replay-token-0123456789');
    expect(status).toBe(1);
    expect(err).toMatch(/^sim replay: note: the target writes other addresses into its answers than the recording simulator did: media at http:\/\/sim\.example:9000\/cdn, /);
  });

  it('says nothing of addresses when the target was started with the recorded base URL', async () => {
    expect(await replayAgainst(RECORDED_BASE)).toEqual({ status: 0, out: 'replayed 3 requests: 3 identical\n', err: '' });
  });
});

/** A request to 127.0.0.1:`port` under another Host (fetch cannot set one); the body parsed as JSON. */
function viaHost(port: number, method: string, path: string, host: string, body?: unknown): Promise<any> {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const headers: Record<string, string> = { Host: host, Authorization: 'Bearer sk_test_h' };
    if (payload !== undefined) headers['Content-Type'] = 'application/json';
    const req = httpRequest({ host: '127.0.0.1', port, method, path, headers }, (res) => {
      let text = '';
      res.on('data', (chunk: Buffer) => (text += chunk.toString()));
      res.on('end', () => resolve(JSON.parse(text)));
    });
    req.on('error', reject);
    req.end(payload);
  });
}

describe('addresses that follow the Host (no base URL given)', () => {
  it('a transcript of answers written on a remapped port replays identically, and a restored state answers on the Host used then', async () => {
    const transcript = join(dir, 'host.jsonl');
    const statePath = join(dir, 'host-state.jsonl');
    const sim = createSimulator({ scenario: 'fast', clock: 'manual', record: transcript, state: statePath, log: () => {} });
    const port = Number(new URL(await sim.listen(0)).port);
    const image = await viaHost(port, 'POST', '/v1/images', 'localhost:18081', { prompt: PROMPT });
    expect(image.url).toBe(`http://localhost:18081/cdn/images/${image.id}.png`);
    const keyed = await viaHost(port, 'POST', '/v1/images', 'LOCALHOST:18082', { prompt: PROMPT });
    expect(keyed.url).toBe(`http://LOCALHOST:18082/cdn/images/${keyed.id}.png`);
    await sim.close();
    let out = '';
    expect(await runReplay(transcript, {}, { out: (t) => (out += t), err: () => {} })).toBe(0);
    expect(out).toBe('replayed 2 requests: 2 identical\n');
    const restored = createSimulator({ state: statePath, log: () => {} });
    try {
      const restoredPort = Number(new URL(await restored.listen(0)).port);
      const again = await viaHost(restoredPort, 'GET', '/v1/videos', 'localhost:18083');
      expect(again.object).toBe('list');
      // The in-process handle's calls have no Host: their answers use the simulator's own address.
      expect(restored.health().media).toEqual({ url: `http://localhost:${restoredPort}/cdn`, follows_host: false });
    } finally {
      await restored.close();
    }
  });
});
