/**
 * For tests that start `node dist/cli.js` as users do: where it is, an environment without the
 * simulator's own variables, and the children a file starts, killed after each test.
 */
import type { ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeAll } from 'vitest';

export const CLI = fileURLToPath(new URL('../dist/cli.js', import.meta.url));

/** The environment without any of the simulator's own variables (so that only the test's apply), plus `extra`. */
export function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const name of Object.keys(env)) if (name === 'PORT' || name.startsWith('SIM_')) delete env[name];
  return { ...env, ...extra };
}

/**
 * The set a test file adds the processes it starts to: each still running is killed after its test.
 * Also fails the file at once, with what to do, when `dist/cli.js` has not been built.
 */
export function childProcesses(): Set<ChildProcess> {
  const children = new Set<ChildProcess>();
  beforeAll(() => {
    if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run "npm run build" first (npm test does it).`);
  });
  afterEach(() => {
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    children.clear();
  });
  return children;
}
