/**
 * The examples in examples/ stay in step with the simulator: they parse, use only environment
 * variables the CLI reads, name bundled scenarios, and point at files that exist. The simulator's
 * steps of the GitHub Actions job are run here as written (bash, a free port for 8080); the
 * downstream vitest example is run for real by package.test.ts, against the packed tarball. The
 * compose file needs a Docker engine and is checked for shape only.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { listBundledScenarios } from '../../src/scenarios/load.js';
import { freePort } from '../processes.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const EXAMPLES = join(ROOT, 'examples');
const read = (path: string) => readFileSync(join(EXAMPLES, path), 'utf8');

/** The environment variables behind the server's flags, read from src/commands/start.ts. */
const CLI_ENV = [...readFileSync(join(ROOT, 'src', 'commands', 'start.ts'), 'utf8').matchAll(/\.env\('([A-Z_]+)'\)/g)].map((m) => m[1]!);
const SCENARIOS = listBundledScenarios().map((s) => s.name);

function expectSimEnvironment(env: Record<string, string>): void {
  for (const name of Object.keys(env).filter((k) => k.startsWith('SIM_') || k === 'PORT')) {
    expect(CLI_ENV, `${name} is not read by the CLI`).toContain(name);
  }
  if (env.SIM_SCENARIO) expect(SCENARIOS).toContain(env.SIM_SCENARIO);
  if (env.SIM_CLOCK) expect(['manual', 'realtime']).toContain(env.SIM_CLOCK);
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Whether a process (not a child of this one) is gone within `ms`, checked every 50 ms. */
async function exitedWithin(pid: number, ms: number): Promise<boolean> {
  for (const deadline = Date.now() + ms; Date.now() < deadline; await new Promise((r) => setTimeout(r, 50))) {
    if (!isRunning(pid)) return true;
  }
  return !isRunning(pid);
}

describe('examples/', () => {
  it('the CLI reads exactly the environment variables the Dockerfile and README promise', () => {
    const dockerfile = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    // "Every flag of `sim` has an environment variable: PORT, ... ." and "Every flag has an environment variable (`PORT`, ...)"
    const promised = (text: string, from: RegExp, end: string) => {
      const start = text.search(from);
      expect(start, String(from)).toBeGreaterThanOrEqual(0);
      const sentence = text.slice(start, text.indexOf(end, start));
      return [...sentence.matchAll(/\b(PORT|SIM_[A-Z_]+)\b/g)].map((m) => m[1]!).sort();
    };
    const cli = [...CLI_ENV].sort();
    expect(cli).toContain('PORT');
    expect(promised(dockerfile, /Every flag of `sim` has an environment variable:/, '. ')).toEqual(cli);
    expect(promised(readme, /Every flag has an environment variable \(/, ')')).toEqual(cli);
  });

  describe('github-actions.yml', () => {
    interface Step {
      name?: string;
      uses?: string;
      run?: string;
      if?: string;
      env?: Record<string, string>;
      with?: Record<string, string>;
      'working-directory'?: string;
    }
    const workflow = parse(read('github-actions.yml')) as { jobs: Record<string, { env: Record<string, string>; steps: Step[] }> };
    const job = Object.values(workflow.jobs)[0]!;
    const step = (name: string): Step => {
      const found = job.steps.find((s) => s.name === name);
      if (!found) throw new Error(`no step named '${name}' in github-actions.yml`);
      return found;
    };

    it('checks out and builds the simulator, starts it in the background, waits for its health, stops it always', () => {
      expect(step('Check out the simulator').with).toMatchObject({ path: 'video-service-sim' });
      expect(step('Install the simulator')).toMatchObject({ 'working-directory': 'video-service-sim', run: expect.stringMatching(/^npm ci\b/) });
      const start = step('Start the simulator');
      expect(start.env).toMatchObject({ PORT: '8080', SIM_SCENARIO: 'fast', SIM_CLOCK: 'manual' });
      expectSimEnvironment(start.env!);
      expect(step('Wait for the simulator').run).toContain('$SIM_URL/_sim/health');
      const stop = step('Stop the simulator');
      expect(stop.if).toBe('always()');
      expect(stop.run).toMatch(/curl .*-X POST "\$SIM_URL\/_sim\/shutdown" \|\| kill "\$\(cat sim\.pid\)"/);
      expect(job.env.SIM_URL).toBe('http://localhost:8080');
      const names = job.steps.map((s) => s.name);
      expect(names.indexOf('Stop the simulator')).toBe(names.length - 1);
    });

    it("runs as written: the simulator's steps start it from a built clone, it answers, and the last step stops it", async () => {
      if (!existsSync(join(ROOT, 'dist', 'cli.js'))) throw new Error('dist/cli.js is missing: run "npm run build" first.');
      // The runner's workspace: the app's checkout, with the simulator checked out under
      // video-service-sim/ (here a link to this repository, built). A free port stands in for 8080.
      const workspace = mkdtempSync(join(tmpdir(), 'sim-gha-'));
      symlinkSync(ROOT, join(workspace, 'video-service-sim'));
      const port = await freePort();
      const simUrl = `http://localhost:${port}`;
      const env: NodeJS.ProcessEnv = { ...process.env };
      for (const name of Object.keys(env)) if (name === 'PORT' || name.startsWith('SIM_')) delete env[name];
      Object.assign(env, job.env, { SIM_URL: simUrl, VIDEO_API_BASE_URL: simUrl });
      // GitHub's default shell for `run` on Linux.
      const runStep = (s: Step) =>
        spawnSync('bash', ['--noprofile', '--norc', '-eo', 'pipefail', '-c', s.run!], {
          cwd: join(workspace, s['working-directory'] ?? '.'),
          env: { ...env, ...s.env, ...(s.env?.PORT ? { PORT: String(port) } : {}) },
          encoding: 'utf8',
          stdio: ['ignore', 'pipe', 'pipe'],
          timeout: 60_000,
        });
      let pid: number | undefined;
      try {
        const started = runStep(step('Start the simulator'));
        expect(started.status, started.stderr).toBe(0);
        pid = Number(readFileSync(join(workspace, 'sim.pid'), 'utf8'));
        const waited = runStep(step('Wait for the simulator'));
        expect(waited.status, waited.stderr).toBe(0);
        expect(JSON.parse(waited.stdout)).toMatchObject({ status: 'ok', scenario: 'fast', seed: 42, clock: { mode: 'manual' } });

        // What the app's tests would do, then the step that runs when they fail.
        const created = await fetch(`${simUrl}/v1/videos`, {
          method: 'POST',
          headers: { Authorization: `Bearer ${job.env.VIDEO_API_KEY}`, 'Content-Type': 'application/json' },
          body: JSON.stringify({ model: 'video-3.2', prompt: 'A kite over a windy beach.' }),
        });
        expect(created.status).toBe(200);
        const reported = runStep(step('Client report'));
        expect(reported.status, reported.stderr).toBe(0);
        expect(reported.stdout).toContain(job.env.VIDEO_API_KEY);
        const shown = runStep(step('Show what the tests sent to the video service'));
        expect(shown.status, shown.stderr).toBe(0);
        expect(shown.stdout).toContain((await created.json()).id);
        expect(shown.stdout).toContain('sim listening on');

        const stopped = runStep(step('Stop the simulator'));
        expect(stopped.status, stopped.stderr).toBe(0);
        expect(await exitedWithin(pid, 3_000), `pid ${pid} still running after the stop step`).toBe(true);
        pid = undefined;
        // The transcript the failure step uploads was recorded: its header, then the create.
        const transcript = readFileSync(join(workspace, 'sim-transcript.jsonl'), 'utf8').trim().split('\n');
        expect(JSON.parse(transcript[0] as string)).toMatchObject({ transcript: 1, seed: 42 });
        expect(JSON.parse(transcript[1] as string)).toMatchObject({ method: 'POST', path: '/v1/videos', status: 200 });
      } finally {
        if (pid !== undefined && isRunning(pid)) process.kill(pid, 'SIGKILL');
        rmSync(workspace, { recursive: true, force: true });
      }
    });
  });

  it('docker-compose.yml: the simulator (built from this repository) and a static app', () => {
    const compose = parse(read('docker-compose.yml')) as {
      services: Record<string, { build?: { context: string }; environment?: Record<string, string>; ports?: string[]; volumes?: string[] }>;
    };
    const sim = compose.services['video-sim']!;
    expect(existsSync(join(EXAMPLES, sim.build!.context, 'Dockerfile'))).toBe(true);
    // Published on the loopback address only, with a control token passed through (or generated).
    expect(sim.ports).toEqual(['127.0.0.1:8080:8080']);
    expect(sim.environment).toMatchObject({
      SIM_BASE_URL: 'http://localhost:8080',
      SIM_CDN_URL: 'http://localhost:8080/cdn',
      SIM_CONTROL_TOKEN: '${SIM_CONTROL_TOKEN:-}',
    });
    expect(read('docker-compose.yml')).toContain('docker compose -f examples/docker-compose.yml logs video-sim');
    expectSimEnvironment(sim.environment!);
    const web = compose.services.web!;
    const [hostDir] = web.volumes![0]!.split(':');
    expect(existsSync(join(EXAMPLES, hostDir!, 'index.html'))).toBe(true);
    expect(read('frontend/index.html')).toContain("const API = 'http://localhost:8080'");
  });

  it('the frontend examples (run by npm run test:examples): the simulator from the clone as its packed files, by its name, with a lock file and a README', () => {
    for (const name of ['msw-vitest', 'msw-browser', 'playwright', 'storybook']) {
      const pkg = JSON.parse(read(join(name, 'package.json'))) as { devDependencies: Record<string, string>; scripts: Record<string, string> };
      expect(pkg.devDependencies['video-service-sim'], name).toBe('file:../..');
      expect(pkg.devDependencies.msw, name).toMatch(/^\^3\./);
      expect(pkg.scripts.test, name).toBeDefined();
      expect(read(join(name, '.npmrc')), name).toMatch(/^install-links=true$/m);
      const lock = JSON.parse(read(join(name, 'package-lock.json'))) as { packages: Record<string, { resolved?: string }> };
      expect(lock.packages['node_modules/video-service-sim']?.resolved, name).toBe('file:../..');
      expect(read(join(name, 'README.md')), name).toMatch(/npm install[\s\S]*npm test/);
      const sources = spawnSync('git', ['ls-files', '*.ts', '*.mjs'], { cwd: join(EXAMPLES, name), encoding: 'utf8' }).stdout.trim().split('\n');
      expect(sources.length, name).toBeGreaterThan(1);
      const imports = sources.map((file) => read(join(name, file))).join('\n');
      expect(imports, name).toContain("from 'video-service-sim/msw'");
      expect(imports, name).not.toMatch(/from '(\.\.\/){2,}|\bsrc\/msw\b|dist\/browser/);
    }
  });

  it('vitest-downstream/: imports the package by its name, never the repository sources', () => {
    for (const file of ['global-setup.ts', 'in-process.test.ts', 'video-client.test.ts', 'sim-helpers.ts', 'video-client.ts']) {
      const source = read(join('vitest-downstream', file));
      expect(source, file).not.toMatch(/from '\.\.\/\.\.\/|src\//);
    }
    expect(read('vitest-downstream/global-setup.ts')).toContain("from 'video-service-sim'");
    expect(read('vitest-downstream/in-process.test.ts')).toContain("from 'video-service-sim'");
  });
});
