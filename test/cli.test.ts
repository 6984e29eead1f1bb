/**
 * The `sim` command, run as a real process: `node dist/cli.js` (built by `npm run build`, which
 * `npm test` runs first).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { ALIAS_BOMB, PROMPT } from './helpers.js';
import { CLI, cleanEnv, childProcesses, getWithHost } from './processes.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const LISTENING = /^sim listening on http:\/\/127\.0\.0\.1:(\d+) \(scenario fast, seed \d+, clock manual\)$/;

const children = childProcesses();
const dir = mkdtempSync(join(tmpdir(), 'sim-cli-test-'));

afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface Running {
  child: ChildProcess;
  firstLine: string;
  port: number;
  url: string;
  stderr: () => string;
  /** Resolves to the first `n` lines of stdout once they are out. */
  lines: (n: number) => Promise<string[]>;
}

/** Servers that serve several tests: killed after the file's last test. */
const fileChildren = new Set<ChildProcess>();
afterAll(() => {
  for (const child of fileChildren) child.kill('SIGKILL');
});

/**
 * Starts the server and resolves once its first stdout line is out. It is killed after the test,
 * unless `forFile` (then after the file's last test).
 */
function startServer(args: string[], env: Record<string, string> = {}, forFile = false): Promise<Running> {
  const child = spawn(process.execPath, [CLI, ...args], { cwd: ROOT, env: cleanEnv(env), stdio: ['ignore', 'pipe', 'pipe'] });
  (forFile ? fileChildren : children).add(child);
  let out = '';
  let err = '';
  child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
  const lines = (n: number) =>
    new Promise<string[]>((resolve, reject) => {
      const check = () => {
        const complete = out.split('\n').slice(0, -1);
        if (complete.length < n) return false;
        child.stdout.off('data', check);
        resolve(complete.slice(0, n));
        return true;
      };
      if (check()) return;
      child.stdout.on('data', check);
      child.once('exit', () => reject(new Error(`exited before printing ${n} lines; stdout: ${out}`)));
    });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no first line within 10 s; stdout: ${out}; stderr: ${err}`)), 10_000);
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const newline = out.indexOf('\n');
      if (newline < 0) return;
      clearTimeout(timer);
      const firstLine = out.slice(0, newline);
      const port = Number(/:(\d+)/.exec(firstLine)?.[1]);
      resolve({ child, firstLine, port, url: `http://127.0.0.1:${port}`, stderr: () => err, lines });
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`exited with ${code} before listening; stderr: ${err}`));
    });
  });
}

/** Runs the CLI to completion (commands and refused flags). */
function run(args: string[], env: Record<string, string> = {}) {
  const result = spawnSync(process.execPath, [CLI, ...args], { cwd: ROOT, env: cleanEnv(env), encoding: 'utf8', timeout: 10_000 });
  return { status: result.status, signal: result.signal, stdout: result.stdout, stderr: result.stderr };
}

/** Resolves to the exit code and signal, or rejects after `capMs`. */
function exitWithin(child: ChildProcess, capMs: number): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  if (child.exitCode !== null || child.signalCode !== null) {
    return Promise.resolve({ code: child.exitCode, signal: child.signalCode });
  }
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`still running ${capMs} ms after the signal`)), capMs);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal });
    });
  });
}

async function json(url: string, init: RequestInit = {}): Promise<{ status: number; body: any }> {
  const res = await fetch(url, init);
  return { status: res.status, body: await res.json() };
}

/** Creates a video, advances the clock 10 s (scenario fast) and answers the resolved video. */
async function succeededVideo(base: string): Promise<any> {
  const headers = { Authorization: 'Bearer sk_test_cli', 'Content-Type': 'application/json' };
  const created = await json(`${base}/v1/videos`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ model: 'video-3.2', prompt: PROMPT, duration_seconds: 4 }),
  });
  expect(created.status).toBe(200);
  const advanced = await json(`${base}/_sim/clock/advance`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ seconds: 10 }),
  });
  expect(advanced.status).toBe(200);
  const video = await json(`${base}/v1/videos/${created.body.id}`, { headers });
  expect(video.status).toBe(200);
  expect(video.body.status).toBe('succeeded');
  return video.body;
}

const MANUAL_FAST = ['--port', '0', '--clock', 'manual', '--scenario', 'fast'];

/**
 * One `sim` with MANUAL_FAST for the tests that only look at what it printed and at its answers
 * (none depends on another's requests): started once, by the first of them.
 */
let shared: Promise<Running> | undefined;
const sharedServer = (): Promise<Running> => (shared ??= startServer(MANUAL_FAST, {}, true));

// ---------------------------------------------------------------------------------------------

describe('sim (start)', () => {
  it('prints its address, scenario, seed and clock as the first line and answers on that port', async () => {
    const sim = await sharedServer();
    const match = LISTENING.exec(sim.firstLine);
    expect(match, sim.firstLine).not.toBeNull();
    expect(Number(match![1])).toBeGreaterThan(0);
    const health = await json(`${sim.url}/_sim/health`);
    expect(health.status).toBe(200);
    expect(health.body).toMatchObject({ status: 'ok', scenario: 'fast', clock: { mode: 'manual' } });
    expect(sim.firstLine).toContain(`seed ${health.body.seed}`);
  });

  it("prints the dashboard's address, at the base URL written into responses, as the second line", async () => {
    const sim = await sharedServer();
    const [first, second] = await sim.lines(2);
    expect(first).toMatch(LISTENING);
    expect(second).toBe(`dashboard: http://localhost:${sim.port}/_sim/`);
    const page = await fetch(`${sim.url}/_sim/`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    await page.text();
  });

  it('takes flags in the --flag=value form', async () => {
    const sim = await startServer(['--port=0', '--clock=manual', '--scenario=fast', '--seed=7']);
    expect(sim.firstLine).toMatch(LISTENING);
    expect(sim.firstLine).toContain('seed 7');
  });

  it('reads PORT, SIM_SCENARIO, SIM_CLOCK and SIM_SEED from the environment', async () => {
    const sim = await startServer([], { PORT: '0', SIM_SCENARIO: 'fast', SIM_CLOCK: 'manual', SIM_SEED: '99' });
    expect(sim.firstLine).toMatch(LISTENING);
    expect(sim.firstLine).toContain('seed 99');
    const health = await json(`${sim.url}/_sim/health`);
    expect(health.body).toMatchObject({ status: 'ok', scenario: 'fast', seed: 99, clock: { mode: 'manual' } });
  });

  it.each([
    ['--heap-growing-percent 0 (V8 default policy)', [...MANUAL_FAST, '--heap-growing-percent', '0'], {}],
    ['SIM_HEAP_GROWING_PERCENT=50', MANUAL_FAST, { SIM_HEAP_GROWING_PERCENT: '50' }],
  ] as const)('starts and answers with %s, writing nothing to stderr', async (_name, args, env) => {
    const sim = await startServer([...args], { ...env });
    expect(sim.firstLine).toMatch(LISTENING);
    const health = await json(`${sim.url}/_sim/health`);
    expect(health.status).toBe(200);
    expect(sim.stderr()).toBe('');
  });

  it('shows the seed, clock mode and speed of the flags in GET /_sim/scenario, as /_sim/health does, across resets', async () => {
    const sim = await startServer(['--port', '0', '--scenario', 'default', '--speed', '20', '--seed', '7']);
    const scenario = async () => (await json(`${sim.url}/_sim/scenario`)).body;
    const health = (await json(`${sim.url}/_sim/health`)).body;
    expect(health).toMatchObject({ scenario: 'default', seed: 7, clock: { mode: 'realtime', speed: 20 } });
    expect(await scenario()).toMatchObject({ name: 'default', seed: 7, clock: { mode: 'realtime', speed: 20, start: null } });
    // A reset with a seed changes the seed; the clock flags stay, on another scenario too.
    const post = (body: unknown) =>
      json(`${sim.url}/_sim/reset`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
    expect((await post({ seed: 3 })).status).toBe(200);
    expect(await scenario()).toMatchObject({ name: 'default', seed: 3, clock: { mode: 'realtime', speed: 20 } });
    expect((await post({ scenario: 'fast' })).status).toBe(200);
    expect(await scenario()).toMatchObject({ name: 'fast', seed: 7, clock: { mode: 'realtime', speed: 20 } });
    expect((await json(`${sim.url}/_sim/health`)).body).toMatchObject({ scenario: 'fast', seed: 7, clock: { mode: 'realtime', speed: 20 } });
  });

  it('shows --clock manual in GET /_sim/scenario over a realtime scenario', async () => {
    const sim = await startServer(['--port', '0', '--scenario', 'default', '--clock', 'manual']);
    const scenario = (await json(`${sim.url}/_sim/scenario`)).body;
    const health = (await json(`${sim.url}/_sim/health`)).body;
    expect(scenario.clock).toEqual({ mode: 'manual', speed: health.clock.speed, start: null });
    expect(scenario.seed).toBe(health.seed);
  });

  it('lets a flag win over its environment variable', async () => {
    const sim = await startServer([...MANUAL_FAST, '--seed', '5'], { SIM_SEED: '99' });
    expect((await json(`${sim.url}/_sim/health`)).body.seed).toBe(5);
  });

  it('without --base-url, writes output urls on the Host the client used (http://HOST/cdn), and serves the file there', async () => {
    const sim = await sharedServer();
    const video = await succeededVideo(sim.url);
    expect(sim.url).toBe(`http://127.0.0.1:${sim.port}`);
    expect(video.output.url).toBe(`http://127.0.0.1:${sim.port}/cdn/videos/${video.id}.mp4`);
    expect(video.output.thumbnail_url.startsWith(`http://127.0.0.1:${sim.port}/cdn/`)).toBe(true);
    // A client that reaches it through a remapped port (docker run -p 18081:8080) sends that port.
    const remapped = await getWithHost(sim.port, `/v1/videos/${video.id}`, 'localhost:18081', { Authorization: 'Bearer sk_test_cli' });
    expect(remapped.body.output.url).toBe(`http://localhost:18081/cdn/videos/${video.id}.mp4`);
    expect((await getWithHost(sim.port, '/_sim/health', 'localhost:18081')).body.media).toEqual({ url: 'http://localhost:18081/cdn', follows_host: true });
    expect((await sim.lines(3))[2]).toBe('media URLs: on the Host each request used (http://HOST/cdn); --base-url fixes them');
    const file = await fetch(`${sim.url}/cdn/videos/${video.id}.mp4`);
    expect(file.status).toBe(200);
    expect(file.headers.get('content-type')).toMatch(/^video\/mp4/);
    await file.arrayBuffer();
  });

  it('writes --base-url into output urls, and prints the dashboard there', async () => {
    const sim = await startServer([...MANUAL_FAST, '--base-url', 'http://example.test:1234/']);
    expect((await sim.lines(3)).slice(1)).toEqual(['dashboard: http://example.test:1234/_sim/', 'media URLs: http://example.test:1234/cdn (--base-url)']);
    const video = await succeededVideo(sim.url);
    expect(video.output.url).toBe(`http://example.test:1234/cdn/videos/${video.id}.mp4`);
    // --base-url wins over the Host the client used.
    expect((await getWithHost(sim.port, `/v1/videos/${video.id}`, 'localhost:18081', { Authorization: 'Bearer sk_test_cli' })).body.output.url).toBe(video.output.url);
    expect(video.output.thumbnail_url.startsWith('http://example.test:1234/cdn/')).toBe(true);
  });

  it('writes --cdn-url into output urls, over --base-url', async () => {
    const sim = await startServer([...MANUAL_FAST, '--base-url', 'http://example.test:1234', '--cdn-url', 'https://media.example.test/files/']);
    const video = await succeededVideo(sim.url);
    expect(video.output.url).toBe(`https://media.example.test/files/videos/${video.id}.mp4`);
    expect(video.output.thumbnail_url.startsWith('https://media.example.test/files/')).toBe(true);
  });

  it('reads SIM_BASE_URL', async () => {
    const sim = await startServer(MANUAL_FAST, { SIM_BASE_URL: 'http://env-base.test:9' });
    expect((await succeededVideo(sim.url)).output.url.startsWith('http://env-base.test:9/cdn/videos/')).toBe(true);
  });

  it('reads SIM_CDN_URL', async () => {
    const sim = await startServer(MANUAL_FAST, { SIM_CDN_URL: 'http://env-cdn.test/c' });
    expect((await succeededVideo(sim.url)).output.url.startsWith('http://env-cdn.test/c/videos/')).toBe(true);
  });

  it('answers a POST /_sim/reset with no body at all', async () => {
    const sim = await sharedServer();
    const res = await json(`${sim.url}/_sim/reset`, { method: 'POST' });
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('ok');
  });

  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    it(`exits with code 0 on ${signal}, drained, not held by an idle connection`, async () => {
      const sim = await startServer(MANUAL_FAST);
      // An idle keep-alive connection must not hold the process open: held, the stop's deadline
      // would end it with another line ("before the drain ended").
      await fetch(`${sim.url}/_sim/health`, { headers: { Connection: 'keep-alive' } }).then((r) => r.json());
      sim.child.kill(signal);
      // Liveness only: a process that ignored the signal would still be running after 10 s.
      const { code, signal: killedBy } = await exitWithin(sim.child, 10_000);
      expect(killedBy).toBeNull();
      expect(code).toBe(0);
      expect(sim.stderr()).toBe(`sim: stopped (${signal}): drained 0 requests in progress\n`);
    });
  }
});

describe('sim (shutdown under load)', () => {
  it('SIGTERM during load exits 0; every in-flight request is answered or refused cleanly', async () => {
    const sim = await startServer(MANUAL_FAST);
    const headers = { Authorization: 'Bearer sk_test_load', 'Content-Type': 'application/json' };
    const body = JSON.stringify({ model: 'video-3.2', prompt: PROMPT });
    let stop = false;
    const outcomes: string[] = [];
    const worker = async (): Promise<void> => {
      while (!stop) {
        try {
          const res = await fetch(`${sim.url}/v1/videos`, { method: 'POST', headers, body, signal: AbortSignal.timeout(3000) });
          await res.text();
          outcomes.push(String(res.status));
        } catch (e) {
          const cause = (e as { cause?: { code?: string } }).cause?.code ?? (e as Error).name;
          outcomes.push(cause);
          if (cause === 'ECONNREFUSED') return;
        }
      }
    };
    const workers = Array.from({ length: 16 }, worker);
    // Under load once 50 answers are in (a real process: real time, at most 5 s).
    for (const deadline = Date.now() + 5000; outcomes.length < 50 && Date.now() < deadline; ) await new Promise((r) => setTimeout(r, 5));
    const before = outcomes.length;
    sim.child.kill('SIGTERM');
    // Liveness only: a process that ignored SIGTERM would still be running after 10 s.
    const { code } = await exitWithin(sim.child, 10_000);
    stop = true;
    await Promise.all(workers);
    expect(code).toBe(0);
    expect(before).toBeGreaterThanOrEqual(50);
    // Answers are 200s; refusals are clean connection errors, never a timeout (a hang).
    const unexpected = outcomes.filter((o) => o !== '200' && !['ECONNREFUSED', 'ECONNRESET', 'UND_ERR_SOCKET', 'EPIPE'].includes(o));
    expect(unexpected).toEqual([]);
  });
});

describe('sim (without openapi.yaml)', () => {
  it('starts and validates with the validators the build compiled, whatever state openapi.yaml is in', async () => {
    // A copy of the package whose openapi.yaml is damaged: the simulator never reads it at run time.
    const copy = mkdtempSync(join(tmpdir(), 'sim-no-contract-'));
    try {
      cpSync(join(ROOT, 'dist'), join(copy, 'dist'), { recursive: true });
      for (const entry of ['package.json', 'scenarios', 'assets']) cpSync(join(ROOT, entry), join(copy, entry), { recursive: true });
      symlinkSync(join(ROOT, 'node_modules'), join(copy, 'node_modules'));
      writeFileSync(join(copy, 'openapi.yaml'), 'openapi: [this is { not a contract\n');
      const child = spawn(process.execPath, [join(copy, 'dist', 'cli.js'), ...MANUAL_FAST], { cwd: copy, env: cleanEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
      children.add(child);
      const port = await new Promise<number>((resolvePort, reject) => {
        let out = '';
        child.stdout.on('data', (chunk: Buffer) => {
          out += chunk.toString();
          const m = /listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(out);
          if (m) resolvePort(Number(m[1]));
        });
        child.once('exit', (code) => reject(new Error(`exited ${code} before listening`)));
      });
      const res = await fetch(`http://127.0.0.1:${port}/v1/videos`, {
        method: 'POST',
        headers: { Authorization: 'Bearer sk_test_copy', 'Content-Type': 'application/json' },
        body: JSON.stringify({ model: 'video-3.2', prompt: PROMPT, colour: 'red' }),
      });
      expect(res.status).toBe(400);
      expect((await res.json()).error).toMatchObject({ code: 'unknown_parameter', param: 'colour' });
    } finally {
      rmSync(copy, { recursive: true, force: true });
    }
  });
});

describe('sim (POST /_sim/shutdown)', () => {
  it('answers shutting_down, then the process exits 0 and the port is free again', async () => {
    const sim = await startServer(MANUAL_FAST);
    const res = await fetch(`${sim.url}/_sim/shutdown`, { method: 'POST' });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: 'shutting_down' });
    const { code } = await exitWithin(sim.child, 5000);
    expect(code).toBe(0);
    await expect(fetch(`${sim.url}/_sim/health`)).rejects.toThrow();
  });
});

describe('sim (refused flags)', () => {
  const cases: [string[], RegExp][] = [
    [['--port', 'abc'], /--port/],
    [['--port', '70000'], /--port/],
    [['--port', '0', '--clock', 'sometimes'], /--clock/],
    [['--port', '0', '--speed', '0'], /--speed/],
    [['--port', '0', '--seed', 'x'], /--seed/],
    [['--port', '0', '--nope'], /--nope/],
    [['--port', '0', '--base-url', 'ftp://x'], /--base-url/],
    [['--port', '0', '--heap-growing-percent', '-5'], /--heap-growing-percent/],
    [['--port', '0', '--heap-growing-percent', 'ten'], /--heap-growing-percent/],
  ];
  for (const [args, names] of cases) {
    it(`exits 2 naming the flag for ${args.join(' ')}`, () => {
      const result = run(args);
      expect(result.status, result.stderr).toBe(2);
      expect(result.stderr).toMatch(names);
      expect(result.stdout).not.toMatch(/listening/);
    });
  }

  for (const args of [['--scenari', 'flaky'], ['--sceanrio=flaky'], ['--scenari=flaky']]) {
    it(`exits 2 suggesting --scenario for ${args.join(' ')}`, () => {
      const result = run([...args, '--port', '0']);
      expect(result.status).toBe(2);
      const name = args[0]!.replace(/=.*/, '');
      expect(result.stderr.split('\n').slice(0, 2)).toEqual([`error: unknown option '${name}'`, '(Did you mean --scenario?)']);
      expect(result.stdout).toBe('');
    });
  }

  it('exits 2 naming an unknown command, and the one it was likely meant to be', () => {
    const result = run(['valdate', 'my-scenario.yaml']);
    expect(result.status).toBe(2);
    expect(result.stderr.split('\n').slice(0, 2)).toEqual(["error: unknown command 'valdate'", '(Did you mean validate?)']);
    expect(result.stdout).toBe('');
  });

  it('exits 2 for a scenario file with an alias bomb, naming the file, the line and the column', () => {
    const bomb = join(dir, 'start-bomb.yaml');
    writeFileSync(bomb, ALIAS_BOMB);
    const result = run(['--port', '0', '--scenario', bomb]);
    expect(result.status).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr).toBe(`sim: Invalid scenario ${bomb}:\n  - YAML: Aliases repeat more than 10,000 values in all (an alias bomb) at line 5, column 8\n`);
  });

  it('exits 2 naming an unknown bundled scenario', () => {
    const result = run(['--port', '0', '--scenario', 'nope']);
    expect(result.status).toBe(2);
    expect(result.stderr).toMatch(/nope/);
    expect(result.stderr).toMatch(/scenario/);
  });

  it('exits 2 for a scenario file with an unknown key, naming the file, the field and what was expected', () => {
    const path = join(dir, 'unknown-key.yaml');
    writeFileSync(path, 'extends: fast\nstages:\n  render:\n    duraton: { type: fixed, value: 1 }\n');
    const result = run(['--port', '0', '--scenario', path]);
    expect(result.status).toBe(2);
    expect(result.stderr).toContain(path);
    expect(result.stderr).toContain('stages.render.duraton');
    expect(result.stderr).toMatch(/unknown key/);
    expect(result.stderr).toMatch(/expected/);
  });

  it('exits 2 naming a bad environment variable value', () => {
    const result = run([], { PORT: '0', SIM_CLOCK: 'sometimes' });
    expect(result.status).toBe(2);
    expect(result.stderr).toMatch(/clock/i);
  });

  it('exits 2 naming a bad SIM_HEAP_GROWING_PERCENT', () => {
    const result = run([], { PORT: '0', SIM_HEAP_GROWING_PERCENT: '2000' });
    expect(result.status).toBe(2);
    expect(result.stderr).toMatch(/heap-growing-percent/);
  });
});

// ---------------------------------------------------------------------------------------------

describe('sim scenarios', () => {
  it('lists every bundled scenario with the one-line purpose of its header comment', () => {
    const result = run(['scenarios']);
    expect(result.status).toBe(0);
    const lines = result.stdout.trim().split('\n');
    for (const name of ['default', 'fast']) {
      const header = readFileSync(join(ROOT, 'scenarios', `${name}.yaml`), 'utf8').split('\n')[0]!;
      const purpose = header.replace(new RegExp(`^# ${name}: `), '');
      const line = lines.find((l) => l.startsWith(`${name} `));
      expect(line, result.stdout).toBeDefined();
      expect(line!.replace(/^\S+\s+/, '')).toBe(purpose);
    }
  });
});

describe('sim validate', () => {
  function problemLines(stderr: string): string[] {
    return stderr.split('\n').filter((l) => l.startsWith('  - '));
  }

  function validate(name: string, text: string) {
    const path = join(dir, name);
    writeFileSync(path, text);
    return { path, ...run(['validate', path]) };
  }

  it('exits 0 for scenarios/fast.yaml', () => {
    const result = run(['validate', 'scenarios/fast.yaml']);
    expect(result.status).toBe(0);
    expect(result.stdout).toMatch(/valid/);
  });

  it('exits 2 for an unknown key, naming it', () => {
    const r = validate('v-unknown.yaml', 'extends: fast\nbogus: 1\n');
    expect(r.status).toBe(2);
    expect(r.stderr).toContain(r.path);
    expect(problemLines(r.stderr)).toEqual([expect.stringMatching(/^ {2}- bogus: unknown key/)]);
  });

  it('exits 2 for a value of the wrong type, naming the field and the expected type', () => {
    const r = validate('v-type.yaml', 'extends: fast\nrate_limits:\n  capacity: lots\n');
    expect(r.status).toBe(2);
    expect(problemLines(r.stderr)).toEqual([expect.stringMatching(/^ {2}- rate_limits\.capacity: expected integer/)]);
  });

  it('exits 2 for a uniform distribution with min above max', () => {
    const r = validate('v-minmax.yaml', 'extends: fast\nstages:\n  queue:\n    duration: { type: uniform, min: 5, max: 1 }\n');
    expect(r.status).toBe(2);
    expect(problemLines(r.stderr)).toEqual([expect.stringMatching(/^ {2}- stages\.queue\.duration: expected min <= max/)]);
  });

  it('exits 2 for a claim-linking pattern that is not a valid regular expression', () => {
    const r = validate('v-regex.yaml', 'extends: fast\ncompliance:\n  claim_linking:\n    rules:\n      - pattern: "([unclosed"\n');
    expect(r.status).toBe(2);
    expect(problemLines(r.stderr)).toEqual([
      expect.stringMatching(/^ {2}- compliance\.claim_linking\.rules\[0\]\.pattern: expected a valid regular expression/),
    ]);
  });

  it('exits 2 for an extends cycle', () => {
    writeFileSync(join(dir, 'v-cycle-b.yaml'), 'extends: ./v-cycle-a.yaml\n');
    const r = validate('v-cycle-a.yaml', 'extends: ./v-cycle-b.yaml\n');
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/extends: .*cycle/);
  });

  it('exits 2 for a YAML syntax error, saying where', () => {
    const r = validate('v-syntax.yaml', 'name: x\nseed: [1, 2\nfoo: : bar\n');
    expect(r.status).toBe(2);
    expect(problemLines(r.stderr)).toEqual([
      '  - YAML: Flow sequence in block collection must be sufficiently indented and end with a ] at line 3, column 1',
      '  - YAML: Nested mappings are not allowed in compact mappings at line 3, column 6',
    ]);
  });

  it('exits 2 for an alias bomb, naming the file, the line and the column, without a stack trace', () => {
    const r = validate('v-bomb.yaml', ALIAS_BOMB);
    expect(r.status).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe(`${r.path}: 1 problem\n  - YAML: Aliases repeat more than 10,000 values in all (an alias bomb) at line 5, column 8\n`);
  });

  it('exits 2 naming a misspelled key inside a distribution', () => {
    const r = validate('v-nested.yaml', 'extends: fast\nstages:\n  queue:\n    duration: { tpye: fixed, value: 3 }\n');
    expect(r.status).toBe(2);
    expect(r.stderr).toBe(
      [
        `${r.path}: 2 problems`,
        '  - stages.queue.duration.tpye: unknown key, did you mean type? (expected one of: type, value, min, max, median, p95)',
        '  - stages.queue.duration.type: required, but missing (expected one of "fixed", "uniform", "lognormal")',
        '',
      ].join('\n'),
    );
  });

  it('exits 2 for a YAML syntax error, saying its line and column, not the text of the file', () => {
    const r = validate('v-indent.yaml', 'name: x\nclock:\n  mode: manual\n speed: 2\n');
    expect(r.status).toBe(2);
    expect(r.stderr).toBe([`${r.path}: 1 problem`, '  - YAML: All mapping items must start at the same column at line 4, column 1', ''].join('\n'));
  });

  it('exits 2 printing every problem of a file with several', () => {
    const r = validate(
      'v-all.yaml',
      [
        'extends: fast',
        'bogus: 1',
        'rate_limits:',
        '  capacity: lots',
        'stages:',
        '  queue:',
        '    duration: { type: uniform, min: 5, max: 1 }',
        'compliance:',
        '  claim_linking:',
        '    rules:',
        '      - pattern: "([unclosed"',
        '',
      ].join('\n'),
    );
    expect(r.status).toBe(2);
    const lines = problemLines(r.stderr);
    for (const field of ['bogus', 'rate_limits.capacity', 'stages.queue.duration', 'compliance.claim_linking.rules[0].pattern']) {
      expect(lines.some((l) => l.startsWith(`  - ${field}:`)), `${field} in:\n${r.stderr}`).toBe(true);
    }
    expect(lines).toHaveLength(4);
  });

  it('exits 2 for a file that does not exist', () => {
    const result = run(['validate', join(dir, 'absent.yaml')]);
    expect(result.status).toBe(2);
  });
});

describe('sim openapi', () => {
  it('prints openapi.yaml', () => {
    const result = run(['openapi']);
    expect(result.status).toBe(0);
    expect(result.stdout.startsWith('openapi: 3.1')).toBe(true);
    expect(result.stdout).toBe(readFileSync(join(ROOT, 'openapi.yaml'), 'utf8'));
  });
});

describe('sim help', () => {
  it('prints the help, every flag and command, and exits 0', () => {
    const result = run(['help']);
    expect(result.status).toBe(0);
    expect(result.stderr).toBe('');
    expect(result.stdout.startsWith('Usage: sim [options] [command]\n')).toBe(true);
    for (const text of ['--port <n>', '--scenario <name|path>', 'env: SIM_SCENARIO', 'scenarios', 'validate <file>', 'openapi', 'help [command]']) {
      expect(result.stdout).toContain(text);
    }
    expect(run(['--help']).stdout).toBe(result.stdout);
  });

  it("prints one command's help with sim help <command>, as sim <command> --help does", () => {
    const result = run(['help', 'validate']);
    expect(result.status).toBe(0);
    expect(result.stdout.startsWith('Usage: sim validate [options] <file>\n')).toBe(true);
    expect(run(['validate', '--help']).stdout).toBe(result.stdout);
  });

  it('exits 2 naming a command it does not have', () => {
    const result = run(['help', 'scenaros']);
    expect(result.status).toBe(2);
    expect(result.stderr.split('\n').slice(0, 2)).toEqual(["error: unknown command 'scenaros'", '(Did you mean scenarios?)']);
  });
});

describe('sim --version', () => {
  it("exits 0 printing the package's version", () => {
    const result = run(['--version']);
    expect(result.status).toBe(0);
    const { version } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };
    expect(result.stdout.trim()).toBe(version);
  });
});

describe('sim validate (not a file)', () => {
  it('exits 2 with a message naming a directory, not a stack trace', () => {
    const result = spawnSync(process.execPath, [CLI, 'validate', tmpdir()], { cwd: ROOT, env: cleanEnv(), encoding: 'utf8' });
    expect(result.status).toBe(2);
    expect(result.stderr).toContain('file: expected a YAML file, got a directory');
    expect(result.stderr).not.toMatch(/\n\s+at /);
  });
});
