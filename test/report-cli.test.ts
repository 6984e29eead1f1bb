/**
 * `sim report --url URL --api-key KEY`, run as a real process (`node dist/cli.js`, built by
 * `npm run build`, which `npm test` runs first) against an in-process simulator.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSimulator, type SimulatorHandle } from '../src/index.js';
import { bearer } from './helpers.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const CLI = join(ROOT, 'dist', 'cli.js');

/** Runs the CLI to completion without blocking this process (the simulator answers it from here). */
function run(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const name of Object.keys(env)) if (name === 'PORT' || name.startsWith('SIM_')) delete env[name];
  return new Promise((resolve) => {
    execFile(process.execPath, [CLI, ...args], { cwd: ROOT, env, timeout: 10_000 }, (error, stdout, stderr) => {
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : null) : 0, stdout, stderr });
    });
  });
}

let sim: SimulatorHandle;
let url: string;

beforeAll(async () => {
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run "npm run build" first (npm test does it).`);
  sim = createSimulator({ scenario: 'fast', clock: 'manual', log: () => {} });
  url = await sim.listen(0);
});
afterAll(() => sim.close());

describe('sim report', () => {
  it('prints the coverage and exits 0 for a client without findings', async () => {
    const created = await request(sim.app)
      .post('/v1/videos')
      .set(bearer('sk_test_clean'))
      .send({ model: 'video-3.2', prompt: 'A paper boat drifting down a gutter stream.' });
    expect(created.status).toBe(200);
    const { code, stdout, stderr } = await run(['report', '--url', url, '--api-key', 'sk_test_clean']);
    expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
    expect(stdout).toBe(
      [
        'Client report for sk_test_clean: 1 request in the journal',
        '',
        'ENDPOINT                REQUESTS',
        'POST /v1/videos                1',
        'GET /v1/videos                 0',
        'GET /v1/videos/{id}            0',
        'DELETE /v1/videos/{id}         0',
        'POST /v1/images                0',
        '',
        'STATUS  REQUESTS',
        '200            1',
        '',
        'No findings: the client broke none of the rules the report checks.',
        '',
      ].join('\n'),
    );
  });

  it('prints each finding with its message and exits 1 when one is an error', async () => {
    const key = 'sk_test_retrier';
    const send = () => request(sim.app).post('/v1/videos').set(bearer(key)).send({ model: 'video-3.2' });
    expect((await send()).status).toBe(400);
    const again = await send();
    const { code, stdout, stderr } = await run(['report', '--url', `${url}/`, '--api-key', key]);
    expect({ code, stderr }).toEqual({ code: 1, stderr: '' });
    const id = again.headers['x-request-id'] as string;
    expect(stdout.split('\n').slice(-9)).toEqual([
      '',
      'SEVERITY  FINDING              COUNT  EXAMPLES',
      `error     retry_not_retryable      1  ${id}`,
      '          The client sent a request again unchanged (same method, path and JSON body) after the same',
      '          request had been answered 400. A 400, 401, 402 or 422 means that the request itself cannot',
      '          succeed: the interface document says not to retry it without changing the request.',
      '',
      '1 error, 0 warnings.',
      '',
    ]);
  });

  it('exits 0 when every finding is a warning', async () => {
    const key = 'sk_test_eager';
    const created = await request(sim.app).post('/v1/videos').set(bearer(key)).send({ model: 'video-3.2', prompt: 'A kite over a windy beach.' });
    const poll = () => request(sim.app).get(`/v1/videos/${created.body.id}`).set(bearer(key));
    await poll();
    await poll();
    const { code, stdout } = await run(['report', '--url', url, '--api-key', key]);
    expect(code).toBe(0);
    expect(stdout).toContain('warning   poll_too_fast');
    expect(stdout.trimEnd().split('\n').at(-1)).toBe('0 errors, 1 warning.');
  });

  it('takes every address --url accepts, in capitals or without slashes', async () => {
    const { port } = new URL(url);
    for (const address of [`HTTP://127.0.0.1:${port}`, `http:127.0.0.1:${port}`]) {
      const { code, stdout, stderr } = await run(['report', '--url', address, '--api-key', 'sk_test_never_used']);
      expect({ code, stderr }).toEqual({ code: 1, stderr: '' });
      expect(stdout.split('\n')[0]).toBe('Client report for sk_test_never_used: 0 requests in the journal');
    }
  });

  it('exits 1 with the no_requests error for a key that made no request (a mistyped key)', async () => {
    const { code, stdout, stderr } = await run(['report', '--url', url, '--api-key', 'sk_test_never_used']);
    expect({ code, stderr }).toEqual({ code: 1, stderr: '' });
    expect(stdout.split('\n')[0]).toBe('Client report for sk_test_never_used: 0 requests in the journal');
    expect(stdout).not.toContain('No findings');
    expect(stdout).toContain('\nerror     no_requests      1\n');
    expect(stdout.trimEnd().split('\n').at(-1)).toBe('1 error, 0 warnings.');
  });

  it('exits 2 when the simulator cannot be reached, or the address is not a simulator', async () => {
    const other = createSimulator({ scenario: 'fast', clock: 'manual' });
    const closedUrl = await other.listen(0);
    await other.close();
    const unreachable = await run(['report', '--url', closedUrl, '--api-key', 'sk_test_x']);
    expect(unreachable.code).toBe(2);
    expect(unreachable.stderr).toBe(`sim report: cannot reach the simulator at ${closedUrl} (ECONNREFUSED).\n`);
    const notASimulator = await run(['report', '--url', `${url}/cdn`, '--api-key', 'sk_test_x']);
    expect(notASimulator.code).toBe(2);
    expect(notASimulator.stderr).toMatch(/^sim report: .* answered 404.*\(is .* a simulator\?\)\.\n$/);
  });
});
