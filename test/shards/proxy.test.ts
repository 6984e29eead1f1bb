/**
 * Three shards behind Debian's nginx with the configuration `sim deploy nginx` prints: a
 * multi-account workload answers byte for byte what one simulator answers (media addresses aside),
 * media download through the proxy, keyed control calls reach their shard, calls that name no
 * account are 421, and a shard that is down is a 502 for its own keys only.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keysOnEveryShard, shardHealths, startCluster, startSim, type Cluster, type Sim } from './cluster.js';

const ARGS = ['--scenario', 'fast', '--clock', 'manual'];
const PROMPT = 'A slow dolly shot across a rain-soaked neon street at night.';

interface Seen {
  key: string;
  request: string;
  status: number;
  headers: Record<string, string | null>;
  body: string;
}

/** The headers an answer carries for its client (the proxy's own, Date and Server, aside). */
const COMPARED_HEADERS = ['x-request-id', 'x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset', 'retry-after', 'idempotent-replayed', 'content-type'];

/**
 * Sends a multi-account script to `base` (through the proxy, or to one simulator) and answers what
 * each account saw. Global clock moves go to every shard (`globalTargets`) with the `to` form, as
 * the typed client sends them; everything else names its account.
 */
async function workload(base: string, globalTargets: string[], keys: string[]): Promise<{ seen: Seen[]; media: string[] }> {
  const seen: Seen[] = [];
  const media: string[] = [];
  const send = async (key: string, method: string, path: string, options: { body?: object; bearer?: boolean; headers?: Record<string, string> } = {}) => {
    const headers: Record<string, string> = { ...options.headers };
    if (options.bearer !== false) headers.Authorization = `Bearer ${key}`;
    if (options.body) headers['Content-Type'] = 'application/json';
    const res = await fetch(`${base}${path}`, { method, headers, body: options.body && JSON.stringify(options.body) });
    const text = await res.text();
    // A reset answers the health of the simulator that holds the account: of the instance, not of the account.
    const body = res.status === 200 && path.startsWith('/_sim/reset') ? JSON.stringify({ status: JSON.parse(text).status }) : text;
    seen.push({
      key,
      request: `${method} ${path}`,
      status: res.status,
      headers: Object.fromEntries(COMPARED_HEADERS.map((h) => [h, res.headers.get(h)])),
      // Media addresses name the shard behind the proxy: aside from that, the bytes are the same.
      body: body.replace(/\/shards\/\d+\/cdn\//g, '/cdn/'),
    });
    return text === '' ? undefined : (JSON.parse(text) as any);
  };
  const sim = (key: string, method: string, path: string, body?: object) =>
    send(key, method, `${path}${path.includes('?') ? '&' : '?'}api_key=${encodeURIComponent(key)}`, { body, bearer: false });
  const cursors = new Map<string, number>();
  const videos = new Map<string, string[]>();
  let instant = Date.parse('2026-01-01T00:00:00.000Z');
  for (let round = 0; round < 4; round++) {
    for (const [k, key] of keys.entries()) {
      if (round === 1 && k % 3 === 0) await sim(key, 'POST', '/_sim/faults', { path: '/v1/videos/*', method: 'GET', status: 500, times: 1 });
      const created = await send(key, 'POST', '/v1/videos', {
        body: { model: 'video-3.2', prompt: `${PROMPT} ${round}`, duration_seconds: 4 + k },
        headers: k % 2 === 0 ? { 'Idempotency-Key': `create-${round}` } : {},
      });
      if (created?.id) videos.set(key, [...(videos.get(key) ?? []), created.id]);
      if (k % 2 === 0) await send(key, 'POST', '/v1/videos', { body: { model: 'video-3.2', prompt: `${PROMPT} ${round}`, duration_seconds: 4 + k }, headers: { 'Idempotency-Key': `create-${round}` } });
      if (k % 4 === 1) await send(key, 'POST', '/v1/images', { body: { prompt: `still ${round}` } });
      for (const id of videos.get(key) ?? []) await send(key, 'GET', `/v1/videos/${id}`);
      await send(key, 'GET', '/v1/videos?limit=2');
      const list = await sim(key, 'GET', `/_sim/generations${cursors.has(key) ? `?changed_since=${cursors.get(key)}` : ''}`);
      cursors.set(key, list.cursor);
      if (k % 3 === 2) await sim(key, 'POST', '/_sim/clock/advance', { seconds: 0.5 + k / 10 });
      await sim(key, 'GET', '/_sim/clock');
      if (round === 2 && k % 2 === 1) {
        const last = videos.get(key)?.at(-1);
        if (last) await send(key, 'DELETE', `/v1/videos/${last}`);
      }
    }
    // A global clock move, sent to every shard: the `to` form, so every clock ends at the same instant.
    instant += 2500;
    for (const target of globalTargets) {
      const moved = await fetch(`${target}/_sim/clock/advance`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ to: new Date(instant).toISOString() }) });
      expect(moved.status).toBe(200);
    }
  }
  for (const key of keys) {
    const list = await send(key, 'GET', '/v1/videos?limit=100');
    for (const v of list.data) if (v.output) media.push(v.output.url, v.output.thumbnail_url);
    await sim(key, 'GET', '/_sim/requests?limit=10');
    await sim(key, 'GET', '/_sim/report');
    await sim(key, 'POST', '/_sim/reset');
    await send(key, 'GET', '/v1/videos');
  }
  return { seen, media };
}

describe('three shards behind nginx', () => {
  let cluster: Cluster;
  let alone: Sim;
  beforeAll(async () => {
    cluster = await startCluster(3, ARGS);
    alone = await startSim([...ARGS, '--base-url', cluster.base, '--cdn-url', `${cluster.base}/cdn`]);
  });
  afterAll(async () => {
    await cluster?.stop();
    await alone?.kill();
  });

  /** The shard that holds `key`'s account, asked of every shard (after the key was used). */
  async function shardOf(key: string): Promise<number> {
    const holders: number[] = [];
    for (const [i] of cluster.shards.entries()) {
      const res = await fetch(`${cluster.proxy.url}/shards/${i}/_sim/generations?api_key=${key}`);
      if ((await res.json()).data.length > 0) holders.push(i);
    }
    expect(holders).toHaveLength(1);
    return holders[0] as number;
  }

  it('a multi-account workload answers byte for byte what one simulator answers, and spreads over every shard', async () => {
    // Eight accounts or more, some on every shard.
    const keys = await keysOnEveryShard(cluster, 'sk_test_shard_', 8);
    const sharded = await workload(cluster.proxy.url, cluster.shards.map((_, i) => `${cluster.proxy.url}/shards/${i}`), keys);
    const single = await workload(alone.url, [alone.url], keys);
    expect(sharded.seen.length).toBeGreaterThan(250);
    for (let i = 0; i < single.seen.length; i++) expect(sharded.seen[i], `answer ${i}: ${single.seen[i]?.key} ${single.seen[i]?.request}`).toEqual(single.seen[i]);
    expect(sharded.seen.length).toBe(single.seen.length);
    // The script met what it is meant to: replays, injected faults, keyed control calls, media.
    expect(single.seen.some((s) => s.headers['idempotent-replayed'] === 'true')).toBe(true);
    expect(single.seen.some((s) => s.status === 500)).toBe(true);
    expect(single.seen.some((s) => /_sim_\d{6}$/.test(s.headers['x-request-id'] ?? ''))).toBe(true);
    expect(sharded.media.length).toBeGreaterThan(0);
    // Every shard held some of the accounts (they were reset at the end of the script: count requests).
    const served = (await shardHealths(cluster)).map((h) => h.limits.accounts);
    expect(served.every((n: number) => n > 0)).toBe(true);
  });

  it('media download through the proxy from the shard that holds them, the same bytes as one simulator serves', async () => {
    const key = 'sk_test_media';
    const created = await (
      await fetch(`${cluster.proxy.url}/v1/videos`, { method: 'POST', headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' }, body: JSON.stringify({ model: 'video-3.2', prompt: PROMPT }) })
    ).json();
    const shard = await shardOf(key);
    await fetch(`${cluster.proxy.url}/_sim/generations/${created.id}/finish?api_key=${key}`, { method: 'POST' });
    const video = await (await fetch(`${cluster.proxy.url}/v1/videos/${created.id}`, { headers: { Authorization: `Bearer ${key}` } })).json();
    expect(video.status).toBe('succeeded');
    expect(video.output.url).toBe(`${cluster.base}/shards/${shard}/cdn/videos/${created.id}.mp4`);
    const mp4 = await fetch(video.output.url);
    expect(mp4.status).toBe(200);
    expect(mp4.headers.get('content-type')).toBe('video/mp4');
    const bytes = Buffer.from(await mp4.arrayBuffer());
    const direct = Buffer.from(await (await fetch(`${cluster.shards[shard]!.url}/cdn/videos/${created.id}.mp4`)).arrayBuffer());
    expect(bytes.equals(direct)).toBe(true);
    const ranged = await fetch(video.output.url, { headers: { Range: 'bytes=0-99' } });
    expect(ranged.status).toBe(206);
    expect(Buffer.from(await ranged.arrayBuffer()).equals(bytes.subarray(0, 100))).toBe(true);
    expect((await fetch(video.output.thumbnail_url)).headers.get('content-type')).toBe('image/png');
    // An address without its shard cannot be routed: the proxy says where media are.
    const unprefixed = await fetch(`${cluster.proxy.url}/cdn/videos/${created.id}.mp4`);
    expect(unprefixed.status).toBe(421);
    expect((await unprefixed.json()).error.code).toBe('sharded_global_call');
  });

  it('a control call that names an account reaches the shard that owns it, and only that one', async () => {
    const key = 'sk_test_keyed_control';
    await fetch(`${cluster.proxy.url}/v1/videos`, { headers: { Authorization: `Bearer ${key}` } });
    await fetch(`${cluster.proxy.url}/v1/videos`, { method: 'POST', headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' }, body: JSON.stringify({ model: 'video-3.2', prompt: PROMPT }) });
    const shard = await shardOf(key);
    const queued = await fetch(`${cluster.proxy.url}/_sim/faults?api_key=${key}`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ path: '/v1/videos', method: 'GET', status: 500 }),
    });
    expect(queued.status).toBe(200);
    const waiting = await Promise.all(cluster.shards.map(async (_, i) => (await (await fetch(`${cluster.proxy.url}/shards/${i}/_sim/faults`)).json()).faults.filter((f: { api_key: string }) => f.api_key === key).length));
    expect(waiting).toEqual(cluster.shards.map((_, i) => (i === shard ? 1 : 0)));
    expect((await fetch(`${cluster.proxy.url}/v1/videos`, { headers: { Authorization: `Bearer ${key}` } })).status).toBe(500);
    const moved = await (await fetch(`${cluster.proxy.url}/_sim/clock/advance?api_key=${key}`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{"seconds":30}' })).json();
    const clocks = await Promise.all(cluster.shards.map(async (_, i) => (await (await fetch(`${cluster.proxy.url}/shards/${i}/_sim/clock?api_key=${key}`)).json()).now));
    expect(clocks[shard]).toBe(moved.now);
    expect(clocks.filter((now) => now === moved.now)).toHaveLength(1);
  });

  it.each([
    ['POST', '/_sim/reset', '{}'],
    ['POST', '/_sim/clock/advance', '{"seconds":10}'],
    ['POST', '/_sim/faults', '{"path":"/v1/videos","status":500}'],
    ['POST', '/_sim/faults', '{"path":"/v1/videos","status":500,"api_key":"sk_test_in_the_body"}'],
    ['GET', '/_sim/generations', undefined],
    ['POST', '/_sim/shutdown', undefined],
  ])('%s %s %s through the proxy names no account: 421 sharded_global_call, in the service\'s error shape', async (method, path, body) => {
    const res = await fetch(`${cluster.proxy.url}${path}`, { method, headers: body ? { 'Content-Type': 'application/json' } : {}, body });
    expect(res.status).toBe(421);
    expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(res.headers.get('x-request-id')).toMatch(/^req_proxy_[0-9a-f]{32}$/);
    const answer = await res.json();
    expect(answer).toEqual({
      error: {
        type: 'invalid_request_error',
        code: 'sharded_global_call',
        param: null,
        message:
          'This deployment has 3 shards and this control call names no account, so the proxy cannot choose a shard. ' +
          'Send it to every shard (/shards/0/_sim/... to /shards/2/_sim/...; SimulatorControl does), or name the account with ?api_key=.',
      },
    });
    // Nothing reached a shard: each is still up.
    for (const shard of cluster.shards) expect(shard.child.exitCode).toBeNull();
  });

  it("GET /_sim/health and the dashboard's files come from shard 0", async () => {
    const health = await (await fetch(`${cluster.proxy.url}/_sim/health`)).json();
    expect(health.shard).toEqual({ index: 0, count: 3 });
    const page = await fetch(`${cluster.proxy.url}/_sim/`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    expect((await fetch(`${cluster.proxy.url}/shards/2/_sim/health`).then((r) => r.json())).shard).toEqual({ index: 2, count: 3 });
  });
});

describe('a shard that is down', () => {
  let cluster: Cluster;
  beforeAll(async () => {
    cluster = await startCluster(3, ARGS);
  });
  afterAll(async () => {
    await cluster?.stop();
  });

  it('is a 502 for its own keys only: no key moves to a shard without its state', async () => {
    const keys = await keysOnEveryShard(cluster, 'sk_test_down_', 12);
    const created = new Map<string, string>();
    for (const key of keys) {
      const res = await fetch(`${cluster.proxy.url}/v1/videos`, { method: 'POST', headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' }, body: JSON.stringify({ model: 'video-3.2', prompt: PROMPT }) });
      created.set(key, (await res.json()).id);
    }
    const owner = new Map<string, number>();
    for (const [i] of cluster.shards.entries()) {
      const list = await (await fetch(`${cluster.proxy.url}/shards/${i}/_sim/generations?limit=100`)).json();
      for (const g of list.data) owner.set(g.account, i);
    }
    const down = 1;
    const ofDown = keys.filter((k) => owner.get(k) === down);
    const ofOthers = keys.filter((k) => owner.get(k) !== down);
    expect(ofDown.length).toBeGreaterThan(0);
    expect(ofOthers.length).toBeGreaterThan(0);
    await cluster.shards[down]!.kill();
    // Several rounds: a shard is never marked failed and skipped, so its keys never land elsewhere.
    for (let round = 0; round < 3; round++) {
      for (const key of ofDown) {
        const res = await fetch(`${cluster.proxy.url}/v1/videos/${created.get(key)}`, { headers: { Authorization: `Bearer ${key}` } });
        expect(res.status, key).toBe(502);
        await res.arrayBuffer();
        expect((await fetch(`${cluster.proxy.url}/_sim/clock?api_key=${key}`)).status).toBe(502);
      }
      for (const key of ofOthers) {
        const res = await fetch(`${cluster.proxy.url}/v1/videos/${created.get(key)}`, { headers: { Authorization: `Bearer ${key}` } });
        expect(res.status, key).toBe(200);
        expect((await res.json()).id).toBe(created.get(key));
      }
    }
    expect((await fetch(`${cluster.proxy.url}/shards/${down}/_sim/health`)).status).toBe(502);
  });
});
