/**
 * The README as a newcomer uses it: its shell blocks pasted in order into a shell, against a
 * simulator started as its Quick start says (`npm start`: the default scenario on the realtime
 * clock; here `node dist/cli.js` on a free port, which stands in for 8080). And every relative
 * link of the README and of docs/ leads to a file, and to a heading there, that exists.
 * (The Running in CI recipe is run by test/package/package.test.ts, with the installed package.)
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { CLI, childProcesses, cleanEnv } from './processes.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const README = readFileSync(join(ROOT, 'README.md'), 'utf8');

const children = childProcesses();

/** The `n`-th (from 1) sh block under the README's `## heading`. */
function shBlock(heading: string, n = 1): string {
  const start = README.indexOf(`\n## ${heading}\n`);
  if (start < 0) throw new Error(`README.md has no section "## ${heading}"`);
  const next = README.indexOf('\n## ', start + 1);
  const section = README.slice(start, next < 0 ? undefined : next);
  const block = [...section.matchAll(/```sh\n([\s\S]*?)```/g)][n - 1]?.[1];
  if (block === undefined) throw new Error(`README.md has no sh block number ${n} under "## ${heading}"`);
  return block;
}

/** Starts `node dist/cli.js --port 0` (else as `npm start`); resolves to its port once it listens. */
function startSimulator(): Promise<number> {
  const child = spawn(process.execPath, [CLI, '--port', '0'], { cwd: ROOT, env: cleanEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
  children.add(child);
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const port = /^sim listening on http:\/\/127\.0\.0\.1:(\d+) /.exec(out)?.[1];
      if (port) resolve(Number(port));
    });
    child.once('exit', (code) => reject(new Error(`the simulator exited with ${code} before listening: ${out}`)));
  });
}

/** Runs a README block in bash, as a paste into a shell would, with the simulator's port for 8080. */
function paste(block: string, port: number): { status: number | null; stdout: string; stderr: string } {
  const result = spawnSync('bash', ['--noprofile', '--norc', '-c', block.replaceAll('8080', String(port))], {
    cwd: ROOT,
    env: cleanEnv(),
    encoding: 'utf8',
    timeout: 30_000,
  });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

/** The JSON answers curl printed one after another (curl -s adds no newline), and any other lines. */
function answers(stdout: string): { json: any[]; lines: string[] } {
  const json: any[] = [];
  const lines: string[] = [];
  for (const part of stdout.replace(/\}(?=[{\n]|$)/g, '}\n').split('\n').filter(Boolean)) {
    try {
      json.push(JSON.parse(part));
    } catch {
      lines.push(part);
    }
  }
  return { json, lines };
}

describe('README.md', () => {
  it('is a short guide: at most 250 lines (reference pages live in docs/)', () => {
    expect(README.trimEnd().split('\n').length).toBeLessThanOrEqual(250);
  });
});

describe("README.md's shell blocks, pasted in order", () => {
  beforeAll(() => {
    for (const tool of ['bash', 'curl']) {
      if (spawnSync(tool, ['--version']).error) throw new Error(`${tool} is missing: the README's blocks need it (apt-get install -y ${tool}).`);
    }
  });

  it('Quick start, Control API, then Produce every state: the faults are scoped and dropped, and the id snippet moves a new video', async () => {
    const port = await startSimulator();

    const quick = paste(shBlock('Quick start', 2), port);
    expect(quick.status, quick.stderr).toBe(0);
    const listed = answers(quick.stdout).json.at(-1);
    expect(listed).toMatchObject({ object: 'list', data: [{ status: 'succeeded', output: { url: expect.stringContaining(`:${port}/cdn/`) } }] });

    const control = paste(shBlock('Control API'), port);
    expect(control.status, control.stderr).toBe(0);
    const controlAnswers = answers(control.stdout).json;
    expect(controlAnswers.filter((a) => 'error' in a)).toEqual([]);
    expect(controlAnswers.at(-1)).toEqual({ queued: 0 }); // nothing is left queued for what follows

    const produce = paste(shBlock('Produce every state'), port);
    expect(produce.stderr).toBe('');
    expect(produce.status).toBe(0);
    const { json, lines } = answers(produce.stdout);
    expect(lines).toEqual([expect.stringMatching(/^vid_\w+$/)]); // the snippet echoes the id
    expect(json).toEqual([
      expect.objectContaining({ id: lines[0], status: 'processing' }),
      expect.objectContaining({ id: lines[0], status: 'failed', error: expect.objectContaining({ type: 'api_error' }) }),
    ]);
  });

  it("Produce every state's id snippet fails visibly, naming the service's error, when the create is refused", async () => {
    const port = await startSimulator();
    const queued = await fetch(`http://127.0.0.1:${port}/_sim/faults`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ path: '/v1/videos', method: 'POST', api_key: 'sk_test_me', status: 500 }),
    });
    expect(queued.status).toBe(200);
    const produce = paste(shBlock('Produce every state'), port);
    expect(produce.status).not.toBe(0);
    expect(produce.stderr).toMatch(/id: the create failed: \{"error":\{"type":"api_error","code":"internal_error",/);
    expect(produce.stdout).toBe(''); // nothing was sent for an id it does not have
  });
});

// ---------------------------------------------------------------------------------------------

/** The anchor GitHub gives a heading (github-slugger): lower case, punctuation dropped, spaces to hyphens. */
function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-');
}

function anchorsOf(markdown: string): Set<string> {
  const out = new Set<string>();
  const seen = new Map<string, number>();
  // Headings outside fenced blocks.
  for (const line of markdown.replace(/```[\s\S]*?```/g, '').split('\n')) {
    const heading = /^#{1,6} (.*)$/.exec(line)?.[1];
    if (heading === undefined) continue;
    const base = slug(heading);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

const DOCUMENTS = ['README.md', ...readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];

describe('links of README.md and docs/', () => {
  it.each(DOCUMENTS)('every relative link of %s leads to a file that exists, and to a heading there', (document) => {
    const text = readFileSync(join(ROOT, document), 'utf8').replace(/```[\s\S]*?```/g, '');
    const broken: string[] = [];
    for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
      if (/^[a-z]+:/i.test(target!)) continue; // https:, mailto:
      const [path, anchor] = target!.split('#') as [string, string | undefined];
      const file = path === '' ? join(ROOT, document) : join(ROOT, dirname(document), path);
      if (!existsSync(file)) {
        broken.push(`${target} (no ${relative(ROOT, file)})`);
        continue;
      }
      if (anchor !== undefined && file.endsWith('.md') && !anchorsOf(readFileSync(file, 'utf8')).has(anchor)) {
        broken.push(`${target} (no heading #${anchor} in ${relative(ROOT, file)})`);
      }
    }
    expect(broken).toEqual([]);
  });
});
