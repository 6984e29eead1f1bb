/**
 * Waiting for requests: `POST /_sim/requests/wait` and the typed client's `waitForRequest`. A wait
 * answered at once, one answered by the request that makes its count, one that times out (on fake
 * timers: no wall-clock duration is asserted), `after`, the bound on waits held at once, a stop
 * while waits are held, a client that goes away; a wait moves no clock.
 */
import request from 'supertest';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { SimulatorControl, SimulatorControlError, VerificationError, type SimulatorHandle } from '../src/index.js';
import { PROMPT, VALID_VIDEO, bearer, fastWith, makeSim } from './helpers.js';

const KEY = 'sk_test_wait';
const JSON_HEADERS = { 'Content-Type': 'application/json' };

function create(url: string, key = KEY): Promise<Response> {
  return fetch(`${url}/v1/videos`, { method: 'POST', headers: { ...bearer(key), ...JSON_HEADERS }, body: JSON.stringify(VALID_VIDEO) });
}

function waitOver(url: string, body: Record<string, unknown>, signal?: AbortSignal): Promise<Response> {
  return fetch(`${url}/_sim/requests/wait`, { method: 'POST', headers: JSON_HEADERS, body: JSON.stringify(body), signal });
}

/** Until the simulator holds `n` waits (the wait request has arrived and is held). */
async function held(sim: SimulatorHandle, n: number): Promise<void> {
  await vi.waitFor(() => expect(sim.core.waits.held).toBe(n), { timeout: 5000, interval: 5 });
}

afterEach(() => {
  vi.useRealTimers();
});

describe('a wait', () => {
  it('is answered at once when the journal holds the requests already (made before the wait), and moves no clock', async () => {
    const sim = makeSim();
    const url = await sim.listen(0);
    await create(url);
    const before = sim.clock.get();
    const res = await waitOver(url, { request: { method: 'POST', api_key: KEY } });
    expect(res.status).toBe(200);
    const answer = (await res.json()) as { matched: { seq: number; method: string }[]; timed_out: boolean; cursor: number };
    expect(answer).toMatchObject({ timed_out: false, cursor: 1 });
    expect(answer.matched.map((e) => [e.seq, e.method])).toEqual([[1, 'POST']]);
    expect(sim.core.waits.held).toBe(0);
    expect(sim.clock.get()).toEqual(before);
    await sim.close();
  });

  it('is held until the request that makes its count arrives, and answers the first count matches', async () => {
    const sim = makeSim();
    const url = await sim.listen(0);
    await create(url);
    const waiting = waitOver(url, { request: { method: 'POST' }, count: 2 });
    await held(sim, 1);
    // Requests that do not match leave it held.
    await fetch(`${url}/v1/videos`, { headers: bearer(KEY) });
    expect(sim.core.waits.held).toBe(1);
    await create(url, 'sk_test_second');
    const answer = (await (await waiting).json()) as { matched: { seq: number; account: string }[]; timed_out: boolean; cursor: number };
    expect(answer).toMatchObject({ timed_out: false, cursor: 3 });
    expect(answer.matched.map((e) => [e.seq, e.account])).toEqual([
      [1, KEY],
      [3, 'sk_test_second'],
    ]);
    expect(sim.core.waits.held).toBe(0);
    await sim.close();
  });

  it("naming an account, is answered by that account's request alone", async () => {
    const sim = makeSim();
    const url = await sim.listen(0);
    const mine = sim.waitForRequest({ method: 'POST', api_key: 'sk_test_mine' });
    const anyone = sim.waitForRequest({ method: 'POST' });
    await create(url, 'sk_test_theirs');
    expect((await anyone).map((e) => e.account)).toEqual(['sk_test_theirs']);
    expect(sim.core.waits.held).toBe(1);
    await create(url, 'sk_test_mine');
    expect((await mine).map((e) => [e.seq, e.account])).toEqual([[2, 'sk_test_mine']]);
    await sim.close();
  });

  it('with after, counts only the entries after that seq', async () => {
    const sim = makeSim();
    const url = await sim.listen(0);
    await create(url);
    await create(url);
    const control = new SimulatorControl({ baseUrl: url });
    const waiting = control.waitForRequest({ method: 'POST' }, { after: 2 });
    await held(sim, 1);
    await create(url);
    expect((await waiting).map((e) => e.seq)).toEqual([3]);
    // A cursor goes on from the last match.
    const look = (await (await waitOver(url, { request: { method: 'POST' }, after: 1, count: 5, timeout_ms: 0 })).json()) as { matched: { seq: number }[]; cursor: number };
    expect(look.matched.map((e) => e.seq)).toEqual([2, 3]);
    await sim.close();
  });

  it('times out after timeout_ms of the host clock: what matched so far and the closest entries (fake timers)', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const sim = makeSim();
    await request(sim.app).post('/v1/videos').set(bearer(KEY)).send({ model: 'video-3.2', prompt: PROMPT });
    let settled = false;
    const waiting = sim.waitForRequest({ method: 'POST', api_key: KEY }, { count: 2, timeoutMs: 2000 }).finally(() => (settled = true));
    waiting.catch(() => {});
    await vi.advanceTimersByTimeAsync(1999);
    expect(settled).toBe(false);
    expect(sim.core.waits.held).toBe(1);
    await vi.advanceTimersByTimeAsync(1);
    const error = await waiting.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(VerificationError);
    expect((error as VerificationError).message).toBe(
      [
        'Timed out after 2000 ms waiting for 2 requests matching {"method":"POST","api_key":"sk_test_wait"}; 1 matched.',
        'Closest requests in the journal:',
        '  #1 POST /v1/videos (sk_test_wait) -> 200, seen queued; matches',
      ].join('\n'),
    );
    expect((error as VerificationError).matched.map((e) => e.seq)).toEqual([1]);
    expect(sim.core.waits.held).toBe(0);
    await sim.close();
  });

  it('answered with timeout_ms 0 is a look: timed out at once with what matched and the closest', async () => {
    const sim = makeSim();
    await request(sim.app).get('/v1/videos').set(bearer(KEY));
    const res = await request(sim.app).post('/_sim/requests/wait').send({ request: { method: 'DELETE' }, timeout_ms: 0 });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ matched: [], timed_out: true, cursor: 1, closest: [{ seq: 1, method: 'GET', differs: ['method'] }] });
    expect(sim.core.waits.held).toBe(0);
  });
});

describe('waits held at once', () => {
  it('are bounded by limits.max_waits: past it 429 rate_limit_exceeded with Retry-After 1; one answered at once is not held', async () => {
    const sim = makeSim({ scenario: fastWith((s) => (s.limits.max_waits = 2)) });
    const first = sim.waitForRequest({ method: 'DELETE' }, { timeoutMs: 30_000 });
    const second = sim.waitForRequest({ method: 'DELETE' }, { timeoutMs: 30_000 });
    expect(sim.core.waits.held).toBe(2);
    const refused = await request(sim.app).post('/_sim/requests/wait').send({ request: { method: 'DELETE' } });
    expect(refused.status).toBe(429);
    expect(refused.headers['retry-after']).toBe('1');
    expect(refused.body.error).toMatchObject({ type: 'rate_limit_error', code: 'rate_limit_exceeded' });
    expect(refused.body.error.message).toBe(
      'The simulator holds 2 waits for requests, its limit (limits.max_waits). Retry once one has been answered, or raise limits.max_waits.',
    );
    // A look needs no place.
    expect((await request(sim.app).post('/_sim/requests/wait').send({ request: {}, timeout_ms: 0 })).status).toBe(200);
    // The request they wait for answers both, and gives their places back.
    const { id } = (await request(sim.app).post('/v1/videos').set(bearer(KEY)).send(VALID_VIDEO)).body as { id: string };
    await request(sim.app).delete(`/v1/videos/${id}`).set(bearer(KEY));
    expect((await first).map((e) => e.method)).toEqual(['DELETE']);
    expect((await second).map((e) => e.method)).toEqual(['DELETE']);
    expect(sim.core.waits.held).toBe(0);
    await sim.close();
  });

  it('a stop ends them at once with 503 simulator_closed, over HTTP and in-process', async () => {
    const sim = makeSim();
    const url = await sim.listen(0);
    const inProcess = sim.waitForRequest({ method: 'DELETE' }, { timeoutMs: 30_000 }).catch((e: unknown) => e);
    const overHttp = waitOver(url, { request: { method: 'DELETE' }, timeout_ms: 30_000 });
    await held(sim, 2);
    await sim.close();
    const error = await inProcess;
    expect(error).toBeInstanceOf(SimulatorControlError);
    expect(error).toMatchObject({ status: 503, code: 'simulator_closed' });
    const res = await overHttp;
    expect(res.status).toBe(503);
    expect(((await res.json()) as { error: unknown }).error).toEqual({
      type: 'api_error',
      code: 'simulator_closed',
      message: 'The simulator stopped while this wait was held: it ended the wait before it was answered.',
    });
    expect(sim.core.waits.held).toBe(0);
  });

  it('a client that goes away gives its place back, and is answered nothing', async () => {
    const sim = makeSim();
    const url = await sim.listen(0);
    const gone = new AbortController();
    const waiting = waitOver(url, { request: { method: 'DELETE' }, timeout_ms: 30_000 }, gone.signal).catch((e: unknown) => e);
    await held(sim, 1);
    gone.abort();
    expect(await waiting).toBeInstanceOf(Error);
    await held(sim, 0);
    await sim.close();
  });

  it('survive a reset: the journal they read is the new one, numbered on', async () => {
    const sim = makeSim();
    const waiting = sim.waitForRequest({ method: 'POST' }, { timeoutMs: 30_000 });
    sim.reset();
    await request(sim.app).post('/v1/videos').set(bearer(KEY)).send(VALID_VIDEO);
    expect((await waiting).map((e) => e.seq)).toEqual([1]);
    await sim.close();
  });
});
