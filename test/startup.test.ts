/**
 * What a start loads, as users run it: the built bin (`node dist/cli.js`, the command line's bundle
 * behind it) and the package's entry (`dist/index.js`, a bundle too; scripts/build-node.mjs). A
 * first create loads neither Express, nor the YAML parser, nor Ajv, nor `node:crypto`; a scenario
 * file read once and found valid is taken from the cache the next time (src/scenarios/fileReading.ts),
 * and never for another text.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { CLI, childProcesses, cleanEnv } from './processes.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const children = childProcesses();
const dir = mkdtempSync(join(tmpdir(), 'sim-startup-test-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A temporary folder of the test's own for the process (`TMPDIR`), so that the cache it keeps is the test's. */
function ownTmp(): string {
  return mkdtempSync(join(dir, 'tmp-'));
}

/** The cache's entries under `tmp`: the folder the simulator keeps them in, and each entry's text. */
function cacheEntries(tmp: string): { folder: string; names: string[] } {
  const folders = readdirSync(tmp).filter((name) => name.startsWith('video-service-sim-scenarios'));
  if (folders.length === 0) return { folder: '', names: [] };
  const folder = join(tmp, folders[0]!);
  return { folder, names: readdirSync(folder) };
}

/** Starts `node dist/cli.js ...args` and resolves to its first stdout line; the process is killed after the test. */
function firstLine(args: string[], env: Record<string, string>): Promise<string> {
  const child = spawn(process.execPath, [CLI, '--port', '0', ...args], { cwd: ROOT, env: cleanEnv(env), stdio: ['ignore', 'pipe', 'pipe'] });
  children.add(child);
  let out = '';
  let err = '';
  child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
  return new Promise((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes('\n')) {
        resolve(out.slice(0, out.indexOf('\n')));
        child.kill('SIGTERM');
      }
    });
    child.once('exit', (code) => reject(new Error(`exited ${code} before listening: ${err}`)));
  });
}

describe('the built bin and entry', () => {
  it('dist/cli.js turns on the compile cache and runs the bundled command line', () => {
    const bin = readFileSync(CLI, 'utf8');
    expect(bin.startsWith('#!/usr/bin/env node\n')).toBe(true);
    expect(bin).toContain('enableCompileCache');
    expect(bin).toContain("import('./bundle/cli.js')");
    expect(existsSync(join(ROOT, 'dist', 'bundle', 'cli.js.map'))).toBe(true);
    expect(existsSync(join(ROOT, 'dist', 'index.js.map'))).toBe(true);
  });

  it('answers a first create in-process without loading Express, the YAML parser, Ajv or node:crypto', () => {
    // node:http through getBuiltinModule: fetch, or an import of node:http, may load node:crypto themselves.
    const script = `
      import { createRequire } from 'node:module';
      import { createSimulator } from ${JSON.stringify(new URL('../dist/index.js', import.meta.url).href)};
      const sim = createSimulator({ scenario: 'fast', clock: 'manual' });
      const url = new URL(await sim.listen(0));
      const body = JSON.stringify({ model: 'video-3.2', prompt: 'A paper boat on a river.' });
      const status = await new Promise((resolve, reject) => {
        const headers = { Authorization: 'Bearer sk_test_startup', 'Content-Type': 'application/json' };
        const req = process.getBuiltinModule('node:http').request({ host: '127.0.0.1', port: url.port, path: '/v1/videos', method: 'POST', headers }, (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode));
        });
        req.on('error', reject);
        req.end(body);
      });
      await sim.close();
      const loaded = Object.keys(createRequire(import.meta.url).cache).filter((f) => /node_modules[\\\\/](express|yaml|ajv|ajv-formats)[\\\\/]/.test(f));
      console.log(JSON.stringify({ status, loaded, crypto: process.moduleLoadList.includes('NativeModule crypto') }));
    `;
    const run = spawnSync(process.execPath, ['--input-type=module', '-e', script], { cwd: ROOT, env: cleanEnv(), encoding: 'utf8' });
    expect(run.status, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual({ status: 200, loaded: [], crypto: false });
  });
});

describe("the scenario files' cache", () => {
  const scenario = (seed: number) => `# a scenario file for the cache's tests\nextends: fast\nname: cached\nseed: ${seed}\n`;

  it('keeps a valid file once read, and takes it from there for the same text only', async () => {
    const tmp = ownTmp();
    const file = join(dir, 'cached.yaml');
    writeFileSync(file, scenario(7));
    expect(await firstLine(['--scenario', file], { TMPDIR: tmp })).toMatch(/\(scenario cached, seed 7, clock \w+\)$/);
    const { folder, names } = cacheEntries(tmp);
    expect(names).toHaveLength(1);
    const entry = JSON.parse(readFileSync(join(folder, names[0]!), 'utf8')) as { text: string; file: { seed: number } };
    expect(entry).toEqual({ text: scenario(7), file: { extends: 'fast', name: 'cached', seed: 7 } });

    // The entry is what a start with the same text takes: one made to say otherwise shows.
    writeFileSync(join(folder, names[0]!), JSON.stringify({ ...entry, file: { ...entry.file, seed: 8 } }));
    expect(await firstLine(['--scenario', file], { TMPDIR: tmp })).toMatch(/seed 8,/);

    // Another text is read anew (and kept beside it).
    writeFileSync(file, scenario(9));
    expect(await firstLine(['--scenario', file], { TMPDIR: tmp })).toMatch(/seed 9,/);
    expect(cacheEntries(tmp).names).toHaveLength(2);
  });

  it('never keeps a file with a problem, and reports it every time', () => {
    const tmp = ownTmp();
    const file = join(dir, 'wrong.yaml');
    writeFileSync(file, 'extends: fast\nseed: seven\n');
    for (let i = 0; i < 2; i++) {
      const run = spawnSync(process.execPath, [CLI, 'validate', file], { env: cleanEnv({ TMPDIR: tmp }), encoding: 'utf8' });
      expect(run.status).toBe(2);
      expect(run.stdout + run.stderr).toContain('seed: expected integer');
    }
    expect(cacheEntries(tmp).names).toEqual([]);
  });

  it('is off with NODE_DISABLE_COMPILE_CACHE=1', async () => {
    const tmp = ownTmp();
    const file = join(dir, 'uncached.yaml');
    writeFileSync(file, scenario(11));
    expect(await firstLine(['--scenario', file], { TMPDIR: tmp, NODE_DISABLE_COMPILE_CACHE: '1' })).toMatch(/seed 11,/);
    expect(cacheEntries(tmp).folder).toBe('');
  });
});
