/**
 * Network faults on the real socket (`POST /_sim/faults` with `network`): every kind as a raw
 * `net` client sees it (the bytes received, how the connection ended), both phases on creates
 * with and without an Idempotency-Key, media downloads, the hang bound, a stop during a hang, the
 * fault bodies refused, and `hang_ms`, a slow body and injected latency on a host clock the test
 * moves (`hostClock`).
 */
import FakeTimers from '@sinonjs/fake-timers';
import request from 'supertest';
import { afterEach, describe, expect, it } from 'vitest';
import { gatewayPage } from '../src/core/faults/network.js';
import { SimulatorControl, hostClockOf, type SimFaultRequest, type SimulatorControlApi } from '../src/index.js';
import { PROMPT, expectError, fastWith, makeSim, postFault, queueFault } from './helpers.js';
import { eventually, rawRequest, type RawExchange } from './rawHttp.js';

type Sim = ReturnType<typeof makeSim>;

const KEY = 'sk_test_alice';
const CREATE_BODY = JSON.stringify({ model: 'video-3.2', prompt: PROMPT });

let open: Sim[] = [];
afterEach(async () => {
  await Promise.all(open.map((s) => s.close()));
  open = [];
});

async function listening(options: Parameters<typeof makeSim>[0] = {}): Promise<{ sim: Sim; url: string }> {
  const sim = makeSim(options);
  open.push(sim);
  return { sim, url: await sim.listen(0) };
}

function create(url: string, extra: Record<string, string> = {}, more: Partial<Parameters<typeof rawRequest>[1]> = {}): Promise<RawExchange> {
  return rawRequest(url, {
    method: 'POST',
    path: '/v1/videos',
    headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json', connection: 'keep-alive', ...extra },
    body: CREATE_BODY,
    ...more,
  });
}

function list(url: string): Promise<RawExchange> {
  return rawRequest(url, { method: 'GET', path: '/v1/videos', headers: { authorization: `Bearer ${KEY}`, connection: 'close' } });
}

/** The ids of the account's videos, through GET /v1/videos. */
async function videoIds(url: string): Promise<string[]> {
  const answer = await list(url);
  expect(answer.status).toBe(200);
  return (JSON.parse(answer.body.toString()) as { data: { id: string }[] }).data.map((v) => v.id);
}

async function journal(sim: Sim) {
  const res = await request(sim.app).get('/_sim/requests').query({ api_key: KEY });
  return res.body.data as { method: string; path: string; status: number | null; network?: { kind: string; phase: string }; fault?: string }[];
}

async function health(sim: Sim): Promise<{ network: { hung: number } }> {
  return (await request(sim.app).get('/_sim/health')).body;
}

// ---------------------------------------------------------------------------------------------------
describe('each kind on the socket', () => {
  it('reset: the client sees ECONNRESET and not one byte', async () => {
    const { sim, url } = await listening();
    await queueFault(sim, { path: '/v1/videos', method: 'POST', network: 'reset' });
    const answer = await create(url);
    expect(answer.end).toBe('reset');
    expect(answer.bytes.length).toBe(0);
  });

  it('close: the connection is closed cleanly with nothing answered', async () => {
    const { sim, url } = await listening();
    await queueFault(sim, { path: '/v1/videos', method: 'POST', network: 'close' });
    const answer = await create(url);
    expect(answer.end).toBe('close');
    expect(answer.bytes.length).toBe(0);
  });

  it('hang: nothing is answered and the connection is held, counted in health, until the client gives up', async () => {
    const { sim, url } = await listening();
    await queueFault(sim, { path: '/v1/videos', method: 'POST', network: 'hang', hang_ms: 600_000 });
    const held = eventually('the hang counted in health', () => health(sim), (h) => h.network.hung === 1);
    const answer = await create(url, {}, { giveUp: held });
    expect(answer.end).toBe('open');
    expect(answer.bytes.length).toBe(0);
    await eventually('the held connection let go', () => health(sim), (h) => h.network.hung === 0);
  });

  it('hang: once hang_ms has passed, the connection is closed with nothing answered', async () => {
    const { sim, url } = await listening();
    await queueFault(sim, { path: '/v1/videos', method: 'POST', network: 'hang', hang_ms: 20 });
    const answer = await create(url);
    expect(answer.end).toBe('close');
    expect(answer.bytes.length).toBe(0);
    expect((await health(sim)).network.hung).toBe(0);
  });

  it('truncate: the status line and headers with the whole Content-Length, then half the body, then the end of the connection', async () => {
    const { sim, url } = await listening();
    await queueFault(sim, { path: '/v1/videos', method: 'POST', network: 'truncate' });
    const answer = await create(url);
    expect(answer.end).toBe('close');
    expect(answer.status).toBe(200);
    const whole = Number(answer.headers['content-length']);
    expect(whole).toBeGreaterThan(100);
    expect(answer.body.length).toBe(Math.floor(whole / 2));
    expect(answer.headers['x-request-id']).toMatch(/^req_/);
    // The part sent is the beginning of the video object that was created (unchanged on the manual clock).
    const [id] = await videoIds(url);
    const retrieved = await rawRequest(url, { method: 'GET', path: `/v1/videos/${id}`, headers: { authorization: `Bearer ${KEY}`, connection: 'close' } });
    expect(retrieved.body.length).toBe(whole);
    expect(retrieved.body.subarray(0, answer.body.length).equals(answer.body)).toBe(true);
  });

  it('truncate with truncate_bytes sends that many bytes of the body', async () => {
    const { sim, url } = await listening();
    await queueFault(sim, { path: '/v1/videos', method: 'POST', network: 'truncate', truncate_bytes: 7 });
    const answer = await create(url);
    expect(answer.end).toBe('close');
    expect(answer.body.toString()).toBe('{"id":"');
  });

  it.each([502, 503, 504])('gateway %i: an HTML page with none of the service headers, then the connection closes', async (status) => {
    const { sim, url } = await listening();
    await queueFault(sim, { path: '/v1/videos', method: 'POST', network: 'gateway', gateway_status: status });
    const answer = await create(url);
    expect(answer.end).toBe('close');
    expect(answer.status).toBe(status);
    expect(answer.headers['content-type']).toBe('text/html');
    expect(answer.headers.connection).toBe('close');
    expect(answer.body.toString()).toBe(gatewayPage(status));
    for (const name of ['x-request-id', 'x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset', 'idempotent-replayed']) {
      expect(answer.headers[name]).toBeUndefined();
    }
  });

  it('slow: the whole answer arrives, as the service made it', async () => {
    const { sim, url } = await listening();
    await queueFault(sim, { path: '/v1/videos', method: 'GET', network: 'slow', bytes_per_second: 200 });
    const answer = await list(url);
    expect(answer.status).toBe(200);
    expect(answer.body.toString()).toBe('{"object":"list","data":[],"has_more":false}');
    const [entry] = await journal(sim);
    expect(entry).toMatchObject({ status: 200, network: { kind: 'slow', phase: 'after' } });
  });

  it('latency_ms goes first: the wait, then the network fault', async () => {
    const slept: number[] = [];
    const { sim, url } = await listening({ sleep: (ms) => (slept.push(ms), Promise.resolve()) });
    await queueFault(sim, { path: '/v1/videos', method: 'POST', network: 'reset', latency_ms: 1500 });
    expect((await create(url)).end).toBe('reset');
    expect(slept).toEqual([1500]);
  });

  it('the in-process app (supertest) acts on the real socket too: the client sees ECONNRESET', async () => {
    const sim = makeSim();
    await queueFault(sim, { path: '/v1/videos', method: 'GET', network: 'reset' });
    const error = await request(sim.app)
      .get('/v1/videos')
      .set('Authorization', `Bearer ${KEY}`)
      .then(
        () => undefined,
        (e: NodeJS.ErrnoException) => e,
      );
    expect(error?.code).toBe('ECONNRESET');
  });
});

// ---------------------------------------------------------------------------------------------------
describe('before or after the request takes effect', () => {
  it.each(['reset', 'close', 'gateway'])('%s before: the create never reaches the service (nothing listed, no token spent)', async (kind) => {
    const { sim, url } = await listening();
    await queueFault(sim, { path: '/v1/videos', method: 'POST', network: kind, phase: 'before' });
    await create(url);
    expect(await videoIds(url)).toEqual([]);
    const [lost, listed] = await journal(sim);
    expect(lost).toMatchObject({ method: 'POST', status: kind === 'gateway' ? 502 : null, network: { kind, phase: 'before' } });
    // The list that followed spent the first token of the bucket: the lost create spent none.
    expect(listed?.status).toBe(200);
    const again = await list(url);
    expect(Number(again.headers['x-ratelimit-remaining'])).toBe(1_000_000_000 - 2);
  });

  it.each(['reset', 'close', 'truncate', 'gateway'])('%s after: the create took effect (listed, its token spent) though its answer was lost', async (kind) => {
    const { sim, url } = await listening();
    await queueFault(sim, { path: '/v1/videos', method: 'POST', network: kind, phase: 'after' });
    await create(url);
    expect(await videoIds(url)).toHaveLength(1);
    const [lost] = await journal(sim);
    expect(lost).toMatchObject({ method: 'POST', network: { kind, phase: 'after' } });
    expect(lost?.status).toBe(kind === 'gateway' ? 502 : kind === 'truncate' ? 200 : null);
    const again = await list(url);
    expect(Number(again.headers['x-ratelimit-remaining'])).toBe(1_000_000_000 - 3);
  });

  it('a create lost after taking effect, retried with the same Idempotency-Key, answers the original generation', async () => {
    const { sim, url } = await listening();
    await queueFault(sim, { path: '/v1/videos', method: 'POST', network: 'reset', phase: 'after', api_key: KEY });
    expect((await create(url, { 'idempotency-key': 'create-1' })).end).toBe('reset');
    const retry = await create(url, { 'idempotency-key': 'create-1', connection: 'close' });
    expect(retry.status).toBe(200);
    expect(retry.headers['idempotent-replayed']).toBe('true');
    const ids = await videoIds(url);
    expect(ids).toEqual([JSON.parse(retry.body.toString()).id]);
  });

  it('a create lost after taking effect, retried without a key, creates (and charges) a second generation', async () => {
    const { sim, url } = await listening({ scenario: fastWith((s) => (s.account_defaults.balance_cents = 1000)) });
    await queueFault(sim, { path: '/v1/videos', method: 'POST', network: 'close', phase: 'after' });
    expect((await create(url)).end).toBe('close');
    const retry = await create(url, { connection: 'close' });
    expect(retry.status).toBe(200);
    const ids = await videoIds(url);
    expect(ids).toHaveLength(2);
    expect(ids[1]).toBe(JSON.parse(retry.body.toString()).id);
    // Both reserve their price against the balance.
    const generations = (await request(sim.app).get('/_sim/generations').query({ api_key: KEY })).body.data as { id: string }[];
    expect(generations.map((g) => g.id)).toEqual(ids);
  });

  it('a create lost before taking effect, retried with its key, is carried out then (not a replay)', async () => {
    const { sim, url } = await listening();
    await queueFault(sim, { path: '/v1/videos', method: 'POST', network: 'reset', phase: 'before' });
    expect((await create(url, { 'idempotency-key': 'create-1' })).end).toBe('reset');
    const retry = await create(url, { 'idempotency-key': 'create-1', connection: 'close' });
    expect(retry.status).toBe(200);
    expect(retry.headers['idempotent-replayed']).toBeUndefined();
    expect(await videoIds(url)).toHaveLength(1);
  });

  it('the journal names the fault and shows the lost answer without a status', async () => {
    const { sim, url } = await listening();
    await queueFault(sim, { path: '/v1/videos', method: 'POST', network: 'reset', phase: 'after', times: 1 });
    await create(url);
    const [entry] = await journal(sim);
    expect(entry).toEqual({
      seq: 1,
      method: 'POST',
      path: '/v1/videos',
      status: null,
      network: { kind: 'reset', phase: 'after' },
      account: KEY,
      at: '2026-01-01T00:00:00.000Z',
      request_id: expect.stringMatching(/^req_/),
      negative_prompt_effective: null,
      fault: 'queued fault: network reset (after)',
      // What the client sent; nothing of what it was answered (`seen`): the answer was lost.
      body: JSON.parse(CREATE_BODY),
    });
  });
});

// ---------------------------------------------------------------------------------------------------
describe('media downloads', () => {
  async function succeededVideo(sim: Sim): Promise<string> {
    const created = await request(sim.app).post('/v1/videos').set('Authorization', `Bearer ${KEY}`).send({ model: 'video-3.2', prompt: PROMPT });
    await request(sim.app).post(`/_sim/generations/${created.body.id}/finish`);
    return created.body.id as string;
  }

  it('truncate on /cdn/videos/*: the MP4 headers with its whole length, then half of it', async () => {
    const { sim, url } = await listening();
    const id = await succeededVideo(sim);
    await queueFault(sim, { path: '/cdn/videos/*', network: 'truncate' });
    const answer = await rawRequest(url, { method: 'GET', path: `/cdn/videos/${id}.mp4`, headers: { connection: 'keep-alive' } });
    expect(answer.end).toBe('close');
    expect(answer.status).toBe(200);
    expect(answer.headers['content-type']).toBe('video/mp4');
    const whole = Number(answer.headers['content-length']);
    expect(answer.body.length).toBe(Math.floor(whole / 2));
    // The next download is whole.
    const next = await rawRequest(url, { method: 'GET', path: `/cdn/videos/${id}.mp4`, headers: { connection: 'close' } });
    expect(next.body.length).toBe(whole);
  });

  it.each(['reset', 'close'] as const)('%s on a thumbnail download', async (kind) => {
    const { sim, url } = await listening();
    const id = await succeededVideo(sim);
    await queueFault(sim, { path: `/cdn/thumbnails/${id}.png`, method: 'GET', network: kind });
    const answer = await rawRequest(url, { method: 'GET', path: `/cdn/thumbnails/${id}.png` });
    expect(answer.end).toBe(kind);
    expect(answer.bytes.length).toBe(0);
  });

  it('slow on an image download: the whole PNG arrives', async () => {
    const { sim, url } = await listening();
    const image = await request(sim.app).post('/v1/images').set('Authorization', `Bearer ${KEY}`).send({ prompt: PROMPT });
    const path = new URL(image.body.url as string).pathname;
    const whole = await rawRequest(url, { method: 'GET', path, headers: { connection: 'close' } });
    await queueFault(sim, { path: '/cdn/images/*', network: 'slow', bytes_per_second: 10_485_760 });
    const slow = await rawRequest(url, { method: 'GET', path, headers: { connection: 'close' } });
    expect(slow.status).toBe(200);
    expect(slow.body.equals(whole.body)).toBe(true);
  });

  it('hang on a download is held like any other', async () => {
    const { sim, url } = await listening();
    const id = await succeededVideo(sim);
    await queueFault(sim, { path: '/cdn/*', network: 'hang' });
    const held = eventually('the hang counted in health', () => health(sim), (h) => h.network.hung === 1);
    const answer = await rawRequest(url, { method: 'GET', path: `/cdn/videos/${id}.mp4`, giveUp: held });
    expect(answer.end).toBe('open');
    expect(answer.bytes.length).toBe(0);
    await eventually('the held connection let go', () => health(sim), (h) => h.network.hung === 0);
  });
});

// ---------------------------------------------------------------------------------------------------
describe('held connections', () => {
  it('past limits.max_hung_connections, a hang is a close', async () => {
    const { sim, url } = await listening({ scenario: fastWith((s) => (s.limits.max_hung_connections = 1)) });
    await queueFault(sim, { path: '/v1/videos', method: 'GET', network: 'hang', hang_ms: 600_000, times: 2 });
    let letGo!: () => void;
    const first = rawRequest(url, { method: 'GET', path: '/v1/videos', headers: { authorization: `Bearer ${KEY}` }, giveUp: new Promise<void>((r) => (letGo = r)) });
    await eventually('the first hang held', () => health(sim), (h) => h.network.hung === 1);
    const second = await list(url);
    expect(second.end).toBe('close');
    expect(second.bytes.length).toBe(0);
    expect((await health(sim)).network.hung).toBe(1);
    const [held, closed] = await journal(sim);
    expect(held?.network).toEqual({ kind: 'hang', phase: 'before' });
    expect(closed?.network).toEqual({ kind: 'close', phase: 'before' });
    expect(closed?.fault).toContain('limits.max_hung_connections');
    letGo();
    expect((await first).end).toBe('open');
  });

  it('a slow answer holds a place while its body trickles out, let go when it ends; past the bound it is a close', async () => {
    const { sim, url } = await listening({ scenario: fastWith((s) => (s.limits.max_hung_connections = 1)) });
    await queueFault(sim, { path: '/v1/videos', method: 'GET', network: 'slow', bytes_per_second: 1, times: 2 });
    let letGo!: () => void;
    const first = rawRequest(url, { method: 'GET', path: '/v1/videos', headers: { authorization: `Bearer ${KEY}` }, giveUp: new Promise<void>((r) => (letGo = r)) });
    await eventually('the slow answer held', () => health(sim), (h) => h.network.hung === 1);
    const second = await list(url);
    expect(second.end).toBe('close');
    expect(second.bytes.length).toBe(0);
    const [slow, closed] = await journal(sim);
    expect(slow?.network).toEqual({ kind: 'slow', phase: 'after' });
    expect(closed?.network).toEqual({ kind: 'close', phase: 'after' });
    expect(closed?.fault).toContain('limits.max_hung_connections');
    letGo();
    await first;
    await eventually('the slow answer let go', () => health(sim), (h) => h.network.hung === 0);
  });

  it('many held connections at once raise no MaxListenersExceededWarning', async () => {
    const warnings: string[] = [];
    const onWarning = (w: Error): void => void warnings.push(w.name);
    process.on('warning', onWarning);
    try {
      const { sim, url } = await listening();
      await queueFault(sim, { path: '/v1/videos', method: 'GET', network: 'hang', hang_ms: 600_000, times: 12 });
      const held = Array.from({ length: 12 }, () => rawRequest(url, { method: 'GET', path: '/v1/videos', headers: { authorization: `Bearer ${KEY}` } }));
      await eventually('twelve hangs held', () => health(sim), (h) => h.network.hung === 12);
      await sim.close();
      await Promise.all(held);
      // A warning is emitted on the next tick of the listener that passed the count.
      await new Promise((r) => setImmediate(r));
      expect(warnings).not.toContain('MaxListenersExceededWarning');
    } finally {
      process.off('warning', onWarning);
    }
  });

  it('a stop closes held connections at once: close() does not wait out the hang or the drain grace', async () => {
    // The hang's 600 s and the drain's 3 s grace both run on this clock, which never moves: close()
    // can only resolve by not waiting for either.
    const clock = FakeTimers.createClock();
    const { sim, url } = await listening({ hostClock: hostClockOf(clock) });
    await queueFault(sim, { path: '/v1/videos', method: 'GET', network: 'hang', hang_ms: 600_000 });
    const held = rawRequest(url, { method: 'GET', path: '/v1/videos', headers: { authorization: `Bearer ${KEY}` } });
    await eventually('the hang held', () => health(sim), (h) => h.network.hung === 1);
    expect(clock.countTimers()).toBe(1);
    await sim.close();
    // Every timer the hang and the drain set was cleared, none fired.
    expect(clock.countTimers()).toBe(0);
    expect(clock.now).toBe(0);
    const answer = await held;
    expect(answer.end).toBe('close');
    expect(answer.bytes.length).toBe(0);
    expect(sim.core.held.held).toBe(0);
  });
});

// ---------------------------------------------------------------------------------------------------
describe('on a host clock the test moves (`hostClock`)', () => {
  /** Whether `promise` has settled, after the server has answered one more request (it has run since). */
  async function settledAfterARequest(url: string, promise: { settled: boolean }): Promise<boolean> {
    expect((await rawRequest(url, { method: 'GET', path: '/_sim/health', headers: { connection: 'close' } })).status).toBe(200);
    return promise.settled;
  }
  function watched<T>(promise: Promise<T>): Promise<T> & { settled: boolean } {
    const out = Object.assign(promise.finally(() => (out.settled = true)), { settled: false });
    return out;
  }

  it('hang_ms and injected latency end when that clock has moved by them, not before, whatever the real time', async () => {
    const clock = FakeTimers.createClock();
    const { sim, url } = await listening({ hostClock: hostClockOf(clock) });

    await queueFault(sim, { path: '/v1/videos', method: 'GET', network: 'hang', hang_ms: 5000 });
    const hung = watched(rawRequest(url, { method: 'GET', path: '/v1/videos', headers: { authorization: `Bearer ${KEY}` } }));
    await eventually('the hang held', () => health(sim), (h) => h.network.hung === 1);
    expect(clock.countTimers()).toBe(1);
    clock.tick(4999);
    expect(await settledAfterARequest(url, hung)).toBe(false);
    expect((await health(sim)).network.hung).toBe(1);
    clock.tick(1);
    const lost = await hung;
    expect(lost.end).toBe('close');
    expect(lost.bytes.length).toBe(0);
    expect((await health(sim)).network.hung).toBe(0);

    await queueFault(sim, { path: '/v1/videos', method: 'GET', latency_ms: 3000 });
    const delayed = watched(list(url));
    await eventually('the latency wait begun', () => clock.countTimers(), (n) => n === 1);
    clock.tick(2999);
    expect(await settledAfterARequest(url, delayed)).toBe(false);
    clock.tick(1);
    const answer = await delayed;
    expect(answer.status).toBe(200);
    expect(clock.countTimers()).toBe(0);
  });

  it('a slow body goes at its pace on that clock: a tick of it sends a tick of bytes', async () => {
    const clock = FakeTimers.createClock();
    const { sim, url } = await listening({ hostClock: hostClockOf(clock) });
    // The list's body, 45 bytes, at 100 bytes a second: 10 bytes every 100 ms of the clock.
    await queueFault(sim, { path: '/v1/videos', method: 'GET', network: 'slow', bytes_per_second: 100 });
    const slow = watched(list(url));
    await eventually('the slow answer held', () => health(sim), (h) => h.network.hung === 1);
    expect(await settledAfterARequest(url, slow)).toBe(false);
    for (let i = 0; i < 3; i++) clock.tick(100);
    expect(await settledAfterARequest(url, slow)).toBe(false);
    clock.tick(100);
    const answer = await slow;
    expect(answer.status).toBe(200);
    expect(answer.body.toString()).toBe('{"object":"list","data":[],"has_more":false}');
    expect(clock.now).toBe(400);
  });

  it('under createSimulator({ sleep }), latency follows that sleep and hang_ms the host clock (the sleep is kept as it was)', async () => {
    const clock = FakeTimers.createClock();
    const slept: number[] = [];
    const { sim, url } = await listening({ hostClock: hostClockOf(clock), sleep: (ms) => (slept.push(ms), Promise.resolve()) });
    await queueFault(sim, { path: '/v1/videos', method: 'GET', latency_ms: 3000 });
    expect((await list(url)).status).toBe(200);
    expect(slept).toEqual([3000]);
    expect(clock.countTimers()).toBe(0);
  });
});

// ---------------------------------------------------------------------------------------------------
describe('fault bodies refused', () => {
  it.each<[string, Record<string, unknown>, string, string?]>([
    ['network with status', { network: 'reset', status: 500 }, 'network'],
    ['network with outcome', { network: 'reset', outcome: { fail_stage: 'render' } }, 'network'],
    ['an unknown kind', { network: 'explode' }, 'network'],
    ['hang_ms over 600,000', { network: 'hang', hang_ms: 600_001 }, 'hang_ms'],
    ['gateway_status 500', { network: 'gateway', gateway_status: 500 }, 'gateway_status'],
    ['bytes_per_second 0', { network: 'slow', bytes_per_second: 0 }, 'bytes_per_second'],
    ['bytes_per_second over 10,485,760', { network: 'slow', bytes_per_second: 10_485_761 }, 'bytes_per_second'],
    ['hang_ms with reset', { network: 'reset', hang_ms: 10 }, 'hang_ms'],
    ['gateway_status with hang', { network: 'hang', gateway_status: 502 }, 'gateway_status'],
    ['slow before the request takes effect', { network: 'slow', phase: 'before' }, 'phase'],
    ['truncate before the request takes effect', { network: 'truncate', phase: 'before' }, 'phase'],
    ['phase without network', { status: 500, phase: 'after' }, 'phase'],
    ['an unknown phase', { network: 'reset', phase: 'during' }, 'phase'],
  ])('%s is 400 invalid_parameter naming the field', async (_what, body, param) => {
    const sim = makeSim();
    const res = await postFault(sim, { path: '/v1/videos', ...body });
    expectError(res, 400, 'invalid_request_error', 'invalid_parameter', param);
    expect((await request(sim.app).get('/_sim/faults')).body.queued).toBe(0);
  });

  it.each<[string, Record<string, unknown>, string]>([
    ['a status fault on a media path', { path: '/cdn/videos/*', status: 500 }, 'path'],
    ['a gateway on a media path', { path: '/cdn/videos/*', network: 'gateway' }, 'network'],
    ['an api_key on a media path', { path: '/cdn/videos/*', network: 'reset', api_key: KEY }, 'api_key'],
  ])('%s is 400 invalid_parameter naming the field', async (_what, body, param) => {
    const sim = makeSim();
    expectError(await postFault(sim, body), 400, 'invalid_request_error', 'invalid_parameter', param);
  });

  it('GET /_sim/faults lists a network fault with its kind, phase and own field', async () => {
    const sim = makeSim();
    await queueFault(sim, { path: '/v1/videos', method: 'POST', network: 'hang', hang_ms: 5000, times: 2 });
    await queueFault(sim, { path: '/v1/*', network: 'truncate' });
    const res = await request(sim.app).get('/_sim/faults');
    expect(res.body).toEqual({
      queued: 3,
      faults: [
        { path: '/v1/videos', method: 'POST', network: 'hang', phase: 'before', hang_ms: 5000, times_left: 2, api_key: null },
        { path: '/v1/*', method: null, network: 'truncate', phase: 'after', times_left: 1, api_key: null },
      ],
    });
  });
});

// ---------------------------------------------------------------------------------------------------
describe('the typed control client', () => {
  const FAULTS: SimFaultRequest[] = [
    { path: '/v1/videos', method: 'POST', network: 'reset', phase: 'after', times: 1, api_key: KEY },
    { path: '/v1/videos', network: 'hang', hang_ms: 10_000 },
    { path: '/v1/*', network: 'truncate', truncate_bytes: 5 },
    { path: '/v1/videos', network: 'gateway', gateway_status: 504, phase: 'after', latency_ms: 200 },
    { path: '/cdn/videos/*', network: 'slow', bytes_per_second: 2048 },
  ];

  it.each(['http', 'in-process'] as const)('(%s) queues network faults with every field, and lists them', async (kind) => {
    const { sim } = await listening();
    const control: SimulatorControlApi = kind === 'http' ? new SimulatorControl({ baseUrl: `http://127.0.0.1:${sim.port}` }) : sim;
    for (const fault of FAULTS) await control.faults.queue(fault);
    const listed = await control.faults.list();
    expect(listed.queued).toBe(5);
    expect(listed.faults.map((f) => [f.network, f.phase, f.hang_ms ?? f.truncate_bytes ?? f.gateway_status ?? f.bytes_per_second])).toEqual([
      ['reset', 'after', undefined],
      ['hang', 'before', 10_000],
      ['truncate', 'after', 5],
      ['gateway', 'after', 504],
      ['slow', 'after', 2048],
    ]);
    expect((await control.health()).network).toEqual({ hung: 0 });
  });
});

// ---------------------------------------------------------------------------------------------------
describe('testing retries (the worked example of docs/testing.md)', () => {
  /** A fetch client under test: one Idempotency-Key for every attempt of one create (no wait: the test's clock is its own). */
  async function createWithRetries(url: string, key: string | undefined): Promise<{ id: string; attempts: string[] }> {
    const attempts: string[] = [];
    for (let attempt = 1; attempt <= 3; attempt++) {
      try {
        const res = await fetch(`${url}/v1/videos`, {
          method: 'POST',
          headers: { Authorization: `Bearer ${KEY}`, 'Content-Type': 'application/json', ...(key && { 'Idempotency-Key': key }) },
          body: CREATE_BODY,
        });
        attempts.push(String(res.status));
        if (res.status !== 429 && res.status < 500) return { id: ((await res.json()) as { id: string }).id, attempts };
      } catch (e) {
        attempts.push(String((e as { cause?: { code?: string } }).cause?.code));
      }
    }
    throw new Error(`gave up after ${attempts.join(', ')}`);
  }

  it('a fetch client that retries with its key recovers the create lost after taking effect: one generation, no finding', async () => {
    const { sim, url } = await listening();
    sim.faults.queue({ path: '/v1/videos', method: 'POST', network: 'reset', phase: 'after', api_key: KEY });
    const video = await createWithRetries(url, 'one-create');
    expect(video.attempts).toEqual(['ECONNRESET', '200']);
    expect(sim.generations.list({ apiKey: KEY }).data.map((g) => g.id)).toEqual([video.id]);
    expect(sim.report(KEY).findings).toEqual([]);
  });

  it('the same client without a key creates twice, and the report says so', async () => {
    const { sim, url } = await listening();
    sim.faults.queue({ path: '/v1/videos', method: 'POST', network: 'reset', phase: 'after', api_key: KEY });
    const video = await createWithRetries(url, undefined);
    expect(sim.generations.list({ apiKey: KEY }).data).toHaveLength(2);
    expect(sim.report(KEY).findings.map((f) => f.code)).toEqual(['duplicate_after_lost_answer', 'post_retry_without_idempotency_key']);
    expect(video.attempts).toEqual(['ECONNRESET', '200']);
  });
});
