/**
 * The `sim` command's sharp edges, run as a real process (`node dist/cli.js`, built by
 * `npm run build`, which `npm test` runs first): a misspelled scenario name gets a suggestion, a bad
 * `extends` does not hide a file's other problems, `--clock manual` with `--speed` is refused, a
 * start that cannot happen says why in one line, and a reader that stops reading
 * (`sim openapi | head -1`) ends the command quietly.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { CLI, cleanEnv } from './processes.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'sim-cli-precisions-'));

afterAll(() => rmSync(dir, { recursive: true, force: true }));

function run(args: string[], env: Record<string, string> = {}) {
  const result = spawnSync(process.execPath, [CLI, ...args], { cwd: ROOT, env: cleanEnv(env), encoding: 'utf8', timeout: 10_000 });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

const BUNDLED = 'compliance, default, fast, flaky, low-balance, rate-limited, slow, unreliable-network';

describe('sim --scenario NAME', () => {
  it('exits 2 suggesting the closest bundled scenario to a misspelled name', () => {
    const result = run(['--port', '0', '--scenario', 'flakey']);
    expect(result.status).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr).toBe(
      'sim: Invalid scenario flakey:\n' +
        `  - scenario: expected a bundled scenario (${BUNDLED}) or a path to a YAML file, got 'flakey'; did you mean flaky?\n`,
    );
  });

  it('suggests nothing for a name close to none', () => {
    const result = run(['--port', '0', '--scenario', 'production']);
    expect(result.status).toBe(2);
    expect(result.stderr).toContain("got 'production'\n");
    expect(result.stderr).not.toContain('did you mean');
  });
});

describe('sim validate (a bad extends)', () => {
  it("lists the file's other problems with a misspelled extends", () => {
    const path = join(dir, 'bad-extends.yaml');
    writeFileSync(path, 'extends: flakey\nbogus: 1\nrate_limits:\n  capacity: lots\n');
    const result = run(['validate', path]);
    expect(result.status).toBe(2);
    const problems = result.stderr.split('\n').filter((l) => l.startsWith('  - '));
    expect(problems).toEqual([
      `  - extends: expected a bundled scenario (${BUNDLED}) or the file name of a YAML file in the same directory (base.yaml), got 'flakey'; did you mean flaky?`,
      expect.stringMatching(/^ {2}- bogus: unknown key/),
      '  - rate_limits.capacity: expected integer, got string "lots"',
    ]);
  });

  it('lists its own problems and those of the file it extends, each of those after that file', () => {
    const parent = join(dir, 'bad-parent.yaml');
    writeFileSync(parent, 'extends: fast\nseed: abc\n');
    const child = join(dir, 'bad-child.yaml');
    writeFileSync(child, 'extends: ./bad-parent.yaml\nbogus: 1\n');
    const missing = join(dir, 'missing-parent.yaml');
    writeFileSync(missing, 'extends: ./nowhere.yaml\nbogus: 1\n');
    const problems = (file: string) => run(['validate', file]).stderr.split('\n').filter((l) => l.startsWith('  - '));
    expect(problems(child)).toEqual([expect.stringMatching(/^ {2}- bogus: unknown key/), `  - ${parent}: seed: expected integer, got string "abc"`]);
    expect(problems(missing)).toEqual([
      "  - extends: expected an existing YAML file at './nowhere.yaml', but there is none at this path",
      expect.stringMatching(/^ {2}- bogus: unknown key/),
    ]);
  });
});

describe('sim --clock manual --speed X', () => {
  const message = (clock: string, speed: string) =>
    `error: ${clock} and ${speed} conflict: the speed applies to the realtime clock, and the manual clock moves only through ` +
    'POST /_sim/clock/advance. Drop the speed, or use --clock realtime.\n(run sim --help for every flag)\n';

  it('exits 2 naming both flags', () => {
    const result = run(['--port', '0', '--clock', 'manual', '--speed', '20']);
    expect(result).toEqual({ status: 2, stdout: '', stderr: message('--clock manual', '--speed 20') });
  });

  it('exits 2 naming the environment variables when they set them', () => {
    expect(run(['--port', '0'], { SIM_CLOCK: 'manual', SIM_SPEED: '3' }).stderr).toBe(message('SIM_CLOCK=manual', 'SIM_SPEED=3'));
    expect(run(['--port', '0', '--clock=manual'], { SIM_SPEED: '0.5' })).toEqual({ status: 2, stdout: '', stderr: message('--clock manual', 'SIM_SPEED=0.5') });
  });
});

describe('sim: one clear message when it cannot start', () => {
  it.each([
    ['--state', 'the state file', 2],
    ['--record', 'the transcript', 2],
  ])('%s in a directory that does not exist: one sim: line naming the file, no lock-file line before it', (flag, what, status) => {
    const file = join(dir, 'missing', 'x');
    const result = run(['--port', '0', flag, file]);
    expect(result).toEqual({ status, stdout: '', stderr: `sim: cannot write ${what} ${file}: ENOENT\n` });
  });

  it('a port in use suggests --port 0', async () => {
    const { createServer } = await import('node:net');
    const busy = createServer();
    await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve));
    try {
      const port = (busy.address() as { port: number }).port;
      const result = run(['--port', String(port)]);
      expect(result).toEqual({
        status: 1,
        stdout: '',
        stderr: `sim: cannot listen on 127.0.0.1:${port}: the port is in use (EADDRINUSE); stop what listens there, choose another --port, or --port 0 for a free one\n`,
      });
    } finally {
      busy.close();
    }
  });
});

describe('a reader that stops reading', () => {
  it.each([['openapi'], ['scenarios'], ['help'], ['validate', 'scenarios/fast.yaml']])('ends sim %s quietly with status 0 when its reader has closed the pipe (as in sim openapi | head -1)', async (...args) => {
    const child = spawn(process.execPath, [CLI, ...args], { cwd: ROOT, env: cleanEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    // The reading end closed before the command writes (head closes it after its first line; a
    // pipe's buffer could hide that from a command as short as this one): every write fails.
    child.stdout.destroy();
    const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
    expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
  });
});
