/**
 * The control plane's defaults as the `sim` command sets them, run as a real process
 * (`node dist/cli.js`): a token generated and printed on a non-loopback address, `--control-token`
 * and `none`, `--allowed-hosts`, `--scenarios-dir`, the 1 MiB limit at start, and the commands that
 * call a running simulator's control API with the token (`sim report`, `sim replay --target`).
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { call } from './helpers.js';
import { CLI, cleanEnv, childProcesses, getWithHost } from './processes.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'sim-security-cli-'));
const children = childProcesses();

afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface Started {
  /** The start-up lines printed on stdout. */
  lines: string[];
  /** The address to reach it at (127.0.0.1 and the port it printed). */
  url: string;
  port: number;
  stderr: () => string;
}

/** Starts `sim` and resolves once it printed `count` lines on stdout. */
function start(args: string[], count: number, env: Record<string, string> = {}): Promise<Started> {
  const child = spawn(process.execPath, [CLI, '--port', '0', '--scenario', 'fast', '--clock', 'manual', ...args], {
    cwd: ROOT,
    env: cleanEnv(env),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  let out = '';
  let err = '';
  child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`not ${count} lines within 10 s; stdout: ${out}; stderr: ${err}`)), 10_000);
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const lines = out.split('\n').slice(0, -1);
      if (lines.length < count) return;
      clearTimeout(timer);
      const port = Number(/:(\d+) \(scenario/.exec(lines[0] as string)?.[1]);
      resolve({ lines, port, url: `http://127.0.0.1:${port}`, stderr: () => err });
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`exited with ${code}; stderr: ${err}`));
    });
  });
}

function run(args: string[], env: Record<string, string> = {}): Promise<{ status: number | null; stdout: string; stderr: string }> {
  // Asynchronous: the simulator it talks to may live in a child started by this test.
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CLI, ...args], { cwd: ROOT, env: cleanEnv(env), stdio: ['ignore', 'pipe', 'pipe'] });
    children.add(child);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.once('close', (status) => resolve({ status, stdout, stderr }));
  });
}

/** A control POST with the control token (if any) as its Bearer key; an answer that is not JSON fails. */
async function post(url: string, path: string, token?: string, body?: unknown): Promise<{ status: number; body: any }> {
  const answer = await call(url, 'POST', path, { key: token, body });
  return { status: answer.status, body: JSON.parse(answer.text) };
}

describe('sim on a non-loopback address', () => {
  it('generates a control token, prints it in the dashboard address and on its own line, and requires it on /_sim', async () => {
    const sim = await start(['--host', '0.0.0.0'], 3);
    expect(sim.lines[0]).toMatch(/^sim listening on http:\/\/0\.0\.0\.0:\d+ \(scenario fast, seed \d+, clock manual\)$/);
    const fromDashboard = /^dashboard: http:\/\/localhost:\d+\/_sim\/#token=([\w-]+)$/.exec(sim.lines[1] as string)?.[1];
    const fromLine = /^control token: ([\w-]+) \(generated at start/.exec(sim.lines[2] as string)?.[1];
    expect(fromDashboard).toBeDefined();
    expect(fromLine).toBe(fromDashboard);
    expect(fromLine!.length).toBeGreaterThanOrEqual(32);

    expect((await fetch(`${sim.url}/_sim/health`)).status).toBe(200);
    expect((await post(sim.url, '/_sim/reset')).body.error.code).toBe('control_token_required');
    expect((await post(sim.url, '/_sim/shutdown', 'guess')).body.error.code).toBe('invalid_control_token');
    const advanced = await post(sim.url, '/_sim/clock/advance', fromLine, { seconds: 5 });
    expect(advanced.status).toBe(200);
    // No Host check there: the token protects control instead.
    expect((await getWithHost(sim.port, '/_sim/health', 'sim.lan.example:8080')).status).toBe(200);
  });

  it('a new token at every start', async () => {
    const [a, b] = await Promise.all([start(['--host', '0.0.0.0'], 3), start(['--host', '0.0.0.0'], 3)]);
    expect(a.lines[2]).not.toBe(b.lines[2]);
  });

  it('--control-token none opens the control API and prints a warning line', async () => {
    const sim = await start(['--host', '0.0.0.0', '--control-token', 'none'], 2);
    expect(sim.lines[1]).toMatch(/^dashboard: http:\/\/localhost:\d+\/_sim\/$/);
    // Written before the start-up lines, on another pipe: it may arrive a moment later.
    for (let i = 0; i < 100 && !sim.stderr().endsWith('\n'); i++) await new Promise((r) => setTimeout(r, 50));
    const warning = new RegExp(`^sim: warning: --control-token none: the control API \\(/_sim[^\\n]*needs no token; anyone who can reach 0\\.0\\.0\\.0:${sim.port} can use it\\.\\n$`);
    expect(sim.stderr()).toMatch(warning);
    expect((await post(sim.url, '/_sim/reset')).status).toBe(200);
  });

  it('SIM_CONTROL_TOKEN sets the token, which is not printed', async () => {
    const sim = await start(['--host', '0.0.0.0'], 2, { SIM_CONTROL_TOKEN: 'team-token-0123456789' });
    expect(sim.lines[1]).toMatch(/^dashboard: http:\/\/localhost:\d+\/_sim\/$/);
    expect(sim.lines.join('\n') + sim.stderr()).not.toContain('team-token-0123456789');
    expect((await post(sim.url, '/_sim/reset')).status).toBe(401);
    expect((await post(sim.url, '/_sim/reset', 'team-token-0123456789')).status).toBe(200);
  });
});

describe('sim on a loopback address (the default)', () => {
  it('needs no token, and refuses a Host it does not serve unless --allowed-hosts names it', async () => {
    const sim = await start(['--allowed-hosts', 'sim.internal, .dev.test'], 2);
    expect(sim.lines[1]).toMatch(/^dashboard: http:\/\/localhost:\d+\/_sim\/$/);
    expect((await post(sim.url, '/_sim/reset')).status).toBe(200);
    expect((await getWithHost(sim.port, '/_sim/health', 'sim.internal:8080')).status).toBe(200);
    expect((await getWithHost(sim.port, '/_sim/health', 'app.dev.test')).status).toBe(200);
    const refused = await getWithHost(sim.port, '/v1/videos', 'evil.example');
    expect(refused).toMatchObject({ status: 403, body: { error: { type: 'permission_error', code: 'host_not_allowed' } } });
  });

  it('--control-token TOKEN makes the token needed there too', async () => {
    const sim = await start(['--control-token', 's3cret-token-0123456789'], 2);
    expect((await post(sim.url, '/_sim/reset')).status).toBe(401);
    expect((await post(sim.url, '/_sim/reset', 's3cret-token-0123456789')).status).toBe(200);
  });

  it('refuses a control token that cannot travel in a header, and an --allowed-hosts entry that is not a host name (exit 2)', () => {
    const token = spawnSync(process.execPath, [CLI, '--control-token', 'two words'], { env: cleanEnv(), encoding: 'utf8', timeout: 10_000 });
    expect(token.status).toBe(2);
    expect(token.stderr).toMatch(/--control-token must be printable ASCII without spaces/);
    const hosts = spawnSync(process.execPath, [CLI, '--allowed-hosts', 'http://a.test/'], { env: cleanEnv(), encoding: 'utf8', timeout: 10_000 });
    expect(hosts.status).toBe(2);
    expect(hosts.stderr).toMatch(/--allowed-hosts/);
  });

  it('SIM_CONTROL_ORIGINS lets those origins call /_sim with CORS; a value that is not an origin is exit 2 naming --control-origin', async () => {
    const sim = await start([], 2, { SIM_CONTROL_ORIGINS: 'http://localhost:5173,https://toolbar.example.test' });
    const res = await fetch(`${sim.url}/_sim/clock`, { headers: { Origin: 'https://toolbar.example.test' } });
    expect(res.status).toBe(200);
    expect(res.headers.get('access-control-allow-origin')).toBe('https://toolbar.example.test');
    expect((await fetch(`${sim.url}/_sim/clock`, { headers: { Origin: 'http://localhost:5174' } })).status).toBe(403);
    const bad = spawnSync(process.execPath, [CLI, '--control-origin', 'localhost:5173'], { env: cleanEnv(), encoding: 'utf8', timeout: 10_000 });
    expect(bad.status).toBe(2);
    expect(bad.stderr).toContain("--control-origin <o1,o2>' argument 'localhost:5173' is invalid. expected origins separated by commas: 'localhost:5173' is not an origin");
  });

  it('refuses a control token shorter than 16 characters (exit 2), naming the flag or the variable it came from', () => {
    const flag = spawnSync(process.execPath, [CLI, '--control-token', 'fifteen-chars-x'], { env: cleanEnv(), encoding: 'utf8', timeout: 10_000 });
    expect(flag.status).toBe(2);
    expect(flag.stdout).toBe('');
    expect(flag.stderr).toBe(
      'sim: --control-token must be at least 16 characters long (got 15): a short token can be guessed; make one with `openssl rand -hex 16`, or give none for no token.\n',
    );
    const env = spawnSync(process.execPath, [CLI, '--host', '0.0.0.0'], { env: cleanEnv({ SIM_CONTROL_TOKEN: 'short' }), encoding: 'utf8', timeout: 10_000 });
    expect(env.status).toBe(2);
    expect(env.stderr).toMatch(/^sim: SIM_CONTROL_TOKEN must be at least 16 characters long \(got 5\)/);
  });
});

describe('sim --scenarios-dir and the 1 MiB limit', () => {
  it('a reset names a file of --scenarios-dir by its file name; a missing directory is a usage error', async () => {
    const scenarios = join(dir, 'scenarios');
    mkdirSync(scenarios, { recursive: true });
    writeFileSync(join(scenarios, 'team.yaml'), 'name: team\nextends: fast\n');
    const sim = await start(['--scenarios-dir', scenarios], 2);
    expect((await post(sim.url, '/_sim/reset', undefined, { scenario: 'team.yaml' })).body.scenario).toBe('team');
    const refused = await post(sim.url, '/_sim/reset', undefined, { scenario: join(scenarios, 'team.yaml') });
    expect(refused).toMatchObject({ status: 400, body: { error: { code: 'invalid_parameter', param: 'scenario' } } });

    const missing = spawnSync(process.execPath, [CLI, '--scenarios-dir', join(dir, 'nowhere')], { env: cleanEnv(), encoding: 'utf8', timeout: 10_000 });
    expect(missing.status).toBe(2);
    expect(missing.stderr).toMatch(/--scenarios-dir .*nowhere: expected a directory/);
  });

  it('a scenario file over 1 MiB given at start exits 2 naming the file, unparsed', () => {
    const big = join(dir, 'big-start.yaml');
    writeFileSync(big, `name: [unclosed\n# ${'x'.repeat(1024 * 1024)}\n`);
    const result = spawnSync(process.execPath, [CLI, '--scenario', big], { env: cleanEnv(), encoding: 'utf8', timeout: 10_000 });
    expect(result.status).toBe(2);
    expect(result.stderr).toContain(big);
    expect(result.stderr).toMatch(/at most 1 MiB/);
    expect(result.stderr).not.toMatch(/unclosed|flow/i);
  });
});

describe('commands that call a running simulator send its control token', () => {
  it('sim report --control-token (or SIM_CONTROL_TOKEN); without it, it says what is missing', async () => {
    const sim = await start(['--control-token', 'report-token-0123456789'], 2);
    const without = await run(['report', '--url', sim.url, '--api-key', 'sk_test_r']);
    expect(without.status).toBe(2);
    expect(without.stderr).toMatch(/answered 401: .*control token.*\(give its control token with --control-token or SIM_CONTROL_TOKEN\)/);
    const withFlag = await run(['report', '--url', sim.url, '--api-key', 'sk_test_r', '--control-token', 'report-token-0123456789']);
    expect(withFlag.stdout).toContain('Client report for sk_test_r');
    const withEnv = await run(['report', '--url', sim.url, '--api-key', 'sk_test_r'], { SIM_CONTROL_TOKEN: 'report-token-0123456789' });
    expect(withEnv.stdout).toContain('Client report for sk_test_r');
  });

  it('sim replay --target --control-token replays a transcript against a simulator that has a token', async () => {
    const transcript = join(dir, 'replay.jsonl');
    const recorder = await start(['--record', transcript], 2);
    const headers = { Authorization: 'Bearer sk_test_replay', 'Content-Type': 'application/json' };
    const created = await fetch(`${recorder.url}/v1/videos`, { method: 'POST', headers, body: JSON.stringify({ model: 'video-3.2', prompt: 'A kite.' }) });
    expect(created.status).toBe(200);
    expect((await post(recorder.url, '/_sim/clock/advance', undefined, { seconds: 10 })).status).toBe(200);
    expect((await post(recorder.url, '/_sim/shutdown')).status).toBe(200);

    const target = await start(['--control-token', 'replay-token-0123456789', '--base-url', `http://localhost:${recorder.port}`], 2);
    const refused = await run(['replay', transcript, '--target', target.url]);
    expect(refused.status).toBe(2);
    expect(refused.stderr).toMatch(/401/);
    const replayed = await run(['replay', transcript, '--target', target.url, '--control-token', 'replay-token-0123456789']);
    expect(replayed.stdout).toBe('skipped seq 3 POST /_sim/shutdown: not sent, it would stop the target\nreplayed 2 requests: 2 identical\n');
    expect(replayed.status).toBe(0);
  });
});
