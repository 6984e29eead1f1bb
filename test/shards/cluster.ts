/**
 * For the shards suite: N simulators started as users start them (`node dist/cli.js --shard I/N
 * --control-token TOKEN`: a shard needs one), Debian's nginx in front with the configuration `sim
 * deploy nginx` prints, and one simulator alone to compare with. Everything listens on 127.0.0.1
 * and is stopped by `stop()`.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { shardOfKey } from '../../src/core/accounts/shard.js';
import { freePort } from '../processes.js';

const CLI = fileURLToPath(new URL('../../dist/cli.js', import.meta.url));
/** The control token every shard of the suite is started with. */
export const TOKEN = 'shards-suite-control-token-0123';
/** The header a control call sends it in. */
export const CONTROL = { Authorization: `Bearer ${TOKEN}` } as const;
const NGINX = process.env.NGINX_PATH ?? '/usr/sbin/nginx';
/** Liveness, not performance: how long a process may take to start answering. */
const LIVENESS_MS = 20_000;

export interface Sim {
  child: ChildProcess;
  url: string;
  port: number;
  stdout: () => string;
  stderr: () => string;
  /** Stops it (SIGKILL: a shard that is down). */
  kill(): Promise<void>;
}

/** A port that was free a moment ago (for nginx and for addresses that must be known before start). */
/** `node dist/cli.js --port 0 ...args`, once it listens. */
export async function startSim(args: string[]): Promise<Sim> {
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run "npm run build" first.`);
  const child = spawn(process.execPath, [CLI, '--port', '0', ...args], { env: simEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`sim ${args.join(' ')} did not listen: ${stderr}`)), LIVENESS_MS);
    const onData = (): void => {
      const m = /^sim listening on http:\/\/127\.0\.0\.1:(\d+) /m.exec(stdout);
      if (m) {
        clearTimeout(timer);
        child.stdout.off('data', onData);
        resolve(Number(m[1]));
      }
    };
    child.stdout.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`sim ${args.join(' ')} exited ${code}: ${stderr}`));
    });
  });
  return {
    child,
    port,
    url: `http://127.0.0.1:${port}`,
    stdout: () => stdout,
    stderr: () => stderr,
    kill: () => stopProcess(child, 'SIGKILL'),
  };
}

/** The environment without the simulator's own variables, so that only the test's flags apply. */
function simEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const name of Object.keys(env)) if (name === 'PORT' || name.startsWith('SIM_')) delete env[name];
  return env;
}

async function stopProcess(child: ChildProcess, signal: NodeJS.Signals): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill(signal);
  await exited;
}

/** `sim deploy nginx ...args`: the configuration it prints. Throws with its stderr when it fails. */
export function deployNginx(args: string[]): string {
  const run = spawnSync(process.execPath, [CLI, 'deploy', 'nginx', ...args], { encoding: 'utf8' });
  if (run.status !== 0) throw new Error(`sim deploy nginx exited ${run.status}: ${run.stderr}`);
  return run.stdout;
}

interface Proxy {
  url: string;
  port: number;
  dir: string;
  /** nginx's master process. */
  pid: number;
  /** nginx's error log so far. */
  log(): string;
  stop(): Promise<void>;
}

export interface NginxOptions {
  /**
   * The soft limit of open files nginx starts with (`ulimit -Sn`), as on most systems (1024)
   * rather than this machine's: `worker_rlimit_nofile` must raise it. Default: inherited.
   */
  softNofile?: number;
}

/** Debian's nginx on `config` (written to a fresh prefix), once it accepts connections on `port`. */
async function startNginx(config: string, port: number, options: NginxOptions = {}): Promise<Proxy> {
  if (!existsSync(NGINX)) throw new Error(`${NGINX} is missing: install Debian's package (apt-get install -y nginx); never run it as the system service.`);
  const dir = mkdtempSync(join(tmpdir(), 'sim-nginx-'));
  writeFileSync(join(dir, 'nginx.conf'), config);
  const nginxArgs = ['-p', dir, '-c', 'nginx.conf', '-e', 'stderr', '-g', 'daemon off;'];
  const child =
    options.softNofile === undefined
      ? spawn(NGINX, nginxArgs, { stdio: ['ignore', 'ignore', 'pipe'] })
      : // The shell lowers its soft limit, then becomes nginx (exec): the pid is nginx's.
        spawn('/bin/sh', ['-c', `ulimit -Sn ${options.softNofile} && exec "$0" "$@"`, NGINX, ...nginxArgs], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const deadline = Date.now() + LIVENESS_MS;
  while (!(await accepts(port))) {
    if (child.exitCode !== null) throw new Error(`nginx exited ${child.exitCode}: ${stderr}`);
    if (Date.now() > deadline) throw new Error(`nginx did not listen on ${port}: ${stderr}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    dir,
    pid: child.pid as number,
    log: () => stderr + (existsSync(join(dir, 'error.log')) ? readFileSync(join(dir, 'error.log'), 'utf8') : ''),
    async stop() {
      // SIGTERM: the master stops its workers before it exits (a killed master would leave them serving).
      await stopProcess(child, 'SIGTERM');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

export interface Cluster {
  proxy: Proxy;
  shards: Sim[];
  /** The base URL media addresses are written under (the proxy's). */
  base: string;
  stop(): Promise<void>;
}

/**
 * `count` shards (`--shard I/N`, the suite's control token, media under the proxy's
 * `/shards/I/cdn`) and nginx in front, with the configuration `sim deploy nginx` prints for them
 * (`--listen PORT`: on 127.0.0.1). `args` go to every shard.
 */
export async function startCluster(count: number, args: string[], nginx: NginxOptions = {}): Promise<Cluster> {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const shards = await Promise.all(
    Array.from({ length: count }, (_, i) =>
      startSim([...args, '--control-token', TOKEN, '--shard', `${i}/${count}`, '--base-url', base, '--cdn-url', `${base}/shards/${i}/cdn`]),
    ),
  );
  const config = deployNginx(['--shards', shards.map((s) => s.url).join(','), '--listen', String(port)]);
  const proxy = await startNginx(config, port, nginx);
  return {
    proxy,
    shards,
    base,
    async stop() {
      await proxy.stop();
      await Promise.all(shards.map((s) => s.kill()));
    },
  };
}

/** Every shard's `GET /_sim/health`, through the proxy's `/shards/I/`. */
export async function shardHealths(cluster: Cluster): Promise<any[]> {
  return Promise.all(cluster.shards.map(async (_, i) => (await fetch(`${cluster.proxy.url}/shards/${i}/_sim/health`)).json()));
}

/**
 * At least `atLeast` keys `${prefix}0`, `${prefix}1`, ..., and more until every one of `count`
 * shards holds one of them: a key's shard is computed from the key and the count alone
 * (`shardOfKey`), as the proxy computes it.
 */
export function keysOnEveryShard(count: number, prefix: string, atLeast: number): string[] {
  const keys: string[] = [];
  const held = new Set<number>();
  while (keys.length < atLeast || held.size < count) {
    const key = `${prefix}${keys.length}`;
    held.add(shardOfKey(key, count));
    keys.push(key);
  }
  return keys;
}

/** The first key `${prefix}N` that shard `index` of `count` holds. */
export function keyOfShard(index: number, count: number, prefix: string): string {
  for (let n = 0; ; n++) if (shardOfKey(`${prefix}${n}`, count) === index) return `${prefix}${n}`;
}
