/**
 * The npm package as a user gets it: `npm pack`, then the downstream example
 * (examples/vitest-downstream, its package.json included) as a fresh project that installs the
 * tarball with `npm install --save-dev <tarball>`, as its README says; then both bins (`sim`,
 * `video-service-sim`) through npx, the package's exports through `import` and `require`, and the
 * example's own `npm test` and `npm run typecheck` with a smoke test added.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../processes.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const EXAMPLE_DIR = join(ROOT, 'examples', 'vitest-downstream');
const packageJsonBefore = readFileSync(join(ROOT, 'package.json'), 'utf8');
const pkg = JSON.parse(packageJsonBefore) as {
  name: string;
  scripts: Record<string, string>;
  version: string;
  bin: Record<string, string>;
  exports: Record<string, unknown>;
  files: string[];
  engines: { node: string };
  types: string;
};

const work = mkdtempSync(join(tmpdir(), 'sim-package-'));
const packDir = join(work, 'pack');
const project = join(work, 'project');
const installed = join(project, 'node_modules', pkg.name);
let tarball = '';
let packedFiles: string[] = [];
/** What `npm install <tarball>` printed (its warnings included). */
let installOutput = '';
const started: ChildProcess[] = [];

const { FORCE_COLOR: _forceColor, ...inherited } = process.env;
const ENV: NodeJS.ProcessEnv = {
  ...inherited,
  NO_COLOR: '1',
  npm_config_audit: 'false',
  npm_config_fund: 'false',
  npm_config_update_notifier: 'false',
  npm_config_loglevel: 'error',
  NO_UPDATE_NOTIFIER: '1',
  CI: '1',
};

function log(line: string): void {
  console.log(`[test:package] ${line}`);
}

const stripAnsi = (text: string) => text.replace(/\u001b\[[0-9;]*m/g, '');

interface Result {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a command to completion (never throws). */
function run(cmd: string, args: string[], cwd: string, timeoutMs = 10 * 60_000): Promise<Result> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { cwd, env: ENV, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout: stripAnsi(stdout), stderr: stripAnsi(stderr) });
    });
    child.on('error', (e) => {
      clearTimeout(timer);
      resolve({ code: -1, stdout, stderr: `${stderr}${e.message}` });
    });
  });
}

async function runOk(cmd: string, args: string[], cwd: string, timeoutMs?: number): Promise<string> {
  const t0 = Date.now();
  const r = await run(cmd, args, cwd, timeoutMs);
  const took = `${((Date.now() - t0) / 1000).toFixed(1)} s`;
  if (r.code !== 0) {
    const tail = `${r.stdout}\n${r.stderr}`.trim().split('\n').slice(-80).join('\n');
    throw new Error(`${cmd} ${args.join(' ')} (in ${cwd}) exited ${r.code} after ${took}:\n${tail}`);
  }
  const shown = `${cmd} ${args.join(' ')}`.replace(/\s+/g, ' ');
  log(`  ${shown.length > 110 ? `${shown.slice(0, 107)}...` : shown}: ok in ${took}`);
  return r.stdout;
}

/** Kills a process started by this file, with its process group (npx starts sim as a grandchild). */
function killGroup(child: ChildProcess): void {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  try {
    process.kill(-child.pid, 'SIGTERM');
  } catch {
    child.kill('SIGTERM');
  }
}

beforeAll(async () => {
  log(`working in ${work}`);
  mkdirSync(packDir);
  log('npm pack (its prepack script builds, then leaves the lifecycle scripts out of the packed package.json)');
  const packOut = await runOk('npm', ['pack', '--json', '--pack-destination', packDir], ROOT);
  const json = JSON.parse(packOut.slice(packOut.indexOf('['))) as Array<{ filename: string; size: number; files: Array<{ path: string }> }>;
  const info = json[0]!;
  tarball = join(packDir, info.filename);
  packedFiles = info.files.map((f) => f.path);
  log(`packed ${info.filename}: ${(info.size / 1024).toFixed(0)} KiB, ${packedFiles.length} files`);

  log('a fresh project: examples/vitest-downstream as it is, its package.json included');
  cpSync(EXAMPLE_DIR, project, {
    recursive: true,
    filter: (src) => !/(^|[\\/])(node_modules|package-lock\.json)$/.test(src),
  });

  // The example's README: `npm install --save-dev ./video-service-sim-0.1.0.tgz`. It replaces the
  // example's own `file:../..` (the clone it sits in) and installs the rest of its package.json.
  log('npm install --save-dev <tarball> (a few minutes on a busy machine)');
  const install = await run('npm', ['install', '--save-dev', '--no-audit', '--no-fund', tarball], project, 14 * 60_000);
  if (install.code !== 0) throw new Error(`npm install exited ${install.code}:\n${install.stdout}\n${install.stderr}`);
  installOutput = `${install.stdout}\n${install.stderr}`;
});

afterAll(() => {
  for (const child of started) killGroup(child);
  if (process.env.KEEP_PACKAGE_TEST_DIR) log(`kept ${work}`);
  else rmSync(work, { recursive: true, force: true });
});

describe('package.json', () => {
  it('declares the bin, typed exports, files and engines a user needs', () => {
    expect(pkg.bin).toEqual({ sim: './dist/cli.js', 'video-service-sim': './dist/cli.js' });
    expect(pkg.exports['.']).toEqual({ types: './dist/index.d.ts', import: './dist/index.js', require: './dist/index.js' });
    expect(Object.keys(pkg.exports['.'] as object)[0], 'types must come first in the export conditions').toBe('types');
    expect(pkg.exports['./openapi.yaml']).toBe('./openapi.yaml');
    expect([...pkg.files].sort()).toEqual(['!dist/**/*.map', 'README.md', 'assets', 'dist', 'openapi.yaml', 'scenarios']);
    expect(pkg.engines.node).toBe('>=22.12');
    expect(readFileSync(join(ROOT, 'src', 'cli.ts'), 'utf8').startsWith('#!/usr/bin/env node\n')).toBe(true);
  });
});

describe('the tarball', () => {
  it("shows a consumer's install no lifecycle script (the clone's own npm ci still builds)", () => {
    const packed = JSON.parse(readFileSync(join(project, 'node_modules', 'video-service-sim', 'package.json'), 'utf8')) as { scripts?: Record<string, string> };
    for (const script of ['preinstall', 'install', 'postinstall', 'prepare', 'preprepare', 'postprepare']) expect(packed.scripts?.[script], script).toBeUndefined();
    expect(installOutput).not.toMatch(/install-scripts|video-service-sim@[^\s]+ \(prepare/);
    expect(pkg.scripts.prepare, "the clone's npm ci builds").toBe('npm run build');
    expect(readFileSync(join(ROOT, 'package.json'), 'utf8'), 'npm pack puts package.json back as it was').toBe(packageJsonBefore);
  });

  it('holds the build, the contract, the scenarios and the media, and no sources or tests', () => {
    for (const needed of [
      'package.json',
      'README.md',
      'openapi.yaml',
      'dist/cli.js',
      'dist/index.js',
      'dist/index.d.ts',
      'dist/api-types.d.ts',
      'dist/generated/openapi-types.d.ts',
      'scenarios/default.yaml',
      'scenarios/fast.yaml',
      'scenarios/flaky.yaml',
      'assets/clip-720p.mp4',
      'assets/clip-1080p.mp4',
      'assets/dashboard/index.html',
      'dist/generated/dashboard/addresses.js',
    ]) {
      expect(packedFiles, needed).toContain(needed);
    }
    const forbidden = packedFiles.filter((f) => /^(src|test|examples|node_modules|\.ci|\.git)\//.test(f) || f.endsWith('.tgz'));
    expect(forbidden).toEqual([]);
    expect(packedFiles.filter((f) => f.endsWith('.test.ts') || (f.endsWith('.ts') && !f.endsWith('.d.ts')))).toEqual([]);
  });
});

describe('installed into a fresh project', () => {
  it('installed the tarball in place of the clone the example names', () => {
    const projectPkg = JSON.parse(readFileSync(join(project, 'package.json'), 'utf8')) as { devDependencies: Record<string, string> };
    expect(projectPkg.devDependencies[pkg.name]).toMatch(/^file:.*\.tgz$/);
    // The clone's package.json less what only the clone needs (clean-package: scripts, dev dependencies).
    const installedPkg = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8')) as typeof pkg & { devDependencies?: unknown };
    expect({ ...installedPkg, scripts: undefined }).toEqual({ ...pkg, scripts: undefined, ...Object.fromEntries(['devDependencies', 'scarfSettings', 'allowScripts', 'clean-package'].map((k) => [k, undefined])) });
  });

  for (const bin of ['sim', 'video-service-sim']) {
    it(`npx ${bin} starts a server (flaky scenario, port 0) whose /_sim/health answers`, async () => {
      log(`npx ${bin} --scenario=flaky --port 0`);
      const child = spawn('npx', [bin, '--scenario=flaky', '--port', '0'], {
        cwd: project,
        env: ENV,
        stdio: ['ignore', 'pipe', 'pipe'],
        detached: true, // its own process group, so that killGroup reaches sim behind npx
      });
      started.push(child);
      let stdout = '';
      let stderr = '';
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      const [firstLine, secondLine] = await new Promise<string[]>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no start-up lines within 60 s; stdout: ${stdout} stderr: ${stderr}`)), 60_000);
        child.stdout.on('data', (d: Buffer) => {
          stdout += d.toString();
          const lines = stdout.split('\n');
          if (lines.length > 2) {
            clearTimeout(timer);
            resolve(lines.slice(0, 2));
          }
        });
        child.on('exit', (code) => reject(new Error(`npx ${bin} exited ${code}: ${stderr}`)));
      });
      log(`  ${firstLine}`);
      const match = /^sim listening on (http:\/\/127\.0\.0\.1:(\d+)) \(scenario flaky, seed -?\d+, clock (realtime|manual)\)$/.exec(firstLine!);
      expect(match, firstLine).not.toBeNull();
      expect(secondLine).toBe(`dashboard: http://localhost:${match![2]}/_sim/`);
      const res = await fetch(`${match![1]}/_sim/health`);
      expect(res.status).toBe(200);
      expect(await res.json()).toMatchObject({ status: 'ok', scenario: 'flaky' });

      const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
      killGroup(child);
      await exited;
    });
  }

  it('npx video-service-sim runs the commands that npx sim runs', async () => {
    for (const args of [['scenarios'], ['--version'], ['help', 'validate']]) {
      expect(await runOk('npx', ['video-service-sim', ...args], project)).toBe(await runOk('npx', ['sim', ...args], project));
    }
  });

  it('links both bins into node_modules/.bin, for npm scripts that call either name', async () => {
    for (const bin of ['sim', 'video-service-sim']) {
      expect(await runOk(join(project, 'node_modules', '.bin', bin), ['--version'], project)).toBe(`${pkg.version}\n`);
    }
  });

  it('npx sim scenarios lists the bundled scenarios, flaky among them', async () => {
    const out = await runOk('npx', ['sim', 'scenarios'], project);
    expect(out).toMatch(/^flaky\s+\S/m);
    expect(out).toMatch(/^fast\s+\S/m);
  });

  it('npx sim openapi prints the contract', async () => {
    const out = await runOk('npx', ['sim', 'openapi'], project);
    expect(out.startsWith('openapi: 3.')).toBe(true);
    expect(out).toBe(readFileSync(join(installed, 'openapi.yaml'), 'utf8'));
    expect(out).toContain('/v1/videos:');
  });

  it('exports openapiPath pointing at the packaged contract, and resolves ./openapi.yaml', async () => {
    const script = [
      "import { openapiPath, createSimulator, ERROR_CODES } from 'video-service-sim';",
      "import { existsSync } from 'node:fs';",
      "import { fileURLToPath } from 'node:url';",
      "const viaExport = fileURLToPath(import.meta.resolve('video-service-sim/openapi.yaml'));",
      'console.log(JSON.stringify({ openapiPath, exists: existsSync(openapiPath), viaExport,',
      "  createSimulator: typeof createSimulator, codes: ERROR_CODES.length }));",
    ].join('\n');
    const out = await runOk('node', ['--input-type=module', '-e', script], project);
    const result = JSON.parse(out) as { openapiPath: string; exists: boolean; viaExport: string; createSimulator: string; codes: number };
    expect(result.exists).toBe(true);
    expect(result.openapiPath).toBe(join(installed, 'openapi.yaml'));
    expect(result.viaExport).toBe(result.openapiPath);
    expect(result.createSimulator).toBe('function');
    expect(result.codes).toBeGreaterThan(10);
  });

  it("runs the README's Running in CI recipe as written (a free port for 8080): start, wait for health, stop", async () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    const section = readme.slice(readme.indexOf('\n## Running in CI\n'));
    const recipe = /```sh\n([\s\S]*?)```/.exec(section)?.[1];
    expect(recipe, 'a sh block under "## Running in CI"').toBeDefined();
    expect(recipe).toContain('/_sim/health');
    expect(recipe).toContain('-X POST http://localhost:8080/_sim/shutdown || kill "$(cat sim.pid)"');
    const port = await freePort();
    const result = await run('bash', ['--noprofile', '--norc', '-eo', 'pipefail', '-c', recipe!.replaceAll('8080', String(port))], project, 60_000);
    expect(result.code, `${result.stdout}\n${result.stderr}`).toBe(0);
    // The health answer (curl adds no newline; the shutdown answer, when there is one, follows it).
    expect(result.stdout).toMatch(/^\{"status":"ok","scenario":"fast",.*"clock":\{"mode":"manual"/);
    const pid = Number(readFileSync(join(project, 'sim.pid'), 'utf8'));
    let gone = false;
    for (const deadline = Date.now() + 3000; !gone && Date.now() < deadline; await new Promise((r) => setTimeout(r, 50))) {
      try {
        process.kill(pid, 0);
      } catch {
        gone = true;
      }
    }
    expect(gone, `the simulator (pid ${pid}) still runs after the recipe's last line`).toBe(true);
    expect(readFileSync(join(project, 'sim.log'), 'utf8')).toMatch(/^sim listening on http:\/\/127\.0\.0\.1:\d+ \(scenario fast/);
  });

  it('exports video-service-sim/testcontainers, which loads once testcontainers (its optional peer) is installed beside it', async () => {
    const script = [
      "const url = import.meta.resolve('video-service-sim/testcontainers');",
      'let missing = null;',
      "try { await import('video-service-sim/testcontainers'); } catch (e) { missing = e.code; }",
      'console.log(JSON.stringify({ url, missing }));',
    ].join('\n');
    // Without the peer: the subpath resolves to the packaged module, whose import names what is missing.
    const without = JSON.parse(await runOk('node', ['--input-type=module', '-e', script], project)) as { url: string; missing: string | null };
    expect(fileURLToPath(without.url)).toBe(join(installed, 'dist', 'testcontainers.js'));
    expect(packedFiles).toContain('dist/testcontainers.d.ts');
    expect(without.missing).toBe('ERR_MODULE_NOT_FOUND');
    // With the peer (this repository's copy, linked in): it loads, and the module's class is a Testcontainers container.
    const peer = join(project, 'node_modules', 'testcontainers');
    symlinkSync(join(ROOT, 'node_modules', 'testcontainers'), peer, 'dir');
    try {
      const check = [
        "import { VideoSimContainer, SIM_PORT, DEFAULT_IMAGE } from 'video-service-sim/testcontainers';",
        "import { GenericContainer } from 'testcontainers';",
        'console.log(JSON.stringify({ container: new VideoSimContainer() instanceof GenericContainer, SIM_PORT, DEFAULT_IMAGE }));',
      ].join('\n');
      const loaded = JSON.parse(await runOk('node', ['--input-type=module', '-e', check], project)) as unknown;
      expect(loaded).toEqual({ container: true, SIM_PORT: 8080, DEFAULT_IMAGE: 'video-service-sim:latest' });
    } finally {
      rmSync(peer, { force: true });
    }
  });

  it('loads with require() from a CommonJS script, and runs a simulator from it', async () => {
    writeFileSync(
      join(project, 'require-check.cjs'),
      `const { createSimulator, openapiPath, ERROR_CODES } = require('video-service-sim');
const sim = createSimulator({ scenario: 'fast', clock: 'manual' });
sim.listen(0).then(async (url) => {
  const res = await fetch(url + '/_sim/health');
  const health = await res.json();
  await sim.close();
  console.log(JSON.stringify({ status: res.status, scenario: health.scenario, openapiPath, codes: ERROR_CODES.length }));
});
`,
    );
    const result = await run('node', ['require-check.cjs'], project, 60_000);
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual({
      status: 200,
      scenario: 'fast',
      openapiPath: join(installed, 'openapi.yaml'),
      codes: expect.any(Number),
    });
    // No ERR_REQUIRE_ASYNC_MODULE: nothing the package's entry loads has a top-level await.
    expect(result.stderr).not.toMatch(/ERR_REQUIRE|top-level await/i);
  });

  it("type-checks the example with its own npm run typecheck, and with this repository's compiler", async () => {
    await runOk('npm', ['run', 'typecheck'], project);
    const tsc = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
    await runOk('node', [tsc, '-p', join(project, 'tsconfig.json')], project);
  });

  it("compiles a fresh TypeScript project that imports the API's types from the package", async () => {
    const dir = join(project, 'types-consumer');
    mkdirSync(dir);
    writeFileSync(
      join(dir, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2022',
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          lib: ['ES2022', 'DOM'],
          types: [],
          strict: true,
          noEmit: true,
          skipLibCheck: true,
        },
        include: ['*.ts'],
      }),
    );
    writeFileSync(
      join(dir, 'client.ts'),
      `import type { ApiError, CancelResponse, ErrorCode, Image, Video, VideoList, VideoStatus } from 'video-service-sim';

const RESOLVED: VideoStatus[] = ['succeeded', 'failed', 'canceled'];

export async function waitForVideo(baseUrl: string, apiKey: string, id: string): Promise<Video> {
  for (;;) {
    const res = await fetch(baseUrl + '/v1/videos/' + id, { headers: { Authorization: 'Bearer ' + apiKey } });
    if (!res.ok) {
      const body = (await res.json()) as ApiError;
      const code: ErrorCode = body.error.code;
      const param = body.error.type === 'invalid_request_error' ? body.error.param : null;
      throw new Error(code + ' ' + String(param));
    }
    const video = (await res.json()) as Video;
    if (RESOLVED.includes(video.status)) return video;
    await new Promise((resolve) => setTimeout(resolve, 2000));
  }
}

export const firstPage = (list: VideoList): Video[] => list.data;
export const imageUrl = (image: Image): string => image.url;
export const canceledAt = (answer: CancelResponse): string => answer.completed_at;
// @ts-expect-error: not a status of the API
export const running: VideoStatus = 'running';
// @ts-expect-error: not a code of the API
export const oops: ErrorCode = 'oops';
`,
    );
    const tsc = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
    await runOk('node', [tsc, '-p', join(dir, 'tsconfig.json')], dir);
  });

  it('runs vitest suites that import the package: a smoke test and examples/vitest-downstream', async () => {
    writeFileSync(
      join(project, 'package-smoke.test.ts'),
      `import { createSimulator } from 'video-service-sim';
import { expect, it } from 'vitest';

it('drives a video to succeeded in-process (fast scenario, manual clock)', async () => {
  const sim = createSimulator({ scenario: 'fast', clock: 'manual' });
  const url = await sim.listen(0);
  try {
    const headers = { Authorization: 'Bearer sk_test_package', 'Content-Type': 'application/json' };
    const created = await fetch(url + '/v1/videos', {
      method: 'POST',
      headers,
      body: JSON.stringify({ model: 'video-3.2', prompt: 'A lantern floating over a dark lake.' }),
    });
    expect(created.status).toBe(200);
    const video = (await created.json()) as { id: string; status: string };
    expect(video.status).toBe('queued');
    sim.clock.advance(10);
    const done = await fetch(url + '/v1/videos/' + video.id, { headers });
    const body = (await done.json()) as { status: string; output: { url: string } };
    expect(body.status).toBe('succeeded');
    const media = await fetch(body.output.url);
    expect(media.headers.get('content-type')).toMatch(/^video\\/mp4/);
  } finally {
    await sim.close();
  }
});
`,
    );
    const copied = readdirSync(project).filter((f) => f.endsWith('.test.ts'));
    log(`  vitest run in the fresh project: ${copied.join(', ')}`);
    expect(copied).toEqual(expect.arrayContaining(['package-smoke.test.ts', 'video-client.test.ts', 'in-process.test.ts']));
    // The example's own script (`vitest run`), as its README says.
    const out = await runOk('npm', ['test', '--', '--reporter=verbose'], project, 4 * 60_000);
    for (const line of out.split('\n').filter((l) => /✓|✗|×|Tests\s/.test(l))) log(`    ${line.trim()}`);
    expect(out).toMatch(/Tests\s+\d+ passed/);
    expect(out).not.toMatch(/\d+ failed/);
  });

  it('installed nothing but production dependencies for the package', () => {
    expect(existsSync(join(installed, 'dist', 'cli.js'))).toBe(true);
    for (const dev of ['supertest', '@redocly/cli', '@stoplight/spectral-cli', 'autocannon', 'fast-check']) {
      expect(existsSync(join(project, 'node_modules', dev)), dev).toBe(false);
    }
  });
});
