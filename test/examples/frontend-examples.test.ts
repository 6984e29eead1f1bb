/**
 * The frontend examples as a user runs them: `npm pack` once, then for each example a copy of its
 * folder (its package.json and package-lock.json included) in a fresh directory, its
 * `video-service-sim` dependency pointed at the tarball instead of the clone (`file:../..`),
 * `npm install`, and the example's own `npm test`. Prints how long each install and run took, and
 * keeps what an example saves under its `artifacts/` (screenshots) in artifacts/examples/NAME/.
 */
import { spawn } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const ARTIFACTS = join(ROOT, 'artifacts', 'examples');
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** The examples, in the order they run; `browser`: its test drives Chromium. */
const ALL: { name: string; browser: boolean; timeoutMs: number }[] = [
  { name: 'msw-vitest', browser: false, timeoutMs: 5 * 60_000 },
  { name: 'msw-browser', browser: true, timeoutMs: 5 * 60_000 },
  { name: 'playwright', browser: true, timeoutMs: 5 * 60_000 },
  { name: 'storybook', browser: true, timeoutMs: 12 * 60_000 },
];
/** `EXAMPLES=msw-vitest,storybook npm run test:examples` runs only those. */
const only = process.env.EXAMPLES?.split(',').map((n) => n.trim()).filter(Boolean);
const EXAMPLES = only ? ALL.filter((e) => only.includes(e.name)) : ALL;
if (only && EXAMPLES.length !== only.length) throw new Error(`EXAMPLES names an unknown example: ${only.join(', ')} (known: ${ALL.map((e) => e.name).join(', ')})`);

const work = mkdtempSync(join(tmpdir(), 'sim-examples-'));
let tarball = '';
const timings: Record<string, { install?: number; test?: number }> = {};

const { FORCE_COLOR: _forceColor, ...inherited } = process.env;
const ENV: NodeJS.ProcessEnv = {
  ...inherited,
  NO_COLOR: '1',
  CI: '1',
  CHROMIUM_PATH: CHROMIUM,
  PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD: '1',
  STORYBOOK_DISABLE_TELEMETRY: '1',
  npm_config_audit: 'false',
  npm_config_fund: 'false',
  npm_config_update_notifier: 'false',
  npm_config_loglevel: 'error',
  NO_UPDATE_NOTIFIER: '1',
};

const log = (line: string) => console.log(`[test:examples] ${line}`);
const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

/** Runs a command to completion; answers its exit code, its output (ANSI colours removed) and how long it took. */
function run(cmd: string, args: string[], cwd: string, timeoutMs: number): Promise<{ code: number | null; output: string; ms: number }> {
  const t0 = Date.now();
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { cwd, env: ENV, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    // The whole process group: an example's test may leave a browser or a server behind on a timeout.
    const timer = setTimeout(() => {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        child.kill('SIGKILL');
      }
    }, timeoutMs);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, output: output.replace(/\u001b\[[0-9;]*m/g, ''), ms: Date.now() - t0 });
    });
    child.on('error', (e) => {
      clearTimeout(timer);
      resolve({ code: -1, output: `${output}${e.message}`, ms: Date.now() - t0 });
    });
  });
}

function tail(text: string, lines = 80): string {
  return text.trim().split('\n').slice(-lines).join('\n');
}

beforeAll(async () => {
  log(`working in ${work}`);
  // EXAMPLES_TARBALL=path: a tarball packed before (npm pack), instead of packing again.
  if (process.env.EXAMPLES_TARBALL) {
    tarball = process.env.EXAMPLES_TARBALL;
    if (!existsSync(tarball)) throw new Error(`EXAMPLES_TARBALL: no file ${tarball}`);
    log(`the tarball ${tarball}`);
    return;
  }
  const packDir = join(work, 'pack');
  mkdirSync(packDir);
  const packed = await run('npm', ['pack', '--json', '--pack-destination', packDir], ROOT, 5 * 60_000);
  if (packed.code !== 0) throw new Error(`npm pack exited ${packed.code}:\n${tail(packed.output)}`);
  const [info] = JSON.parse(packed.output.slice(packed.output.indexOf('['), packed.output.lastIndexOf(']') + 1)) as { filename: string }[];
  tarball = join(packDir, info!.filename);
  log(`npm pack: ${info!.filename} in ${seconds(packed.ms)}`);
});

afterAll(() => {
  const rows = Object.entries(timings).map(([name, t]) => `${name.padEnd(12)} install ${t.install === undefined ? '-' : seconds(t.install)}, npm test ${t.test === undefined ? '-' : seconds(t.test)}`);
  log(`timings:\n  ${rows.join('\n  ')}`);
  mkdirSync(ARTIFACTS, { recursive: true });
  writeFileSync(join(ARTIFACTS, 'timings.json'), `${JSON.stringify(timings, null, 2)}\n`);
  if (process.env.KEEP_EXAMPLES_DIR) log(`kept ${work}`);
  else rmSync(work, { recursive: true, force: true });
});

describe.sequential('examples/', () => {
  for (const example of EXAMPLES) {
    it(`${example.name}: npm install (the packed tarball) and npm test`, { timeout: example.timeoutMs + 60_000 }, async () => {
      if (example.browser && !existsSync(CHROMIUM)) {
        throw new Error(`${CHROMIUM} is missing: install Debian's package (apt-get install -y chromium); browsers are never downloaded.`);
      }
      const source = join(ROOT, 'examples', example.name);
      const project = join(work, example.name);
      cpSync(source, project, {
        recursive: true,
        filter: (src) => !/(^|[\\/])(node_modules|dist|artifacts|storybook-static|test-results|playwright-report)$/.test(src),
      });
      // The clone's `file:../..` becomes the tarball; everything else installs from the example's lock file.
      const pkgFile = join(project, 'package.json');
      const pkg = JSON.parse(readFileSync(pkgFile, 'utf8')) as { devDependencies: Record<string, string> };
      expect(pkg.devDependencies['video-service-sim'], 'the example takes the simulator from the clone').toBe('file:../..');
      pkg.devDependencies['video-service-sim'] = `file:${tarball}`;
      writeFileSync(pkgFile, `${JSON.stringify(pkg, null, 2)}\n`);
      const lockBefore = readFileSync(join(project, 'package-lock.json'), 'utf8');
      timings[example.name] = {};

      const install = await run('npm', ['install', '--no-audit', '--no-fund'], project, example.timeoutMs);
      timings[example.name]!.install = install.ms;
      log(`${example.name}: npm install in ${seconds(install.ms)}`);
      expect(install.code, `npm install exited ${install.code}:\n${tail(install.output)}`).toBe(0);
      // Whether the committed lock file still holds what installs (the simulator's own entry aside).
      const others = (lock: string) => {
        const { packages } = JSON.parse(lock) as { packages: Record<string, { version?: string }> };
        return Object.entries(packages)
          .filter(([path]) => path !== '' && path !== 'node_modules/video-service-sim')
          .map(([path, p]) => `${path}@${p.version}`)
          .sort();
      };
      const [before, after] = [others(lockBefore), others(readFileSync(join(project, 'package-lock.json'), 'utf8'))];
      const drift = [...after.filter((p) => !before.includes(p)), ...before.filter((p) => !after.includes(p)).map((p) => `-${p}`)];
      if (drift.length > 0) log(`${example.name}: its package-lock.json is out of date (npm install in examples/${example.name} refreshes it): ${drift.slice(0, 10).join(', ')}`);

      const test = await run('npm', ['test'], project, example.timeoutMs);
      timings[example.name]!.test = test.ms;
      log(`${example.name}: npm test in ${seconds(test.ms)}`);
      for (const line of test.output.split('\n').filter((l) => /✓|✗|×|Tests\s|passed|failed/.test(l))) log(`  ${line.trim()}`);
      const saved = join(project, 'artifacts');
      if (existsSync(saved)) {
        rmSync(join(ARTIFACTS, example.name), { recursive: true, force: true });
        cpSync(saved, join(ARTIFACTS, example.name), { recursive: true });
        log(`${example.name}: its artifacts are in artifacts/examples/${example.name}/`);
      }
      expect(test.code, `npm test exited ${test.code}:\n${tail(test.output, 120)}`).toBe(0);
    });
  }
});
