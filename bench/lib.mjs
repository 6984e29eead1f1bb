// Helpers shared by bench.mjs and soak.mjs: starting and stopping servers, a keep-alive HTTP
// client, autocannon in a child process, /proc memory readings and statistics. Plain Node ESM.
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import http from 'node:http';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const BENCH_DIR = dirname(fileURLToPath(import.meta.url));
export const ROOT = dirname(BENCH_DIR);
export const CLI = join(ROOT, 'dist', 'cli.js');
export const AUTOCANNON = join(ROOT, 'node_modules', 'autocannon', 'autocannon.js');

/** The script's command-line value of `name` (`--name VALUE`), else `fallback`. */
export function option(name, fallback) {
  const argv = process.argv.slice(2);
  const i = argv.indexOf(name);
  return i >= 0 && argv[i + 1] !== undefined ? argv[i + 1] : fallback;
}

/** Whether the script was given the flag `name`. */
export const flag = (name) => process.argv.slice(2).includes(name);

export const now = () => performance.now();
export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

export function requireBuilt() {
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run \`npm run build --silent\` first.`);
}

export function requireAutocannon() {
  if (!existsSync(AUTOCANNON)) {
    throw new Error(`${AUTOCANNON} is missing: install it (npm i -D autocannon@8, or npm i --no-save autocannon@8).`);
  }
}

/**
 * Spawns `node script ...args` and resolves once it printed its `listening on http://HOST:PORT`
 * line. `spawnedAt` is performance.now() just before the spawn (for start-up timings).
 */
export function startServer(script, args = [], { env = {}, name = script, timeoutMs = 30_000, nodeArgs = [] } = {}) {
  return new Promise((resolve, reject) => {
    const spawnedAt = now();
    const proc = spawn(process.execPath, [...nodeArgs, script, ...args], {
      cwd: ROOT,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    let done = false;
    const exited = new Promise((res) => proc.once('exit', (code, signal) => res({ code, signal, at: now() })));
    const timer = setTimeout(() => finish(new Error(`${name}: no "listening on" line within ${timeoutMs} ms\n${err}`)), timeoutMs);
    function finish(error, value) {
      if (done) return;
      done = true;
      clearTimeout(timer);
      if (error) {
        proc.kill('SIGKILL');
        reject(error);
      } else resolve(value);
    }
    proc.stdout.setEncoding('utf8');
    proc.stderr.setEncoding('utf8');
    proc.stdout.on('data', (chunk) => {
      out += chunk;
      const m = /listening on http:\/\/(\[[^\]]+\]|[^:/\s]+):(\d+)/.exec(out);
      if (m && !done) {
        const port = Number(m[2]);
        const server = {
          name,
          proc,
          pid: proc.pid,
          port,
          url: `http://127.0.0.1:${port}`,
          spawnedAt,
          listenedAt: now(),
          exited,
          get stderr() {
            return err;
          },
          get stdout() {
            return out;
          },
        };
        finish(null, server);
      }
    });
    proc.stderr.on('data', (chunk) => {
      err += chunk;
      if (err.length > 100_000) err = err.slice(-50_000);
    });
    proc.once('exit', (code, signal) => finish(new Error(`${name} exited (${code ?? signal}) before listening\n${err}`)));
  });
}

/** SIGTERM, then SIGKILL after `killAfterMs`; resolves with the milliseconds the exit took. */
export async function stopServer(server, { killAfterMs = 3000 } = {}) {
  if (server.proc.exitCode !== null || server.proc.signalCode !== null) return 0;
  const t0 = now();
  server.proc.kill('SIGTERM');
  const killer = setTimeout(() => server.proc.kill('SIGKILL'), killAfterMs);
  const { at } = await server.exited;
  clearTimeout(killer);
  return at - t0;
}

export const keepAliveAgent = new http.Agent({ keepAlive: true, maxSockets: 256 });

/**
 * One HTTP request. Resolves `{ status, headers, text, json, ms }`; rejects on a connection
 * error or after `timeoutMs`. `agent: false` opens a fresh connection.
 */
export function request(url, { method = 'GET', headers = {}, body, agent = keepAliveAgent, timeoutMs = 30_000 } = {}) {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body);
    const h = { ...headers };
    if (payload !== undefined) {
      h['Content-Type'] ??= 'application/json';
      h['Content-Length'] = Buffer.byteLength(payload);
    }
    const t0 = now();
    const req = http.request(url, { method, headers: h, agent }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('error', reject);
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let json;
        try {
          json = text ? JSON.parse(text) : undefined;
        } catch {
          json = undefined;
        }
        resolve({ status: res.statusCode, headers: res.headers, text, json, ms: now() - t0 });
      });
    });
    req.setTimeout(timeoutMs, () => req.destroy(new Error(`timeout after ${timeoutMs} ms: ${method} ${url}`)));
    req.on('error', reject);
    if (payload !== undefined) req.write(payload);
    req.end();
  });
}

/**
 * Sends one request (`init`: method, headers, body) on a fresh connection every `intervalMs` until
 * it is answered 200; resolves performance.now() at that answer.
 */
export async function waitFor200(url, { intervalMs = 3, timeoutMs = 30_000, init = {} } = {}) {
  const deadline = now() + timeoutMs;
  let last;
  for (;;) {
    try {
      const r = await request(url, { ...init, agent: false, timeoutMs: 5000 });
      if (r.status === 200) return now();
      last = `${r.status} ${r.text.slice(0, 300)}`;
    } catch (e) {
      last = e.code ?? e.message; // not listening yet
    }
    if (now() > deadline) throw new Error(`${url}: no 200 within ${timeoutMs} ms (last: ${last})`);
    await sleep(intervalMs);
  }
}

/**
 * Spawns `node script ...args`, waits for it to exit, and resolves `{ ms, code, stdout, stderr }`:
 * ms from just before the spawn to the exit.
 */
export function runToExit(script, args = [], { env = {}, timeoutMs = 60_000 } = {}) {
  return new Promise((resolve, reject) => {
    const t0 = now();
    const proc = spawn(process.execPath, [script, ...args], { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    proc.stdout.setEncoding('utf8');
    proc.stderr.setEncoding('utf8');
    proc.stdout.on('data', (c) => (stdout += c));
    proc.stderr.on('data', (c) => (stderr += c));
    const timer = setTimeout(() => proc.kill('SIGKILL'), timeoutMs);
    proc.once('error', reject);
    proc.once('exit', (code, signal) => {
      const ms = now() - t0;
      clearTimeout(timer);
      resolve({ ms, code: code ?? signal, stdout, stderr });
    });
  });
}

/** A memory figure of /proc/PID/status in bytes (`VmRSS`, `VmHWM`, ...), or null when unreadable. */
function statusBytes(pid, field) {
  try {
    const m = new RegExp(`${field}:\\s+(\\d+)\\s+kB`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : null;
  } catch {
    return null;
  }
}

/** Resident set size of a process in bytes (VmRSS), or null when unreadable. */
export const rssBytes = (pid) => statusBytes(pid, 'VmRSS');

/** The most resident memory the process has had since it started (VmHWM), or null when unreadable. */
export const peakRssBytes = (pid) => statusBytes(pid, 'VmHWM');

/**
 * Resident memory (read by `settledRss(pid)`) and V8's heap figures after a full collection in a
 * server started with bench/gc-on-signal.mjs, which answers SIGUSR2 with a `bench-gc {...}` line.
 */
export async function afterGc(server, settledRss) {
  const before = server.stderr.length;
  process.kill(server.pid, 'SIGUSR2');
  for (let i = 0; i < 200 && !server.stderr.slice(before).includes('bench-gc '); i++) await sleep(50);
  const line = /bench-gc (\{.*\})/.exec(server.stderr.slice(before));
  const heap = line ? JSON.parse(line[1]) : {};
  return { rss: await settledRss(server.pid), heapUsed: heap.heapUsed ?? Number.NaN, heapTotal: heap.heapTotal ?? Number.NaN };
}

/**
 * CPU time a process has used so far, user and system, in milliseconds (utime + stime of
 * /proc/PID/stat, in clock ticks of 10 ms), or null when unreadable.
 */
export function cpuMs(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return null;
  }
}

/**
 * Runs autocannon in its own process (`node node_modules/autocannon/autocannon.js ... -j -n`) and
 * resolves its JSON result. `args` are autocannon flags, `url` the target.
 */
export function autocannon(url, args) {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, [AUTOCANNON, ...args, '-j', '-n', url], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    proc.stdout.setEncoding('utf8');
    proc.stderr.setEncoding('utf8');
    proc.stdout.on('data', (c) => (out += c));
    proc.stderr.on('data', (c) => (err += c));
    proc.once('exit', (code) => {
      const start = out.indexOf('{');
      try {
        if (start < 0) throw new Error('no JSON');
        resolve(JSON.parse(out.slice(start)));
      } catch {
        reject(new Error(`autocannon exited ${code} without a JSON result\n${out}\n${err}`));
      }
    });
  });
}

/** Header flags for autocannon. */
export function acHeaders(headers) {
  return Object.entries(headers).flatMap(([k, v]) => ['-H', `${k}=${v}`]);
}

export function median(values) {
  return quantile(values, 0.5);
}

export function quantile(values, q) {
  const xs = values.filter((v) => Number.isFinite(v)).sort((a, b) => a - b);
  if (xs.length === 0) return NaN;
  const pos = (xs.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo);
}

export function fmtBytes(b) {
  if (!Number.isFinite(b)) return 'n/a';
  if (Math.abs(b) >= 1024 * 1024) return `${(b / 1024 / 1024).toFixed(1)} MB`;
  if (Math.abs(b) >= 1024) return `${(b / 1024).toFixed(2)} KB`;
  return `${Math.round(b)} B`;
}

export function log(line) {
  process.stderr.write(`${new Date().toISOString().slice(11, 19)} ${line}\n`);
}
