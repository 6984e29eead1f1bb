/**
 * createSimulator({ clock: 'realtime', now }): the simulator reads time from the given function
 * (epoch milliseconds) instead of the process's clock, so that a test runner's fake timers move the
 * simulator's time with the client's. A client that polls every 2 s with setTimeout, against a real
 * server (`sim.listen(0)`) through fetch, drives a `default` generation (minutes of virtual time) to
 * its end in a fraction of a second, under vitest's fake timers and under @sinonjs/fake-timers.
 * With `hostClock: hostClockOf(globalThis)`, the simulator's own waits (injected latency, a network
 * `hang_ms`) run on the same fake timers as the client's: a minute of latency passes as fast.
 * No real duration is asserted: the real time a test may take is a liveness bound (`withinRealTime`).
 *
 * What must stay real: `process.nextTick` and `queueMicrotask`. Node's HTTP stack runs on them
 * (`server.listen` calls back through nextTick, fetch's streams resolve through queueMicrotask),
 * so faking either leaves `listen` or the first request waiting for a clock nobody advances.
 * vitest's `vi.useFakeTimers()` leaves both real by default; @sinonjs/fake-timers (15) fakes
 * everything unless told (`toNotFake`). Everything else (setTimeout, setInterval, setImmediate,
 * Date, performance, hrtime) can be faked.
 *
 * How time moves: tick mode "next timer" (vitest's `vi.setTimerTickMode('nextTimerAsync')`,
 * fake-timers' `clock.setTickMode({ mode: 'nextAsync' })`) jumps to the next timer whenever a real
 * macrotask has passed, so the client's 2-s waits move time and the test just awaits the client.
 * fetch's own timers run on the fake clock too (its 300-s headers timeout among them), and a request
 * takes several real macrotasks: one big `advanceTimersByTime(600_000)` while a request is in
 * flight lets the simulator's time run ahead of the client (or fails the request with fetch's
 * headers timeout), and so does a loop that advances time whatever the client is doing.
 */
import FakeTimers from '@sinonjs/fake-timers';
import request from 'supertest';
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { createSimulator, hostClockOf, type CreateSimulatorOptions, type Video, type VideoStatus } from '../src/index.js';
import { PROMPT, bearer } from './helpers.js';

// The real timer, taken before any test fakes the globals.
const realSetTimeout = globalThis.setTimeout;
const realClearTimeout = globalThis.clearTimeout;

const RESOLVED: readonly VideoStatus[] = ['succeeded', 'failed', 'canceled'];

/** A typical client: creates a video, then polls it every 2 s (setTimeout) until it resolves. */
async function createAndWait(url: string, apiKey: string): Promise<{ video: Video; seen: VideoStatus[]; polls: number }> {
  const headers = { Authorization: `Bearer ${apiKey}`, 'Content-Type': 'application/json' };
  const created = await fetch(`${url}/v1/videos`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ model: 'video-3.2', prompt: PROMPT }),
  });
  if (!created.ok) throw new Error(`create answered ${created.status}: ${await created.text()}`);
  let video = (await created.json()) as Video;
  const seen: VideoStatus[] = [video.status];
  let polls = 0;
  while (!RESOLVED.includes(video.status)) {
    await new Promise((resolve) => setTimeout(resolve, 2000));
    const res = await fetch(`${url}/v1/videos/${video.id}`, { headers });
    if (!res.ok) throw new Error(`poll answered ${res.status}: ${await res.text()}`);
    video = (await res.json()) as Video;
    polls++;
    if (seen.at(-1) !== video.status) seen.push(video.status);
  }
  return { video, seen, polls };
}

/** Fails (instead of hanging until the test's timeout) when `work` has not settled within `ms` of real time. */
async function withinRealTime<T>(work: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const limit = new Promise<never>((_, reject) => {
    timer = realSetTimeout(() => reject(new Error(`${what} did not finish within ${ms} ms of real time`)), ms);
  });
  try {
    return await Promise.race([work, limit]);
  } finally {
    realClearTimeout(timer);
  }
}

/**
 * Under fake timers already installed (with tick mode "next timer"): a realtime simulator on the
 * faked `Date.now` (given as `clock`: a host clock, or `now` alone), a client that polls every 2 s,
 * and what must hold.
 */
async function expectPollingClientDrivesGeneration(clock: Pick<CreateSimulatorOptions, 'hostClock' | 'now'>): Promise<void> {
  const fakeStart = Date.now();
  const sim = createSimulator({ scenario: 'default', clock: 'realtime', ...clock });
  try {
    const url = await withinRealTime(sim.listen(0), 5_000, 'sim.listen(0)');
    const offset = Date.parse(sim.clock.state().now) - Date.now();

    // A liveness bound in real time: a client waiting in real time would take minutes.
    const { video, seen, polls } = await withinRealTime(createAndWait(url, 'sk_test_fake_timers'), 10_000, 'the polling client');

    expect(video.status).toBe('succeeded');
    // Every 2-s poll saw the pipeline advance: each observable stage lasts longer than 2 s.
    expect(seen).toEqual(['queued', 'processing', 'verifying', 'succeeded']);
    // Minutes of virtual time...
    const virtualMs = Date.parse(video.completed_at!) - Date.parse(video.created_at);
    expect(virtualMs).toBeGreaterThan(60_000);
    // ... walked through by 2-s polls (fetch's own timers may nudge the clock while a request is
    // in flight, which can only save a poll or two)...
    expect(polls).toBeLessThanOrEqual(Math.ceil(virtualMs / 2000));
    expect(polls).toBeGreaterThanOrEqual(Math.ceil(virtualMs / 2000) - 2);
    // ... on the fake clock: the time that passed is its own, the whole of the virtual time.
    expect(Date.now() - fakeStart).toBeGreaterThanOrEqual(virtualMs);
    // The simulator's clock is the faked Date.now(), shifted by a constant: it moved with the client's.
    expect(Date.parse(sim.clock.state().now) - Date.now()).toBe(offset);
  } finally {
    await withinRealTime(sim.close(), 5_000, 'sim.close()');
  }
}

beforeAll(async () => {
  // The first fetch of a process loads Node's HTTP client, which takes many turns of the event loop;
  // under tick mode "next timer" each turn would jump the fake clock to fetch's own housekeeping
  // timer. One request with real timers first keeps the polls in step with the client's waits.
  const warm = createSimulator({ scenario: 'fast', clock: 'manual' });
  try {
    const res = await fetch(`${await warm.listen(0)}/_sim/health`);
    expect(res.status).toBe(200);
  } finally {
    await warm.close();
  }
});

describe('createSimulator({ now })', () => {
  it('realtime mode reads time from now() (epoch ms), times the speed, and not from the process clock', async () => {
    let t = Date.parse('2030-06-01T12:00:00.000Z');
    const sim = createSimulator({ scenario: 'default', clock: 'realtime', now: () => t });
    const start = Date.parse(sim.clock.state().now);
    const created = await request(sim.app)
      .post('/v1/videos')
      .set(bearer('sk_test_host_clock'))
      .send({ model: 'video-3.2', prompt: PROMPT })
      .expect(200);
    expect(created.body.status).toBe('queued');

    // Real time passes (the request above), the given clock does not: virtual time stands still.
    expect(Date.parse(sim.clock.state().now)).toBe(start);
    t += 1_500;
    expect(Date.parse(sim.clock.state().now) - start).toBe(1_500);

    // Ten minutes on the given clock: every default generation resolves within 600 s.
    t += 600_000;
    const done = await request(sim.app).get(`/v1/videos/${created.body.id}`).set(bearer('sk_test_host_clock')).expect(200);
    expect(done.body.status).toBe('succeeded');
    expect(Date.parse(sim.clock.state().now) - start).toBe(601_500);

    const fast = createSimulator({ scenario: 'default', clock: 'realtime', speed: 10, now: () => t });
    const fastStart = Date.parse(fast.clock.state().now);
    t += 1_000;
    expect(Date.parse(fast.clock.state().now) - fastStart).toBe(10_000);
  });
});

describe("under vitest's fake timers", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('a client polling every 2 s drives a default generation to succeeded in well under a second, no request hanging', async () => {
    vi.useFakeTimers(); // vitest's default keeps nextTick and queueMicrotask real
    vi.setTimerTickMode('nextTimerAsync');
    await expectPollingClientDrivesGeneration({ hostClock: hostClockOf(globalThis) });
  });

  it('the same with now: () => Date.now() alone (as before hostClock)', async () => {
    vi.useFakeTimers();
    vi.setTimerTickMode('nextTimerAsync');
    await expectPollingClientDrivesGeneration({ now: () => Date.now() });
  });

  it('with hostClock: hostClockOf(globalThis), injected latency and hang_ms run on the fake timers, as the client\'s waits do', async () => {
    vi.useFakeTimers();
    vi.setTimerTickMode('nextTimerAsync');
    const sim = createSimulator({ scenario: 'fast', clock: 'manual', hostClock: hostClockOf(globalThis) });
    try {
      const url = await withinRealTime(sim.listen(0), 5_000, 'sim.listen(0)');
      sim.faults.queue({ path: '/v1/videos', method: 'GET', latency_ms: 60_000 });
      sim.faults.queue({ path: '/v1/videos', method: 'GET', network: 'hang', hang_ms: 120_000 });
      const headers = { Authorization: 'Bearer sk_test_fake_host_clock' };
      const beforeLatency = Date.now();
      const delayed = await withinRealTime(fetch(`${url}/v1/videos`, { headers }), 10_000, 'a minute of injected latency');
      expect(delayed.status).toBe(200);
      expect(Date.now() - beforeLatency).toBeGreaterThanOrEqual(60_000);
      const beforeHang = Date.now();
      await expect(withinRealTime(fetch(`${url}/v1/videos`, { headers }), 10_000, 'a hang of two minutes')).rejects.toThrow('fetch failed');
      expect(Date.now() - beforeHang).toBeGreaterThanOrEqual(120_000);
    } finally {
      await withinRealTime(sim.close(), 5_000, 'sim.close()');
    }
  });

  it('timers that never move (setImmediate faked too): concurrent requests are still answered, each its own answer', async () => {
    vi.useFakeTimers(); // no tick mode: a faked setTimeout or setImmediate never fires
    const sim = createSimulator({ scenario: 'fast', clock: 'manual' });
    try {
      const url = await withinRealTime(sim.listen(0), 5_000, 'sim.listen(0)');
      const headers = { Authorization: 'Bearer sk_test_frozen_timers', 'Content-Type': 'application/json' };
      const create = (prompt: string) => fetch(`${url}/v1/videos`, { method: 'POST', headers, body: JSON.stringify({ model: 'video-3.2', prompt }) });
      const answers = await withinRealTime(Promise.all([create('first'), create('second'), create('third')]), 5_000, 'three creates');
      const videos = await Promise.all(answers.map((res) => res.json() as Promise<Video>));
      expect(answers.map((res) => res.status)).toEqual([200, 200, 200]);
      expect(videos.map((video) => video.prompt)).toEqual(['first', 'second', 'third']);
      const polled = await withinRealTime(fetch(`${url}/v1/videos/${videos[1]!.id}`, { headers }), 5_000, 'a poll');
      expect(((await polled.json()) as Video).prompt).toBe('second');
    } finally {
      await withinRealTime(sim.close(), 5_000, 'sim.close()');
    }
  });
});

describe('under @sinonjs/fake-timers', () => {
  it('a client polling every 2 s drives a default generation to succeeded in well under a second, no request hanging', async () => {
    const clock = FakeTimers.install({ now: Date.now(), toNotFake: ['nextTick', 'queueMicrotask'] });
    clock.setTickMode({ mode: 'nextAsync' });
    try {
      await expectPollingClientDrivesGeneration({ hostClock: hostClockOf(clock) });
    } finally {
      clock.uninstall();
    }
  });
});
