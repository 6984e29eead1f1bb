/**
 * docs/assumptions.md is generated from openapi.yaml (the `Simulator assumption:` descriptions and
 * their `x-sim-assumption` ids) by scripts/assumptions-doc.mjs, so the assumptions are stated in
 * one place. The committed page must be what the script writes now: a change to openapi.yaml or to
 * the drift check's probes without `npm run docs:assumptions` fails here.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const SCRIPT = join(ROOT, 'scripts', 'assumptions-doc.mjs');
const PAGE = join(ROOT, 'docs', 'assumptions.md');

function runScript(args: string[]) {
  if (!existsSync(join(ROOT, 'dist', 'drift', 'probes.js'))) throw new Error('dist/ is missing: run "npm run build" first.');
  return spawnSync(process.execPath, [SCRIPT, ...args], { cwd: ROOT, encoding: 'utf8', timeout: 30_000 });
}

/** The x-sim-assumption ids of openapi.yaml, in document order. */
function assumptionIds(): string[] {
  const ids: string[] = [];
  (function walk(node: unknown): void {
    if (Array.isArray(node)) return node.forEach(walk);
    if (node === null || typeof node !== 'object') return;
    const marked = (node as Record<string, unknown>)['x-sim-assumption'];
    if (marked !== undefined) ids.push(...([] as unknown[]).concat(marked).map(String));
    Object.values(node).forEach(walk);
  })(parse(readFileSync(join(ROOT, 'openapi.yaml'), 'utf8')));
  return ids;
}

describe('docs/assumptions.md', () => {
  it('is exactly what scripts/assumptions-doc.mjs writes from openapi.yaml now', () => {
    const result = runScript(['--check']);
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
  });

  it('has an anchor for every x-sim-assumption id of openapi.yaml, in the order of that file', () => {
    const anchors = [...readFileSync(PAGE, 'utf8').matchAll(/<a id="([a-z0-9-]+)"><\/a>/g)].map((m) => m[1]);
    const ids = assumptionIds();
    expect(ids.length).toBeGreaterThan(20);
    expect(anchors).toEqual(ids);
  });

  it('says it is generated, and by which command', () => {
    expect(readFileSync(PAGE, 'utf8')).toContain('<!-- Generated from openapi.yaml by scripts/assumptions-doc.mjs (npm run docs:assumptions); do not edit. -->');
  });
});

describe('scripts/assumptions-doc.mjs --check', () => {
  it('exits 1 naming the command to run when the page differs from what it would write', () => {
    const dir = mkdtempSync(join(tmpdir(), 'sim-assumptions-'));
    try {
      const stale = join(dir, 'assumptions.md');
      writeFileSync(stale, readFileSync(PAGE, 'utf8').replace('Whole tokens left in the bucket.', 'Tokens left.'));
      const result = runScript(['--check', '--out', stale]);
      expect(result.status).toBe(1);
      expect(result.stderr).toBe(`${stale} is not up to date with openapi.yaml: run "npm run docs:assumptions" and commit it.\n`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('writes the page to --out without --check, the same bytes as the committed one', () => {
    const dir = mkdtempSync(join(tmpdir(), 'sim-assumptions-'));
    try {
      const out = join(dir, 'assumptions.md');
      const result = runScript(['--out', out]);
      expect(result.status).toBe(0);
      expect(readFileSync(out, 'utf8')).toBe(readFileSync(PAGE, 'utf8'));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
