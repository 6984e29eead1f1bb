/**
 * The typed control client given the proxy's address: calls that name no account go to every
 * shard and their answers are merged; calls that name one go through the proxy once; with a shard
 * down, a call to every shard rejects naming it, after trying all, without retrying. Every call
 * carries the shards' control token.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { SimulatorControl, SimulatorShardsError } from '../../src/index.js';
import { PROMPT } from '../helpers.js';
import { TOKEN, keysOnEveryShard, shardHealths, startCluster, type Cluster } from './cluster.js';

const ARGS = ['--scenario', 'fast', '--clock', 'manual'];
const START = '2026-01-01T00:00:00.000Z';

/** A fetch that logs every request it sends (method and path). */
function loggingFetch(): { fetch: typeof fetch; sent: string[] } {
  const sent: string[] = [];
  return {
    sent,
    fetch: (input, init) => {
      const url = new URL(input instanceof Request ? input.url : input.toString());
      sent.push(`${init?.method ?? 'GET'} ${url.pathname}${url.search}`);
      return fetch(input, init);
    },
  };
}

async function create(cluster: Cluster, key: string): Promise<{ id: string; created_at: string }> {
  const res = await fetch(`${cluster.proxy.url}/v1/videos`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ model: 'video-3.2', prompt: PROMPT }),
  });
  expect(res.status).toBe(200);
  return res.json() as Promise<{ id: string; created_at: string }>;
}

describe('SimulatorControl over three shards', () => {
  let cluster: Cluster;
  beforeAll(async () => {
    cluster = await startCluster(3, ARGS);
  });
  afterAll(async () => {
    await cluster?.stop();
  });
  afterEach(async () => {
    await new SimulatorControl({ baseUrl: cluster.proxy.url, token: TOKEN }).reset();
  });

  it('resets every shard and moves every global clock to one instant', async () => {
    // An account on every shard.
    for (const key of keysOnEveryShard(3, 'sk_test_fan_', 1)) await create(cluster, key);
    expect((await shardHealths(cluster)).every((h) => h.limits.accounts > 0)).toBe(true);

    const { fetch: logged, sent } = loggingFetch();
    const control = new SimulatorControl({ baseUrl: cluster.proxy.url, token: TOKEN, fetch: logged });
    const reset = await control.reset();
    // The proxy refused it (it names no account), health said how many shards, then each got it once.
    expect(sent).toEqual(['POST /_sim/reset', 'GET /_sim/health', 'POST /shards/0/_sim/reset', 'POST /shards/1/_sim/reset', 'POST /shards/2/_sim/reset']);
    expect(reset.shards?.map((h) => h.shard)).toEqual([0, 1, 2].map((index) => ({ index, count: 3 })));
    expect((await shardHealths(cluster)).map((h) => h.limits.accounts)).toEqual([0, 0, 0]);

    // A shard whose clock is ahead: every clock ends at the latest plus the seconds asked.
    await control.shard(1).clock.advance(7);
    sent.length = 0;
    expect((await control.clock.advance(30)).now).toBe('2026-01-01T00:00:37.000Z');
    expect(sent.filter((s) => s.startsWith('POST'))).toEqual([0, 1, 2].map((i) => `POST /shards/${i}/_sim/clock/advance`));
    expect((await shardHealths(cluster)).map((h) => h.clock.now)).toEqual(Array(3).fill('2026-01-01T00:00:37.000Z'));
    // The `to` form: sent twice, the clocks stay.
    await control.clock.advanceTo('2026-01-01T00:01:00.000Z');
    await control.clock.advanceTo('2026-01-01T00:01:00.000Z');
    expect((await shardHealths(cluster)).map((h) => h.clock.now)).toEqual(Array(3).fill('2026-01-01T00:01:00.000Z'));
    expect((await control.clock.get()).now).toBe('2026-01-01T00:01:00.000Z');
  });

  it('merges lists in creation order then by id, and health under shards', async () => {
    const control = new SimulatorControl({ baseUrl: cluster.proxy.url, token: TOKEN });
    const created: { id: string; created_at: string }[] = [];
    for (let round = 0; round < 3; round++) {
      for (let k = 0; k < 6; k++) created.push(await create(cluster, `sk_test_merge_${k}`));
      await control.clock.advance(1);
    }
    // Creation order, then by id (code units) for generations created at one instant.
    const order = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
    const expected = created.slice().sort((a, b) => order(a.created_at, b.created_at) || order(a.id, b.id)).map((g) => g.id);
    const list = await control.generations.list({ limit: 100 });
    expect(list.data.map((g) => g.id)).toEqual(expected);
    expect(list.has_more).toBe(false);
    const page = await control.generations.list({ limit: 5 });
    expect(page.data.map((g) => g.id)).toEqual(expected.slice(0, 5));
    expect(page.has_more).toBe(true);
    const health = await control.health();
    expect(health.shard).toEqual({ index: 0, count: 3 });
    expect(health.shards?.map((h) => h.shard?.index)).toEqual([0, 1, 2]);
    expect(health.shards?.reduce((n, h) => n + h.limits.stored_generations, 0)).toBe(created.length);
    // A generation by id alone is found on the shard that holds it.
    const one = created[4]!;
    expect((await control.generations.get(one.id)).id).toBe(one.id);
    expect((await control.generations.finish(one.id)).status).toBe('succeeded');
    await expect(control.generations.get('vid_nowhere')).rejects.toMatchObject({ status: 404, code: 'resource_not_found' });
  });

  it('verifies and waits over every shard: counts summed, a wait on each shard, let go once enough matched', async () => {
    const keys = keysOnEveryShard(3, 'sk_test_verify_', 3);
    const control = new SimulatorControl({ baseUrl: cluster.proxy.url, token: TOKEN });
    await create(cluster, keys[0] as string);
    const waiting = control.waitForRequest({ method: 'POST', path: '/v1/videos' }, { count: keys.length, timeoutMs: 20_000 });
    for (const key of keys.slice(1)) await create(cluster, key);
    expect((await waiting).map((e) => e.account).sort()).toEqual([...keys].sort());
    expect(await control.verify({ method: 'POST' }, { exactly: keys.length })).toMatchObject({ verified: true, count: keys.length });
    await expect(control.verify({ method: 'POST' }, { at_most: 0 })).rejects.toThrow(`Expected no request matching {"method":"POST"} over 3 shards; found ${keys.length}.`);
    expect((await control.requests({ method: 'POST' })).map((e) => e.account).sort()).toEqual([...keys].sort());
  });

  it('sends a call that names an account through the proxy once, to its shard', async () => {
    const key = 'sk_test_keyed_client';
    await create(cluster, key);
    const { fetch: logged, sent } = loggingFetch();
    const control = new SimulatorControl({ baseUrl: cluster.proxy.url, token: TOKEN, fetch: logged });
    expect((await control.clock.advance(5, key)).now).toBe('2026-01-01T00:00:05.000Z');
    await control.faults.queue({ path: '/v1/videos', method: 'GET', status: 500, api_key: key });
    const list = await control.generations.list({ apiKey: key });
    expect(list.data).toHaveLength(1);
    expect(sent).toEqual([
      `POST /_sim/clock/advance?api_key=${key}`,
      `POST /_sim/faults?api_key=${key}`,
      `GET /_sim/generations?api_key=${key}`,
    ]);
    expect((await control.clock.get()).now).toBe(START);
  });
});

describe('SimulatorControl with a shard down', () => {
  let cluster: Cluster;
  beforeAll(async () => {
    cluster = await startCluster(3, ARGS);
  });
  afterAll(async () => {
    await cluster?.stop();
  });

  it('fails closed: a call to every shard rejects naming each shard that failed, after trying all, and is not retried', async () => {
    await cluster.shards[2]!.kill();
    const { fetch: logged, sent } = loggingFetch();
    const control = new SimulatorControl({ baseUrl: cluster.proxy.url, token: TOKEN, fetch: logged });
    const error = await control.reset().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(SimulatorShardsError);
    const e = error as SimulatorShardsError;
    expect(e.failures.map((f) => f.shard)).toEqual([2]);
    expect(e.applied).toEqual([0, 1]);
    expect(e.message).toMatch(/^POST \/_sim\/reset \(sent to every shard\) failed on shard 2 \(POST \/shards\/2\/_sim\/reset answered 502: [\s\S]*\); it was applied on shards 0, 1$/);
    expect(sent.filter((s) => s === 'POST /shards/2/_sim/reset')).toHaveLength(1);
    await expect(control.clock.advance(10)).rejects.toThrow(/failed on shard 2/);
    await expect(control.health()).rejects.toThrow(/GET \/_sim\/health \(sent to every shard\) failed on shard 2/);
  });
});
