/**
 * Installing the repository stays quiet and sends nothing: `@scarf/scarf` (pulled in by the
 * Spectral CLI, a dev dependency) would print a notice at install and report the install to
 * scarf.sh. Its own switch is `scarfSettings.enabled: false` in the root package.json (npm's
 * install-script review, `allowScripts`, also records its postinstall as denied). The test runs
 * that postinstall as npm would, so it fails if the switch stops working, not only if it is removed.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

describe('npm install of the repository', () => {
  it("@scarf/scarf's postinstall, run as npm runs it, says analytics are off and reports nothing", async () => {
    // Scarf's SCARF_LOCAL_PORT sends its report to http://localhost:PORT instead of scarf.sh.
    const reports: string[] = [];
    const server = createServer((req, res) => {
      reports.push(`${req.method} ${req.url}`);
      res.end('{}');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const env: NodeJS.ProcessEnv = { ...process.env };
    for (const name of ['SCARF_ANALYTICS', 'SCARF_NO_ANALYTICS', 'DO_NOT_TRACK', 'npm_config_global']) delete env[name];
    try {
      const scarfDir = join(ROOT, 'node_modules', '@scarf', 'scarf');
      const runScarf = () => new Promise<{ code: number | null; output: string }>((resolve) => {
        const child = spawn(process.execPath, [join(scarfDir, 'report.js')], {
          cwd: scarfDir,
          // INIT_CWD: where npm was run (the root whose package.json scarf reads).
          env: { ...env, INIT_CWD: ROOT, SCARF_LOCAL_PORT: String((server.address() as AddressInfo).port), SCARF_VERBOSE: 'true' },
        });
        let output = '';
        child.stdout.on('data', (d: Buffer) => (output += d.toString()));
        child.stderr.on('data', (d: Buffer) => (output += d.toString()));
        child.on('close', (code) => resolve({ code, output }));
      });
      // `scarfSettings.skipTraversal` spares it listing the tree with `npm ls` (which it gives 3 s,
      // and which ran out on a busy machine, stopping it before it read the switch).
      const result = await runScarf();
      expect(result.output).toContain('skipping dependency tree traversal');
      expect(result.code).toBe(0);
      expect(result.output).toMatch(/Scarf has been disabled via a package\.json|User has opted out/);
      expect(result.output).not.toMatch(/is tracking installation\s+statistics/);
      expect(reports).toEqual([]);
    } finally {
      server.close();
    }
  });

  it('decides every install script of the lock file in allowScripts, each named with its reason in docs/install.md', () => {
    const read = (path: string) => readFileSync(join(ROOT, path), 'utf8');
    const lock = JSON.parse(read('package-lock.json')) as { packages: Record<string, { hasInstallScript?: boolean }> };
    const withScripts = [
      ...new Set(
        Object.entries(lock.packages)
          .filter(([path, entry]) => path !== '' && entry.hasInstallScript)
          .map(([path]) => path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length)),
      ),
    ].sort();
    expect(withScripts.length).toBeGreaterThan(0);
    const { allowScripts } = JSON.parse(read('package.json')) as { allowScripts: Record<string, boolean> };
    // npm warns at every install about a script allowScripts does not decide (a later npm refuses it).
    expect(Object.keys(allowScripts).sort()).toEqual(withScripts);
    for (const decision of Object.values(allowScripts)) expect(typeof decision).toBe('boolean');
    const section = read('docs/install.md').split('\n### Install scripts\n')[1]?.split('\n#')[0] ?? '';
    for (const name of withScripts) expect(section, `docs/install.md does not give the reason for ${name}`).toContain(`| \`${name}\` |`);
  });
});
