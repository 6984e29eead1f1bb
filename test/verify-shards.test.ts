/**
 * Verifications and waits over shards, in-process: three shards (`shard: { index, count }`), each
 * listening, behind a stand-in for the proxy (`sim deploy nginx`'s routing, as a `fetch`): a call
 * that names no account is its 421 `sharded_global_call`, `/shards/I/...` goes to shard I. The
 * typed client sums counts over the shards, waits on each, and lists every shard's entries; a
 * sequence of one account's requests is verified on its shard. (test/shards/ runs the same
 * behind a real nginx.)
 */
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fail } from '../src/core/errors.js';
import { shardOfKey } from '../src/core/accounts/shard.js';
import { createSimulator, SimulatorControl, VerificationError, type SimulatorHandle } from '../src/index.js';
import { VALID_VIDEO, bearer, makeSim } from './helpers.js';

const COUNT = 3;
const TOKEN = 'verify-shards-token-0123456789';
const PROXY = 'http://proxy.test';

/** The first key `sk_test_<prefix>N` that shard `index` holds. */
function keyOf(index: number, prefix: string): string {
  for (let n = 0; ; n++) if (shardOfKey(`sk_test_${prefix}${n}`, COUNT) === index) return `sk_test_${prefix}${n}`;
}

let shards: SimulatorHandle[] = [];
let urls: string[] = [];

/** The proxy's routing, as a fetch: by the Bearer key (/v1), by ?api_key= (/_sim), /shards/I; health to shard 0. */
const proxied: typeof fetch = async (input, init) => {
  const url = new URL(input instanceof Request ? input.url : input.toString());
  const direct = /^\/shards\/(\d+)(\/.*)$/.exec(url.pathname);
  if (direct) return fetch(`${urls[Number(direct[1])]}${direct[2]}${url.search}`, init);
  const shardOf = (key: string): string => `${urls[shardOfKey(key, COUNT)]}${url.pathname}${url.search}`;
  if (url.pathname.startsWith('/v1')) {
    const key = String(new Headers(init?.headers).get('authorization')).replace(/^Bearer /, '');
    return fetch(shardOf(key), init);
  }
  if (url.pathname === '/_sim/health') return fetch(`${urls[0]}${url.pathname}`, init);
  const key = url.searchParams.get('api_key');
  if (key === null) return new Response(JSON.stringify(fail('sharded_global_call').toBody()), { status: 421, headers: { 'Content-Type': 'application/json' } });
  return fetch(shardOf(key), init);
};

const control = (): SimulatorControl => new SimulatorControl({ baseUrl: PROXY, token: TOKEN, fetch: proxied });

function create(key: string): Promise<Response> {
  return proxied(`${PROXY}/v1/videos`, { method: 'POST', headers: { ...bearer(key), 'Content-Type': 'application/json' }, body: JSON.stringify(VALID_VIDEO) });
}

beforeAll(async () => {
  shards = Array.from({ length: COUNT }, (_, index) =>
    createSimulator({ scenario: 'fast', clock: 'manual', shard: { index, count: COUNT }, controlToken: TOKEN, log: () => {} }),
  );
  urls = await Promise.all(shards.map((s) => s.listen(0)));
});
afterAll(async () => {
  await Promise.all(shards.map((s) => s.close()));
});

describe('over shards', () => {
  it("verify sums every shard's count and dropped requests, and says so in the single simulator's words", async () => {
    await control().reset();
    for (let i = 0; i < COUNT; i++) expect((await create(keyOf(i, 'sum'))).status).toBe(200);
    expect(await control().verify({ method: 'POST' }, { exactly: 3 })).toMatchObject({ verified: true, count: 3, dropped: 0 });
    const failed = (await control().verify({ method: 'POST' }, { exactly: 2 }).catch((e: unknown) => e)) as VerificationError;
    expect(failed).toBeInstanceOf(VerificationError);
    expect(failed.sentence).toBe('Expected exactly 2 requests matching {"method":"POST"} over 3 shards; found 3.');
    expect(failed.closest.map((e) => e.differs)).toEqual([[], [], []]);
    // One simulator with the same requests says the same, but for the shards.
    const one = makeSim();
    for (let i = 0; i < COUNT; i++) await request(one.app).post('/v1/videos').set(bearer(keyOf(i, 'sum'))).send(VALID_VIDEO);
    const single = (() => {
      try {
        one.verify({ method: 'POST' }, { exactly: 2 });
        return 'verified';
      } catch (e) {
        return (e as VerificationError).sentence;
      }
    })();
    expect(failed.sentence.replace(' over 3 shards', '')).toBe(single);
    await expect(control().verify({ method: 'POST' }, { at_least: 4 })).rejects.toThrow('Expected at least 4 requests matching {"method":"POST"} over 3 shards; found 3.');
  });

  it("verifySequence holds when the account's shard holds the sequence", async () => {
    await control().reset();
    const key = keyOf(2, 'seq');
    await create(key);
    await proxied(`${PROXY}/v1/videos`, { headers: bearer(key) });
    await create(keyOf(0, 'other'));
    expect(await control().verifySequence([{ method: 'POST', api_key: key }, { method: 'GET', api_key: key }])).toMatchObject({ verified: true, count: 2 });
    await expect(control().verifySequence([{ method: 'GET', api_key: key }, { method: 'POST', api_key: key }])).rejects.toBeInstanceOf(VerificationError);
  });

  it('waitForRequest waits on each shard: the matches of several shards together make its count; requests lists them all', async () => {
    await control().reset();
    await create(keyOf(0, 'wait'));
    const waiting = control().waitForRequest({ method: 'POST' }, { count: 3, timeoutMs: 20_000 });
    // Held on every shard before the others arrive.
    await expect.poll(() => shards.reduce((n, s) => n + s.core.waits.held, 0), { timeout: 5000, interval: 5 }).toBe(COUNT);
    await create(keyOf(1, 'wait'));
    await create(keyOf(2, 'wait'));
    const matched = await waiting;
    expect(matched.map((e) => e.account).sort()).toEqual([keyOf(0, 'wait'), keyOf(1, 'wait'), keyOf(2, 'wait')].sort());
    // The waits still held on the other shards are let go.
    await expect.poll(() => shards.reduce((n, s) => n + s.core.waits.held, 0), { timeout: 5000, interval: 5 }).toBe(0);
    expect((await control().requests({ method: 'POST' })).map((e) => e.account).sort()).toEqual(matched.map((e) => e.account).sort());
    await expect(control().waitForRequest({}, { after: 3 })).rejects.toThrow(/'after' names a place in one shard's journal/);
  });

  it('waitForRequest rejects with a VerificationError when no shard has enough before the time runs out', async () => {
    await control().reset();
    await create(keyOf(1, 'late'));
    const error = (await control().waitForRequest({ method: 'POST' }, { count: 2, timeoutMs: 300 }).catch((e: unknown) => e)) as VerificationError;
    expect(error).toBeInstanceOf(VerificationError);
    expect(error.sentence).toBe('Timed out after 300 ms waiting for 2 requests matching {"method":"POST"}; 1 matched.');
    expect(error.matched.map((e) => e.account)).toEqual([keyOf(1, 'late')]);
  });
});
