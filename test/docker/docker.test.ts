/**
 * The container image, proven by a real build: builds `video-service-sim:test` from the Dockerfile,
 * runs it, drives a video to `succeeded` through the published port, fetches its MP4, and checks
 * the image's promises (non-root, HEALTHCHECK, env-only configuration, fast `docker stop`, a
 * control API that needs the token it generates and prints, or the one given, and a state or
 * transcript file on a shared volume that a second container cannot take while the first holds it).
 *
 * Uses the `docker` CLI from PATH with the environment's DOCKER_HOST. Without an answering engine
 * the suite fails (it never passes silently).
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** The tag built and tested (SIM_DOCKER_TEST_IMAGE: another, so that runs sharing an engine do not build over each other's). */
const IMAGE = process.env.SIM_DOCKER_TEST_IMAGE ?? 'video-service-sim:test';
const RUN_ID = `${process.pid}-${Date.now().toString(36)}`;
const MAIN = `video-service-sim-test-${RUN_ID}`;
const ENV_ONLY = `video-service-sim-test-env-${RUN_ID}`;
const KEY = 'sk_test_docker';

interface Result {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `docker ...args`; never throws (the caller decides what a failure means). */
function docker(args: string[], timeoutMs = 60_000): Promise<Result> {
  return new Promise((resolve) => {
    execFile(
      'docker',
      args,
      { cwd: ROOT, timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024, env: process.env },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
        resolve({ code, stdout: String(stdout), stderr: String(stderr) || (err && code !== 0 ? err.message : '') });
      },
    );
  });
}

/** Like docker(), but throws with the command's output when it fails. */
async function dockerOk(args: string[], timeoutMs?: number): Promise<string> {
  const r = await docker(args, timeoutMs);
  if (r.code !== 0) {
    const tail = `${r.stdout}\n${r.stderr}`.trim().split('\n').slice(-60).join('\n');
    throw new Error(`docker ${args.join(' ')} failed (exit ${r.code}):\n${tail}`);
  }
  return r.stdout.trim();
}

function log(line: string): void {
  console.log(`[test:docker] ${line}`);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The host address of a container port published on 127.0.0.1 (`docker port`). */
async function publishedUrl(container: string, port: number): Promise<string> {
  const out = await dockerOk(['port', container, `${port}/tcp`]);
  const line = out.split('\n').find((l) => l.startsWith('127.0.0.1:')) ?? out.split('\n')[0] ?? '';
  const hostPort = line.trim().split(':').pop();
  if (!hostPort || !/^\d+$/.test(hostPort)) throw new Error(`cannot read the published port from: ${out}`);
  return `http://127.0.0.1:${hostPort}`;
}

/** Polls GET {url}/_sim/health until it answers 200 (generous: the machine may be busy). */
async function waitForHealth(url: string, container: string, timeoutMs = 60_000): Promise<Record<string, unknown>> {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  while (Date.now() < deadline) {
    try {
      const res = await fetch(`${url}/_sim/health`, { signal: AbortSignal.timeout(2_000) });
      if (res.ok) return (await res.json()) as Record<string, unknown>;
      last = `status ${res.status}`;
    } catch (e) {
      last = (e as Error).message;
    }
    await sleep(250);
  }
  const logs = await docker(['logs', container]);
  throw new Error(`${url}/_sim/health did not answer within ${timeoutMs} ms (${last}); container logs:\n${logs.stdout}${logs.stderr}`);
}

/** Polls `docker inspect` until the HEALTHCHECK reports `healthy`. */
async function waitForHealthy(container: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let state = '';
  while (Date.now() < deadline) {
    state = await dockerOk(['inspect', '--format', '{{json .State.Health}}', container]);
    const health = JSON.parse(state) as { Status?: string } | null;
    if (health?.Status === 'healthy') return;
    await sleep(500);
  }
  throw new Error(`the HEALTHCHECK of ${container} did not report healthy within ${timeoutMs} ms: ${state}`);
}

async function api(url: string, path: string, init: RequestInit = {}): Promise<{ status: number; body: any }> {
  const res = await fetch(`${url}${path}`, {
    ...init,
    headers: { Authorization: `Bearer ${KEY}`, 'Content-Type': 'application/json', ...(init.headers ?? {}) },
  });
  const text = await res.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // not JSON: keep the text for the failure message
  }
  return { status: res.status, body };
}

const mb = (bytes: number) => `${(bytes / 1e6).toFixed(1)} MB`;

let baseUrl = '';
/** The control token the main container generated and printed at start. */
let controlToken = '';

/** POST a control endpoint, with a token or without. */
async function control(url: string, path: string, token?: string, body?: unknown): Promise<{ status: number; body: any }> {
  const headers: Record<string, string> = body === undefined ? {} : { 'Content-Type': 'application/json' };
  if (token !== undefined) headers.Authorization = `Bearer ${token}`;
  const res = await fetch(`${url}${path}`, { method: 'POST', headers, body: body === undefined ? undefined : JSON.stringify(body) });
  return { status: res.status, body: await res.json() };
}

/** The generated token from a container's start-up lines. */
async function printedToken(container: string): Promise<string> {
  const logs = await dockerOk(['logs', container]);
  const token = /^control token: (\S+) /m.exec(logs)?.[1];
  if (!token) throw new Error(`no "control token:" line in the logs of ${container}:\n${logs}`);
  return token;
}

describe('the container image', () => {
  beforeAll(async () => {
    const version = await docker(['version', '--format', '{{.Server.Version}}'], 30_000);
    if (version.code !== 0) {
      throw new Error(
        'No Docker engine answers (`docker version` failed), so the image cannot be tested.\n' +
          'Start Docker (or export DOCKER_HOST for a reachable engine) and run `npm run test:docker` again.\n' +
          `docker said: ${(version.stderr || version.stdout).trim()}`,
      );
    }
    log(`engine ${version.stdout.trim()} at ${process.env.DOCKER_HOST ?? 'the default socket'}`);

    log(`building ${IMAGE} (the first build installs the dependencies; several minutes on a slow machine)`);
    const t0 = Date.now();
    await dockerOk(['build', '--tag', IMAGE, '.'], 19 * 60_000);
    log(`built in ${((Date.now() - t0) / 1000).toFixed(0)} s`);

    await dockerOk([
      'run', '--detach', '--name', MAIN,
      '-e', 'SIM_SCENARIO=fast',
      '-e', 'SIM_CLOCK=manual',
      '-e', 'SIM_SEED=4242',
      '-p', '127.0.0.1::8080',
      '--health-interval', '1s',
      IMAGE,
    ]);
    baseUrl = await publishedUrl(MAIN, 8080);
    log(`container ${MAIN} published at ${baseUrl}`);
    await waitForHealth(baseUrl, MAIN);
    controlToken = await printedToken(MAIN);
  });

  afterAll(async () => {
    await docker(['rm', '--force', '--volumes', MAIN]);
    await docker(['rm', '--force', '--volumes', ENV_ONLY]);
  });

  it('listens on 0.0.0.0:8080 with the scenario, seed and clock from the environment', async () => {
    const health = await waitForHealth(baseUrl, MAIN);
    expect(health).toMatchObject({ status: 'ok', scenario: 'fast', seed: 4242, clock: { mode: 'manual' } });
    const logs = await dockerOk(['logs', MAIN]);
    expect(logs.split('\n')[0]).toMatch(/^sim listening on http:\/\/0\.0\.0\.0:8080 \(scenario fast, seed 4242, clock manual\)/);
  });

  it('generates a control token at start, prints it with the dashboard address, and its control API needs it', async () => {
    const lines = (await dockerOk(['logs', MAIN])).split('\n');
    expect(lines[1]).toBe(`dashboard: http://localhost:8080/_sim/#token=${controlToken}`);
    expect(lines[2]).toMatch(/^control token: \S+ \(generated at start/);
    expect(controlToken.length).toBeGreaterThanOrEqual(32);
    // The health check (and the image's HEALTHCHECK) needs none; every other control request does.
    expect((await fetch(`${baseUrl}/_sim/health`)).status).toBe(200);
    expect((await control(baseUrl, '/_sim/reset')).body.error).toMatchObject({ type: 'authentication_error', code: 'control_token_required' });
    expect((await control(baseUrl, '/_sim/shutdown', 'not-the-token')).body.error.code).toBe('invalid_control_token');
    const requests = await fetch(`${baseUrl}/_sim/requests`);
    expect(requests.status).toBe(401);
    expect((await control(baseUrl, '/_sim/reset', controlToken)).status).toBe(200);
    // No CORS on the control API, and a web page of another origin is refused even with the token.
    const preflight = await fetch(`${baseUrl}/_sim/reset`, { method: 'OPTIONS', headers: { Origin: 'http://evil.example', 'Access-Control-Request-Method': 'POST' } });
    expect(preflight.status).toBe(403);
    expect(preflight.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('drives a video to succeeded through the published port and serves its MP4', async () => {
    const created = await api(baseUrl, '/v1/videos', {
      method: 'POST',
      body: JSON.stringify({ model: 'video-3.2', prompt: 'A paper boat drifting down a rainy gutter, close-up.' }),
    });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    expect(created.body).toMatchObject({ object: 'video', status: 'queued' });
    const id = created.body.id as string;

    const advanced = await control(baseUrl, '/_sim/clock/advance', controlToken, { seconds: 10 });
    expect(advanced.status).toBe(200);

    const done = await api(baseUrl, `/v1/videos/${id}`);
    expect(done.status).toBe(200);
    expect(done.body.status, JSON.stringify(done.body)).toBe('succeeded');

    // Without SIM_BASE_URL, the addresses in answers follow the Host the client used: the port
    // published on this host (another than the container's 8080), which this client can fetch.
    const mediaUrl = new URL(done.body.output.url as string);
    expect(mediaUrl.origin).toBe(new URL(baseUrl).origin);
    const media = await fetch(mediaUrl);
    expect(media.status).toBe(200);
    expect(media.headers.get('content-type')).toMatch(/^video\/mp4/);
    const bytes = Buffer.from(await media.arrayBuffer());
    expect(bytes.length).toBeGreaterThan(1000);
    expect(bytes.subarray(4, 8).toString('latin1')).toBe('ftyp');
  });

  it('runs as a non-root user, with node as PID 1', async () => {
    const uid = await dockerOk(['exec', MAIN, 'id', '-u']);
    expect(Number(uid)).not.toBe(0);
    const cmdline = await dockerOk(['exec', MAIN, 'cat', '/proc/1/cmdline']);
    expect(cmdline.split('\0')[0]).toMatch(/(^|\/)node$/);
    const user = await dockerOk(['image', 'inspect', '--format', '{{.Config.User}}', IMAGE]);
    expect(user).toBe('node');
  });

  it('reports healthy through its HEALTHCHECK', async () => {
    await waitForHealthy(MAIN);
    const test = await dockerOk(['image', 'inspect', '--format', '{{json .Config.Healthcheck.Test}}', IMAGE]);
    expect(test).toContain('/_sim/health');
    expect(test).not.toMatch(/curl|wget/);
  });

  it('takes every setting from the environment alone (PORT, SIM_* variables)', async () => {
    await dockerOk([
      'run', '--detach', '--name', ENV_ONLY,
      '-e', 'PORT=9090',
      '-e', 'SIM_SCENARIO=default',
      '-e', 'SIM_SEED=7',
      '-e', 'SIM_CLOCK=realtime',
      '-e', 'SIM_SPEED=2',
      '-e', 'SIM_BASE_URL=http://sim.example.test:9090',
      '-e', 'SIM_CDN_URL=http://cdn.example.test/media',
      '-e', 'SIM_CONTROL_TOKEN=env-given-token-0123',
      '-p', '127.0.0.1::9090',
      '--health-interval', '1s',
      IMAGE,
    ]);
    const url = await publishedUrl(ENV_ONLY, 9090);
    const health = await waitForHealth(url, ENV_ONLY);
    expect(health).toMatchObject({ scenario: 'default', seed: 7, clock: { mode: 'realtime', speed: 2 } });
    const image = await api(url, '/v1/images', { method: 'POST', body: JSON.stringify({ prompt: 'A red kite over dunes.' }) });
    expect(image.status, JSON.stringify(image.body)).toBe(200);
    expect(image.body.url).toMatch(/^http:\/\/cdn\.example\.test\/media\/images\/img_\w+\.png$/);
    // The token given is the one needed, and it is not printed.
    expect((await control(url, '/_sim/reset')).status).toBe(401);
    expect((await control(url, '/_sim/reset', 'env-given-token-0123')).status).toBe(200);
    expect(await dockerOk(['logs', ENV_ONLY])).not.toContain('env-given-token');
    // The HEALTHCHECK follows PORT too.
    await waitForHealthy(ENV_ONLY);
    await docker(['rm', '--force', ENV_ONLY]);
  });

  it('runs the subcommands when given as arguments', async () => {
    const out = await dockerOk(['run', '--rm', IMAGE, 'scenarios']);
    expect(out).toMatch(/^fast\s/m);
    expect(out).toMatch(/^flaky\s/m);
  });

  it('is small, and says how much it adds above its base', async () => {
    const lastFrom = readFileSync(`${ROOT}Dockerfile`, 'utf8')
      .split('\n')
      .filter((l) => /^FROM\s/i.test(l))
      .pop();
    const base = lastFrom?.split(/\s+/)[1] ?? 'node:24-bookworm-slim';
    const size = Number(await dockerOk(['image', 'inspect', '--format', '{{.Size}}', IMAGE]));
    const baseSize = Number(await dockerOk(['image', 'inspect', '--format', '{{.Size}}', base]));
    const added = size - baseSize;
    log(`image ${IMAGE}: ${mb(size)} in all; base ${base}: ${mb(baseSize)}; added by the Dockerfile: ${mb(added)}`);
    const layers = await dockerOk(['history', '--format', '{{.Size}}\t{{.CreatedBy}}', IMAGE]);
    for (const layer of layers.split('\n').slice(0, 12)) {
      const [layerSize, by] = layer.split('\t');
      if (layerSize && layerSize !== '0B') log(`  layer ${layerSize.padStart(8)}  ${(by ?? '').replace(/\s+/g, ' ').slice(0, 90)}`);
    }
    expect(added).toBeGreaterThan(0);
    // Production dependencies, dist/, scenarios and media: tens of MB, never a dev toolchain.
    expect(added).toBeLessThan(100e6);
    const hasDev = await docker(['run', '--rm', '--entrypoint', 'node', IMAGE, '-e',
      "require('fs').accessSync('node_modules/typescript')"]);
    expect(hasDev.code, 'dev dependencies (typescript) must not be in the runtime image').not.toBe(0);
  });

  it('refuses a second container on the state and transcript files of a shared volume (each simulator is PID 1), and a stale lock is taken over', async () => {
    const volume = `video-service-sim-test-shared-${RUN_ID}`;
    const holder = `video-service-sim-test-holder-${RUN_ID}`;
    const successor = `video-service-sim-test-successor-${RUN_ID}`;
    const refused = `video-service-sim-test-refused-${RUN_ID}`;
    const files = ['-e', 'SIM_STATE=/data/state.jsonl', '-e', 'SIM_RECORD=/data/transcript.jsonl'];
    /** `docker run --rm` on the volume (named, so that one that would not stop is removed below). */
    const onVolume = (args: string[]) => docker(['run', '--rm', '--name', refused, '-v', `${volume}:/data`, ...args]);
    await dockerOk(['volume', 'create', volume]);
    try {
      await dockerOk(['run', '--detach', '--name', holder, '-v', `${volume}:/data`, ...files, '-e', 'SIM_CLOCK=manual', '-p', '127.0.0.1::8080', IMAGE]);
      const url = await publishedUrl(holder, 8080);
      await waitForHealth(url, holder);
      const created = await api(url, '/v1/videos', { method: 'POST', body: JSON.stringify({ model: 'video-3.2', prompt: 'A lighthouse keeper winding the lamp at dusk.' }) });
      expect(created.status, JSON.stringify(created.body)).toBe(200);
      const host = await dockerOk(['inspect', '--format', '{{.Config.Hostname}}', holder]);
      // PID 1 is node (its thread's name is `node`, or `MainThread` on Node 24: its command line says which program it is).
      expect((await dockerOk(['exec', holder, 'cat', '/proc/1/cmdline'])).split('\0')[0]).toMatch(/(^|\/)node$/);

      // Another container: its simulator is PID 1 too, as the holder's is.
      const held = (file: string) =>
        new RegExp(
          `^sim: cannot (keep the state|record): ${file.replaceAll('.', '\\.')} is held by another simulator, in another container or on another machine ` +
            `\\(pid 1 on host ${host}, lock file ${file.replaceAll('.', '\\.')}\\.lock, refreshed \\d+ s ago\\); stop it, or choose another file\\.`,
        );
      const onState = await onVolume(['-e', 'SIM_STATE=/data/state.jsonl', IMAGE]);
      expect(onState.code, onState.stderr).toBe(1);
      expect(onState.stderr).toMatch(held('/data/state.jsonl'));
      const onTranscript = await onVolume(['-e', 'SIM_RECORD=/data/transcript.jsonl', IMAGE]);
      expect(onTranscript.code, onTranscript.stderr).toBe(1);
      expect(onTranscript.stderr).toMatch(held('/data/transcript.jsonl'));
      // Neither file was touched: the holder's header and its one request.
      // (`{"ids":N}` lines note the ids health checks took.)
      const state = (await dockerOk(['exec', holder, 'cat', '/data/state.jsonl'])).split('\n');
      expect(state.map((line) => Object.keys(JSON.parse(line) as object)[0]).filter((key) => key !== 'ids')).toEqual(['state', 'seq']);
      const transcript = (await dockerOk(['exec', holder, 'cat', '/data/transcript.jsonl'])).split('\n');
      expect(transcript.map((line) => Object.keys(JSON.parse(line) as object)[0])).toEqual(['transcript', 'seq']);

      // Killed, the holder leaves its locks; once they are stale (back-dated here rather than waited
      // for), a new container takes the files over and restores the state.
      await dockerOk(['kill', '--signal', 'KILL', holder]);
      const backdated = await onVolume(['--entrypoint', 'touch', IMAGE, '-d', '@0', '/data/state.jsonl.lock', '/data/transcript.jsonl.lock']);
      expect(backdated.code, backdated.stderr).toBe(0);
      await dockerOk(['run', '--detach', '--name', successor, '-v', `${volume}:/data`, ...files, '-p', '127.0.0.1::8080', IMAGE]);
      const successorUrl = await publishedUrl(successor, 8080);
      await waitForHealth(successorUrl, successor);
      const restored = await api(successorUrl, `/v1/videos/${created.body.id as string}`);
      expect(restored.status, JSON.stringify(restored.body)).toBe(200);
      expect(await dockerOk(['logs', successor])).toContain('state: /data/state.jsonl (1 request restored)');
    } finally {
      await docker(['rm', '--force', holder, successor, refused]);
      await docker(['volume', 'rm', '--force', volume]);
    }
  });

  it('exits 0 on docker stop: SIGTERM reaches node as PID 1, which drains and exits by itself', async () => {
    // Docker's own SIGKILL after the 60 s timeout would end it with 137 instead.
    await dockerOk(['stop', '--time', '60', MAIN]);
    const exit = await dockerOk(['inspect', '--format', '{{.State.ExitCode}}', MAIN]);
    expect(Number(exit)).toBe(0);
  });
});
