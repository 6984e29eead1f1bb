/**
 * Three shards behind Debian's nginx with the configuration `sim deploy nginx` prints: a
 * multi-account workload answers byte for byte what one simulator answers (media addresses aside),
 * media download through the proxy, keyed control calls reach their shard, calls that name no
 * account are 421, nginx reads the key the shards read (a key it cannot read is 421, one sent
 * around it to another shard is the shard's 421), the shards' control API needs their token through
 * the proxy whatever the Host, the proxy listens on loopback only, and a shard that is down is a 502
 * for its own keys only.
 */
import { connect } from 'node:net';
import { networkInterfaces } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { shardOfKey } from '../../src/core/accounts/shard.js';
import { PROMPT } from '../helpers.js';
import { CONTROL, TOKEN, keyOfShard, keysOnEveryShard, shardHealths, startCluster, startSim, type Cluster, type Sim } from './cluster.js';

const ARGS = ['--scenario', 'fast', '--clock', 'manual'];

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
      // Media addresses name the shard behind the proxy: aside from that, the bytes are the same. A
      // journal entry's `seq` is its instance's arrival number, counted over every account the
      // instance holds (docs/control-api.md): it is left out.
      body: body.replace(/\/shards\/\d+\/cdn\//g, '/cdn/').replace(/"seq":\d+,/g, ''),
    });
    return text === '' ? undefined : (JSON.parse(text));
  };
  const sim = (key: string, method: string, path: string, body?: object) =>
    send(key, method, `${path}${path.includes('?') ? '&' : '?'}api_key=${encodeURIComponent(key)}`, { body, bearer: false, headers: CONTROL });
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
      const moved = await fetch(`${target}/_sim/clock/advance`, { method: 'POST', headers: { ...CONTROL, 'Content-Type': 'application/json' }, body: JSON.stringify({ to: new Date(instant).toISOString() }) });
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

/**
 * One request written byte for byte on a new connection (`headers` as Latin-1: a tab, a byte over
 * 0x7f, any Host, none of which fetch sends as written); its status and JSON body.
 */
function raw(port: number, method: string, path: string, headers: Record<string, string>, body = ''): Promise<{ status: number; body: any }> {
  const head = [`${method} ${path} HTTP/1.1`, ...Object.entries({ Host: `127.0.0.1:${port}`, ...headers }).map(([n, v]) => `${n}: ${v}`)];
  if (body !== '') head.push(`Content-Length: ${Buffer.byteLength(body)}`);
  head.push('Connection: close', '', body);
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('error', reject);
    socket.on('end', () => {
      const text = Buffer.concat(chunks).toString('latin1');
      const at = text.indexOf('\r\n\r\n');
      let payload = text.slice(at + 4);
      // A chunked body: its chunks' data, without their sizes.
      if (/^transfer-encoding: *chunked/im.test(text.slice(0, at))) {
        let joined = '';
        while (payload.length > 0) {
          const eol = payload.indexOf('\r\n');
          const size = parseInt(payload.slice(0, eol), 16);
          if (!size) break;
          joined += payload.slice(eol + 2, eol + 2 + size);
          payload = payload.slice(eol + 2 + size + 2);
        }
        payload = joined;
      }
      resolve({ status: Number(text.slice(9, 12)), body: payload === '' ? undefined : JSON.parse(payload) });
    });
    socket.write(Buffer.from(head.join('\r\n'), 'latin1'));
  });
}

describe('three shards behind nginx', () => {
  let cluster: Cluster;
  let alone: Sim;
  beforeAll(async () => {
    cluster = await startCluster(3, ARGS);
    alone = await startSim([...ARGS, '--control-token', TOKEN, '--base-url', cluster.base, '--cdn-url', `${cluster.base}/cdn`]);
  });
  afterAll(async () => {
    await cluster?.stop();
    await alone?.kill();
  });

  /**
   * The shard that holds `key`'s account, asked of every shard (after the key was used): the one the
   * key hashes to, every other refusing the key (421 wrong_shard).
   */
  async function shardOf(key: string): Promise<number> {
    const holders: number[] = [];
    for (const [i] of cluster.shards.entries()) {
      const res = await fetch(`${cluster.proxy.url}/shards/${i}/_sim/generations?api_key=${key}`, { headers: CONTROL });
      const body = await res.json();
      if (res.status === 421) expect(body.error.code).toBe('wrong_shard');
      else if (body.data.length > 0) holders.push(i);
    }
    expect(holders).toEqual([shardOfKey(key, cluster.shards.length)]);
    return holders[0] as number;
  }

  it('a multi-account workload answers byte for byte what one simulator answers, and spreads over every shard', async () => {
    // Eight accounts or more, some on every shard.
    const keys = keysOnEveryShard(3, 'sk_test_shard_', 8);
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
    await fetch(`${cluster.proxy.url}/_sim/generations/${created.id}/finish?api_key=${key}`, { method: 'POST', headers: CONTROL });
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
      headers: { ...CONTROL, 'Content-Type': 'application/json' },
      body: JSON.stringify({ path: '/v1/videos', method: 'GET', status: 500 }),
    });
    expect(queued.status).toBe(200);
    const waiting = await Promise.all(cluster.shards.map(async (_, i) => (await (await fetch(`${cluster.proxy.url}/shards/${i}/_sim/faults`, { headers: CONTROL })).json()).faults.filter((f: { api_key: string }) => f.api_key === key).length));
    expect(waiting).toEqual(cluster.shards.map((_, i) => (i === shard ? 1 : 0)));
    expect((await fetch(`${cluster.proxy.url}/v1/videos`, { headers: { Authorization: `Bearer ${key}` } })).status).toBe(500);
    const moved = await (await fetch(`${cluster.proxy.url}/_sim/clock/advance?api_key=${key}`, { method: 'POST', headers: { ...CONTROL, 'Content-Type': 'application/json' }, body: '{"seconds":30}' })).json();
    // Its shard moved its clock; the others hold nothing of the key and refuse it.
    const clocks = await Promise.all(cluster.shards.map(async (_, i) => (await (await fetch(`${cluster.proxy.url}/shards/${i}/_sim/clock?api_key=${key}`, { headers: CONTROL })).json())));
    expect(clocks[shard].now).toBe(moved.now);
    expect(clocks.filter((_, i) => i !== shard).map((c) => c.error.code)).toEqual(['wrong_shard', 'wrong_shard']);
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

  it("reads a Bearer key as the shards read it (spaces and tabs around it, bytes over 0x7f): each lands on the key's own shard", async () => {
    const video = JSON.stringify({ model: 'video-3.2', prompt: PROMPT });
    const forms = (key: string) => [`Bearer ${key}\t`, `\tBearer ${key}`, `bearer  ${key} \t `];
    // Several keys on every shard: under a proxy that hashed other bytes than the shards read, some would land elsewhere.
    for (const key of [...keysOnEveryShard(3, 'sk_test_tab_', 6), ...keysOnEveryShard(3, 'sk_test_\xe9', 3)]) {
      for (const authorization of forms(key)) {
        const res = await raw(cluster.proxy.port, 'POST', '/v1/videos', { Authorization: authorization, 'Content-Type': 'application/json' }, video);
        expect(res.status, `${JSON.stringify(authorization)}: ${JSON.stringify(res.body)}`).toBe(200);
      }
      // One account, on the key's shard: every create of it, whatever spaces and tabs were around the key.
      const list = await raw(cluster.proxy.port, 'GET', '/v1/videos?limit=100', { Authorization: `Bearer ${key}` });
      expect(list.body.data, key).toHaveLength(3);
      const owner = shardOfKey(key, 3);
      expect((await raw(cluster.proxy.port, 'GET', `/shards/${owner}/v1/videos`, { Authorization: `Bearer ${key}` })).body.data).toHaveLength(3);
    }
  });

  it.each([
    ['percent-encoded', 'sk_test_%6B5'],
    ['with a +', 'sk_test_k+5'],
    ['of a character beyond ASCII, encoded', encodeURIComponent('sk_test_\u00e95')],
  ])('refuses a control call whose api_key is %s (421 unroutable_api_key): it reaches no shard', async (_form, written) => {
    const res = await fetch(`${cluster.proxy.url}/_sim/faults?api_key=${written}`, {
      method: 'POST',
      headers: { ...CONTROL, 'Content-Type': 'application/json' },
      body: JSON.stringify({ path: '/v1/videos', method: 'GET', status: 500 }),
    });
    expect(res.status).toBe(421);
    expect(res.headers.get('x-request-id')).toMatch(/^req_proxy_[0-9a-f]{32}$/);
    const answer = await res.json();
    expect(answer.error).toMatchObject({ type: 'invalid_request_error', code: 'unroutable_api_key', param: null });
    expect(answer.error.message).toContain('Send the key unencoded');
    const read = decodeURIComponent(written.replace(/\+/g, ' '));
    for (const [i] of cluster.shards.entries()) {
      const faults = (await (await fetch(`${cluster.proxy.url}/shards/${i}/_sim/faults`, { headers: CONTROL })).json()).faults;
      expect(faults.filter((f: { api_key: string }) => f.api_key === read), `shard ${i}`).toEqual([]);
    }
    // Written as it is read, the same key is routed to its shard.
    const plain = await fetch(`${cluster.proxy.url}/_sim/clock?api_key=sk_test_k5`, { headers: CONTROL });
    expect(plain.status).toBe(200);
  });

  it("answers a key sent around the proxy to a shard that does not hold it with that shard's 421 wrong_shard, changing nothing", async () => {
    const key = keyOfShard(0, 3, 'sk_test_around_');
    const create = await fetch(`${cluster.proxy.url}/shards/1/v1/videos`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ model: 'video-3.2', prompt: PROMPT }),
    });
    expect(create.status).toBe(421);
    expect((await create.json()).error).toEqual({
      type: 'invalid_request_error',
      code: 'wrong_shard',
      param: null,
      message:
        'This simulator is shard 1 of 3, and the API key of this request belongs to shard 0: this shard holds none of its state. Send the request through the proxy in front of the shards (or to shard 0).',
    });
    const clock = await fetch(`${cluster.proxy.url}/shards/2/_sim/clock/advance?api_key=${key}`, { method: 'POST', headers: { ...CONTROL, 'Content-Type': 'application/json' }, body: '{"seconds":5}' });
    expect(clock.status).toBe(421);
    const fault = await fetch(`${cluster.proxy.url}/shards/1/_sim/faults`, { method: 'POST', headers: { ...CONTROL, 'Content-Type': 'application/json' }, body: JSON.stringify({ path: '/v1/videos', status: 500, api_key: key }) });
    expect(fault.status).toBe(421);
    // Through the proxy, its own shard answers it.
    expect((await fetch(`${cluster.proxy.url}/v1/videos`, { headers: { Authorization: `Bearer ${key}` } })).status).toBe(200);
    // The refused clock move moved nothing: the account's clock is its shard's.
    const shardClock = (await (await fetch(`${cluster.proxy.url}/shards/0/_sim/clock`, { headers: CONTROL })).json()).now;
    expect((await (await fetch(`${cluster.proxy.url}/_sim/clock?api_key=${key}`, { headers: CONTROL })).json()).now).toBe(shardClock);
  });

  it("needs the shards' control token through the proxy, whatever Host the client sends: no reset, no shutdown without it", async () => {
    const key = keyOfShard(1, 3, 'sk_test_token_');
    for (const path of ['/shards/0/_sim/reset', '/shards/1/_sim/shutdown', `/_sim/reset?api_key=${key}`, `/_sim/requests?api_key=${key}`]) {
      for (const host of ['localhost', `127.0.0.1:${cluster.proxy.port}`]) {
        const res = await raw(cluster.proxy.port, path.includes('requests') ? 'GET' : 'POST', path, { Host: host });
        expect(res.status, `${path} (Host: ${host})`).toBe(401);
        expect(res.body.error.code).toBe('control_token_required');
      }
    }
    for (const shard of cluster.shards) expect(shard.child.exitCode).toBeNull();
    expect((await shardHealths(cluster)).map((h) => h.status)).toEqual(['ok', 'ok', 'ok']);
    // With it, the same call is answered.
    expect((await raw(cluster.proxy.port, 'POST', `/_sim/reset?api_key=${key}`, { Host: 'localhost', ...CONTROL })).status).toBe(200);
  });

  it('listens on 127.0.0.1 only (--listen PORT): not on another address of the machine', async () => {
    const reaches = (host: string) =>
      new Promise<boolean>((resolve) => {
        const socket = connect(cluster.proxy.port, host);
        socket.once('connect', () => {
          socket.destroy();
          resolve(true);
        });
        socket.once('error', () => resolve(false));
      });
    expect(await reaches('127.0.0.1')).toBe(true);
    // 127.0.0.2 is this machine too: a proxy listening on every interface would answer there.
    expect(await reaches('127.0.0.2')).toBe(false);
    const lan = Object.values(networkInterfaces()).flat().find((a) => a?.family === 'IPv4' && !a.internal)?.address;
    if (lan !== undefined) expect(await reaches(lan)).toBe(false);
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
    const keys = keysOnEveryShard(3, 'sk_test_down_', 12);
    const created = new Map<string, string>();
    for (const key of keys) {
      const res = await fetch(`${cluster.proxy.url}/v1/videos`, { method: 'POST', headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' }, body: JSON.stringify({ model: 'video-3.2', prompt: PROMPT }) });
      created.set(key, (await res.json()).id);
    }
    const owner = new Map<string, number>();
    for (const [i] of cluster.shards.entries()) {
      const list = await (await fetch(`${cluster.proxy.url}/shards/${i}/_sim/generations?limit=100`, { headers: CONTROL })).json();
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
        expect((await fetch(`${cluster.proxy.url}/_sim/clock?api_key=${key}`, { headers: CONTROL })).status).toBe(502);
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
