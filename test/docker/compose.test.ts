/**
 * deploy/compose brought up as users bring it up (`docker-compose up --build`, Debian's
 * docker-compose): three shards, each its host name's ordinal, behind the proxy image built from
 * Debian's nginx package; a video created, finished and downloaded through the proxy, and the
 * typed client reading every shard's health through it.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SimulatorControl } from '../../src/index.js';
import { freePort } from '../processes.js';

const COMPOSE_FILE = fileURLToPath(new URL('../../deploy/compose/compose.yaml', import.meta.url));
const PROJECT = `simshards${process.pid}${Date.now().toString(36)}`;
const TOKEN = randomBytes(16).toString('hex');
const KEY = 'sk_test_compose';

function compose(args: string[], env: Record<string, string>, timeoutMs: number): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    execFile(
      'docker-compose',
      ['-p', PROJECT, '-f', COMPOSE_FILE, ...args],
      { timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024, env: { ...process.env, ...env } },
      (err, stdout, stderr) => resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, output: `${stdout}${stderr}` }),
    );
  });
}

describe('deploy/compose: three shards behind nginx', () => {
  let env: Record<string, string>;
  let base = '';
  beforeAll(async () => {
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    env = { SIM_CONTROL_TOKEN: TOKEN, SIM_PROXY_PORT: `127.0.0.1:${port}`, SIM_PUBLIC_URL: base, SIM_SCENARIO: 'fast', SIM_CLOCK: 'manual' };
    const up = await compose(['up', '-d', '--build'], env, 20 * 60_000);
    if (up.code !== 0) throw new Error(`docker-compose up failed (exit ${up.code}):\n${up.output.split('\n').slice(-60).join('\n')}`);
    const deadline = Date.now() + 90_000;
    let last: string;
    for (;;) {
      try {
        const res = await fetch(`${base}/_sim/health`, { signal: AbortSignal.timeout(2_000) });
        if (res.status === 200) break;
        last = `status ${res.status}`;
      } catch (e) {
        last = (e as Error).message;
      }
      if (Date.now() > deadline) {
        const logs = await compose(['logs', '--no-color'], env, 60_000);
        throw new Error(`the proxy did not answer health within 90 s (${last}):\n${logs.output.split('\n').slice(-80).join('\n')}`);
      }
      await new Promise((r) => setTimeout(r, 500));
    }
  });
  afterAll(async () => {
    if (env) await compose(['down', '-v', '--remove-orphans', '-t', '5'], env, 120_000);
  });

  it('answers through the proxy: every shard its own ordinal, a video created, finished and downloaded from its shard', async () => {
    const control = new SimulatorControl({ baseUrl: base, token: TOKEN });
    const health = await control.health();
    expect(health.shards?.map((h) => h.shard)).toEqual([0, 1, 2].map((index) => ({ index, count: 3 })));
    expect(health.shards?.every((h) => h.state?.file === '/data/state.jsonl')).toBe(true);

    const created = await fetch(`${base}/v1/videos`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${KEY}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ model: 'video-3.2', prompt: 'A slow dolly shot across a rain-soaked neon street at night.' }),
    });
    expect(created.status).toBe(200);
    const { id } = (await created.json()) as { id: string };
    expect((await control.generations.finish(id, KEY)).status).toBe('succeeded');
    const video = (await (await fetch(`${base}/v1/videos/${id}`, { headers: { Authorization: `Bearer ${KEY}` } })).json()) as { output: { url: string } };
    expect(video.output.url).toMatch(new RegExp(`^${base}/shards/[012]/cdn/videos/${id}\\.mp4$`));
    const mp4 = await fetch(video.output.url);
    expect(mp4.status).toBe(200);
    expect(mp4.headers.get('content-type')).toBe('video/mp4');
    expect((await mp4.arrayBuffer()).byteLength).toBeGreaterThan(1000);
    // A call that names no account is for every shard: the proxy says so, the typed client does it.
    expect((await fetch(`${base}/_sim/reset`, { method: 'POST', headers: { Authorization: `Bearer ${TOKEN}` } })).status).toBe(421);
    const reset = await control.reset();
    expect(reset.shards?.map((h) => h.limits.accounts)).toEqual([0, 0, 0]);
  });
});
