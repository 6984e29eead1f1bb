/**
 * Connections the shards hold (network faults of kind `hang`, up to `limits.max_hung_connections`
 * each) through Debian's nginx with the configuration `sim deploy nginx` prints, nginx started with
 * the soft limit of open files most systems give (1024): more held requests than nginx's default
 * 1,024 connections per worker leave another key's requests answered, within the memory the
 * Kubernetes base gives the proxy.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CONTROL, keyOfShard, startCluster, type Cluster } from './cluster.js';

/**
 * Held requests per key, on two shards: each shard's bound (`limits.max_hung_connections`, 1000 by
 * default), so 2,000 held requests, 4,000 connections in nginx: more than nginx's default 1,024 per
 * worker on both of its workers.
 */
const HELD = 1000;
/** The proxy's memory limit in deploy/kubernetes/proxy.yaml. */
const PROXY_MEMORY_LIMIT = 128 * 1024 * 1024;

/** A GET of the key's videos on a connection of its own (closed after it): its status, or 0 when the connection was cut. */
function getOnNewConnection(port: number, key: string): Promise<number> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    let text = '';
    const timer = setTimeout(() => socket.destroy(), 10_000);
    socket.on('data', (chunk: Buffer) => (text += chunk.toString('latin1')));
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(Number(text.slice(9, 12)) || 0);
    });
    socket.write(`GET /v1/videos HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAuthorization: Bearer ${key}\r\nConnection: close\r\n\r\n`);
  });
}

/** Resident memory (bytes) of nginx's master `pid` and its workers, from /proc. */
function residentMemory(pid: number): number {
  const children = readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .filter((name) => {
      try {
        // The parent pid is the 4th field, after the command in parentheses.
        return Number(readFileSync(`/proc/${name}/stat`, 'utf8').split(') ')[1]?.split(' ')[1]) === pid;
      } catch {
        return false;
      }
    })
    .map(Number);
  return [pid, ...children].reduce((sum, p) => sum + Number(/^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${p}/status`, 'utf8'))?.[1] ?? 0) * 1024, 0);
}

describe('held connections behind nginx', () => {
  let cluster: Cluster;
  const sockets: Socket[] = [];
  beforeAll(async () => {
    cluster = await startCluster(3, ['--scenario', 'fast', '--clock', 'manual'], { softNofile: 1024 });
  });
  afterAll(async () => {
    for (const socket of sockets) socket.destroy();
    await cluster?.stop();
  });

  it(`${2 * HELD} held requests on two shards leave the third shard's keys answered (nginx has room for every held connection)`, async () => {
    const holders = [keyOfShard(0, 3, 'sk_test_hold_'), keyOfShard(1, 3, 'sk_test_hold_')];
    const free = keyOfShard(2, 3, 'sk_test_free_');
    for (const key of holders) {
      const queued = await fetch(`${cluster.proxy.url}/_sim/faults?api_key=${key}`, {
        method: 'POST',
        headers: { ...CONTROL, 'Content-Type': 'application/json' },
        body: JSON.stringify({ path: '/v1/videos', method: 'GET', network: 'hang', hang_ms: 120_000, times: HELD }),
      });
      expect(queued.status).toBe(200);
    }
    const restingMemory = residentMemory(cluster.proxy.pid);
    let cut = 0;
    // Another key's requests, on the third shard, sent among them (one every 100) and after them.
    const answered: Promise<number>[] = [];
    for (const key of holders) {
      for (let i = 0; i < HELD; i++) {
        const socket = connect(cluster.proxy.port, '127.0.0.1');
        socket.on('error', () => cut++);
        socket.on('close', () => cut++);
        socket.write(`GET /v1/videos HTTP/1.1\r\nHost: 127.0.0.1:${cluster.proxy.port}\r\nAuthorization: Bearer ${key}\r\n\r\n`);
        sockets.push(socket);
        if (i % 100 === 99) answered.push(getOnNewConnection(cluster.proxy.port, free));
      }
    }
    // Until the two shards hold them all (asked of the shards directly: nginx is what is under test).
    const held = async () => Promise.all(cluster.shards.map(async (s) => (await (await fetch(`${s.url}/_sim/health`)).json()).network.hung as number));
    const deadline = Date.now() + 30_000;
    while ((await held()).reduce((a, b) => a + b, 0) < 2 * HELD && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
    expect(await held()).toEqual([HELD, HELD, 0]);
    expect(cut).toBe(0);

    for (let i = 0; i < 5; i++) answered.push(getOnNewConnection(cluster.proxy.port, free));
    expect(await Promise.all(answered)).toEqual(Array((2 * HELD) / 100 + 5).fill(200));
    expect(cluster.proxy.log()).not.toMatch(/worker_connections are not enough|Too many open files/);

    // What holding them costs nginx, against the proxy's memory limit in the Kubernetes base.
    const holding = residentMemory(cluster.proxy.pid);
    console.log(`nginx resident memory: ${(restingMemory / 2 ** 20).toFixed(1)} MiB at rest, ${(holding / 2 ** 20).toFixed(1)} MiB holding ${2 * HELD} requests`);
    expect(holding).toBeLessThan(PROXY_MEMORY_LIMIT / 2);
  });
});
