/**
 * For tests that start `node dist/cli.js` as users do: where it is, an environment without the
 * simulator's own variables, the children a file starts (killed after each test), running a command
 * to its end, and a GET with any Host header.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer, request as httpRequest } from 'node:http';
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

/** Runs `node dist/cli.js ...args` to its end; resolves to its exit status and output. */
export function runCli(args: string[], env: Record<string, string> = {}): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CLI, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('close', (status) => resolve({ status, stdout, stderr }));
  });
}

/** A GET to a simulator listening on 127.0.0.1:`port` with any Host header (fetch cannot set Host); the body parsed as JSON. */
export function getWithHost(port: number, path: string, host: string, headers: Record<string, string> = {}): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path, headers: { ...headers, Host: host } }, (res) => {
      let text = '';
      res.on('data', (chunk: Buffer) => (text += chunk.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** A TCP port free on 127.0.0.1 now (listened on, then let go), for a process that must be told its port. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}
