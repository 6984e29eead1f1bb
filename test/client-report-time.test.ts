/**
 * The client report judges the client's own time: on a realtime simulator (here at speed 20, with
 * an injected host clock the test moves by hand), the timing rules read the gaps between requests
 * on the host clock, never the virtual time that clock drives; on the manual clock they read the
 * account's clock. Also: a wait that Retry-After dictated is never the measure of later waits, and
 * a key with no request gets the `no_requests` error.
 */
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { clientReport, type ClientReport } from '../src/core/journal/clientReport.js';
import type { SimulatorHandle } from '../src/index.js';
import { bearer, journalRecord, makeSim, queueFault, VALID_VIDEO } from './helpers.js';

const KEY = 'sk_test_client';
const START = Date.parse('2026-03-01T09:00:00.000Z');

/** A realtime simulator at speed 20 whose host clock moves only when the test says so. */
function realtimeAtSpeed20(): SimulatorHandle & { logs: string[]; hostWait: (seconds: number) => void } {
  let host = START;
  const sim = makeSim({ scenario: 'default', clock: 'realtime', speed: 20, now: () => host });
  return Object.assign(sim, { hostWait: (seconds: number) => void (host += seconds * 1000) });
}

async function send(sim: SimulatorHandle, method: 'GET' | 'POST', path: string, body?: object): Promise<{ status: number; id: string; body: Record<string, unknown> }> {
  const req = method === 'GET' ? request(sim.app).get(path) : request(sim.app).post(path).send(body);
  const res = await req.set(bearer(KEY));
  return { status: res.status, id: res.headers['x-request-id'] as string, body: res.body };
}

const codes = (report: ClientReport): string[] => report.findings.map((f) => f.code);

describe('the client report on a realtime simulator at speed 20', () => {
  it('finds a client that polls every 0.5 s of host time too fast (10 s of virtual time apart)', async () => {
    const sim = realtimeAtSpeed20();
    const created = await send(sim, 'POST', '/v1/videos', VALID_VIDEO);
    const polls: { id: string; status: unknown; at: unknown }[] = [];
    for (let i = 0; i < 3; i++) {
      sim.hostWait(0.5);
      const polled = await send(sim, 'GET', `/v1/videos/${created.body.id}`);
      polls.push({ id: polled.id, status: polled.body.status, at: sim.clock.state(KEY).now });
    }
    // Each 0.5 s of host time moved the virtual clock by 10 s: the generation was seen unresolved.
    expect(polls.map((p) => p.at)).toEqual(['2026-03-01T09:00:10.000Z', '2026-03-01T09:00:20.000Z', '2026-03-01T09:00:30.000Z']);
    expect(polls.slice(0, 2).every((p) => p.status === 'queued' || p.status === 'processing')).toBe(true);
    const finding = sim.report(KEY).findings.find((f) => f.code === 'poll_too_fast');
    expect(finding?.examples[0]).toBe(polls[1]?.id);
    expect(finding?.message).toContain('(as little as 0.5 s apart)');
  });

  it('finds nothing against a client that polls every 2 s of host time until the generation resolves', async () => {
    const sim = realtimeAtSpeed20();
    const created = await send(sim, 'POST', '/v1/videos', VALID_VIDEO);
    let status = created.body.status;
    let polls = 0;
    while (status !== 'succeeded') {
      sim.hostWait(2);
      status = (await send(sim, 'GET', `/v1/videos/${created.body.id}`)).body.status;
      polls++;
    }
    expect(polls).toBeGreaterThan(1);
    expect(sim.report(KEY).findings).toEqual([]);
  });

  it('finds a retry 0.5 s of host time after a 429 that asked for 1 s too soon (10 s of virtual time later)', async () => {
    const sim = realtimeAtSpeed20();
    await queueFault(sim, { api_key: KEY, path: '/v1/videos', method: 'GET', status: 429 });
    expect((await send(sim, 'GET', '/v1/videos')).status).toBe(429);
    sim.hostWait(0.5);
    const again = await send(sim, 'GET', '/v1/videos');
    expect(again.status).toBe(200);
    expect(sim.report(KEY).findings).toMatchObject([
      { code: 'retry_too_soon', severity: 'error', count: 1, examples: [again.id] },
    ]);
    expect(sim.report(KEY).findings[0]?.message).toContain('(the earliest 0.5 s after the 429, where Retry-After asked for 1 s)');
  });

  it('finds retries 0.5 s of host time apart after 500s without backoff', async () => {
    const sim = realtimeAtSpeed20();
    await queueFault(sim, { api_key: KEY, path: '/v1/videos', method: 'GET', status: 500, times: 4 });
    const first = await send(sim, 'GET', '/v1/videos');
    for (let i = 0; i < 3; i++) {
      sim.hostWait(0.5);
      await send(sim, 'GET', '/v1/videos');
    }
    sim.hostWait(0.5);
    expect((await send(sim, 'GET', '/v1/videos')).status).toBe(200);
    expect(sim.report(KEY).findings).toMatchObject([{ code: 'retry_without_backoff', examples: [first.id] }]);
    expect(sim.report(KEY).findings[0]?.message).toContain('(waits of 0.5 s, 0.5 s, 0.5 s, 0.5 s:');
  });

  it('does not count a jump of the virtual clock as the client waiting', async () => {
    const sim = realtimeAtSpeed20();
    await queueFault(sim, { api_key: KEY, path: '/v1/videos', method: 'GET', status: 429 });
    expect((await send(sim, 'GET', '/v1/videos')).status).toBe(429);
    sim.clock.advance(60, KEY);
    expect((await send(sim, 'GET', '/v1/videos')).status).toBe(200);
    expect(codes(sim.report(KEY))).toEqual(['retry_too_soon']);
  });

  it('gives the same report over GET /_sim/report', async () => {
    const sim = realtimeAtSpeed20();
    const created = await send(sim, 'POST', '/v1/videos', VALID_VIDEO);
    sim.hostWait(0.5);
    await send(sim, 'GET', `/v1/videos/${created.body.id}`);
    sim.hostWait(0.5);
    await send(sim, 'GET', `/v1/videos/${created.body.id}`);
    const res = await request(sim.app).get('/_sim/report').query({ api_key: KEY });
    expect(codes(res.body)).toEqual(['poll_too_fast']);
    expect(res.body).toEqual(sim.report(KEY));
  });
});

describe('the client report on the manual clock', () => {
  it("reads the account's clock, which the test moves as its client waits, not the host's", async () => {
    let host = START;
    const sim = makeSim({ scenario: 'default', now: () => host });
    const created = await send(sim, 'POST', '/v1/videos', VALID_VIDEO);
    host += 60_000; // the host clock is not the client's time here
    await send(sim, 'GET', `/v1/videos/${created.body.id}`);
    sim.clock.advance(3, KEY);
    await send(sim, 'GET', `/v1/videos/${created.body.id}`);
    sim.clock.advance(0.5, KEY);
    host += 60_000;
    const fast = await send(sim, 'GET', `/v1/videos/${created.body.id}`);
    expect(sim.report(KEY).findings).toMatchObject([{ code: 'poll_too_fast', count: 1, examples: [fast.id] }]);
  });
});

describe('a wait that Retry-After dictated', () => {
  it('is not compared with the waits after it: 429 (Retry-After 1), 1.05 s, 500, 0.78 s, 200 gets no finding', async () => {
    const sim = realtimeAtSpeed20();
    await queueFault(sim, { api_key: KEY, path: '/v1/videos', method: 'GET', status: 429 });
    await queueFault(sim, { api_key: KEY, path: '/v1/videos', method: 'GET', status: 500 });
    expect((await send(sim, 'GET', '/v1/videos')).status).toBe(429);
    sim.hostWait(1.05);
    expect((await send(sim, 'GET', '/v1/videos')).status).toBe(500);
    sim.hostWait(0.78);
    expect((await send(sim, 'GET', '/v1/videos')).status).toBe(200);
    expect(sim.report(KEY).findings).toEqual([]);
  });

  it("leaves the client's own waits judged together, around it", () => {
    const at = (hostMs: number, status: number, retryAfter?: number) =>
      journalRecord({ account: KEY, hostMs, atMs: 0, status, retryAfter, request_id: `req_${hostMs}` });
    // 500, 1 s, 500, 1 s, 429 (Retry-After 1), 1.5 s, 500, 1 s, 500, 1 s, 200: own waits 1 s four times.
    const flat = clientReport(KEY, [at(0, 500), at(1000, 500), at(2000, 429, 1), at(3500, 500), at(4500, 500), at(5500, 200)], 'realtime');
    expect(flat.findings).toMatchObject([{ code: 'retry_without_backoff', examples: ['req_0'] }]);
    expect(flat.findings[0]?.message).toContain('(waits of 1 s, 1 s, 1 s, 1 s, not counting waits that a Retry-After asked for:');
    // The same with 2 s as the last own wait: it is more than 1.25 times the mean of the own waits before it.
    expect(clientReport(KEY, [at(0, 500), at(1000, 500), at(2000, 429, 1), at(3500, 500), at(4500, 500), at(6500, 200)], 'realtime').findings).toEqual([]);
    // A wait shorter than Retry-After was not dictated: it is the client's own (and too soon).
    const tooSoon = [at(0, 429, 1), at(500, 500), at(1000, 500), at(1500, 500), at(2000, 200)];
    expect(codes(clientReport(KEY, tooSoon, 'realtime'))).toEqual(['retry_too_soon', 'retry_without_backoff']);
  });
});

describe('a report on a key with no request', () => {
  it('answers "requests": 0 and the no_requests error', async () => {
    const sim = makeSim();
    await send(sim, 'GET', '/v1/videos'); // another key's request is not this one's
    const res = await request(sim.app).get('/_sim/report').query({ api_key: 'sk_test_never_used' });
    expect(res.status).toBe(200);
    expect(res.body.requests).toBe(0);
    expect(res.body.findings).toEqual([
      {
        code: 'no_requests',
        severity: 'error',
        count: 1,
        message: expect.stringMatching(/^The journal holds no request made with this API key, so there is nothing to judge\. Check the key/),
        examples: [],
      },
    ]);
  });

  it('answers no_requests once a reset of the account emptied its journal', async () => {
    const sim = makeSim();
    await send(sim, 'GET', '/v1/videos');
    expect(sim.report(KEY).findings).toEqual([]);
    sim.reset({ apiKey: KEY });
    expect(codes(sim.report(KEY))).toEqual(['no_requests']);
  });
});

describe('a client that polls an unknown id', () => {
  it('gets no finding for its repeated 404s (the interface document does not say whether a 404 may be retried)', async () => {
    const sim = makeSim();
    for (let i = 0; i < 9; i++) {
      expect((await send(sim, 'GET', '/v1/videos/vid_deleted')).status).toBe(404);
      sim.clock.advance(2, KEY);
    }
    expect(sim.report(KEY).findings).toEqual([]);
  });
});
