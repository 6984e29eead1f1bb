/**
 * The simulator inside the test process, through Mock Service Worker: `createSimulatorHandlers`
 * answers the service's address (`https://api.example.test`, which never leaves the process) and
 * `msw/node`'s `setupServer` puts its handlers under `fetch`. The app's `VideoClient` is tested as
 * it is; its waits move the simulator's manual clock, so minutes of pipeline take no time.
 */
import { setupServer } from 'msw/node';
import { createSimulatorHandlers, type SimulatorHandlers } from 'video-service-sim/msw';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { readMp4 } from './mp4.js';
import { VideoClient } from './video-client.js';

const BASE_URL = 'https://api.example.test';

// One MSW server for the file; each test brings its own simulator's handlers (server.use).
const server = setupServer();
beforeAll(() => server.listen({ onUnhandledFrame: 'error' }));
afterEach(() => server.resetHandlers());
afterAll(() => server.close());

let sim: SimulatorHandlers | undefined;
afterEach(() => sim?.close());

function simulator(options: Omit<Parameters<typeof createSimulatorHandlers>[0], 'baseUrl'>): SimulatorHandlers {
  sim = createSimulatorHandlers({ baseUrl: BASE_URL, clock: 'manual', ...options });
  server.use(...sim.handlers);
  return sim;
}

/** A client whose waits move this simulator's clock (this key's account only) instead of sleeping. */
function clientFor(s: SimulatorHandlers, apiKey: string): VideoClient {
  return new VideoClient({ baseUrl: BASE_URL, apiKey, sleep: async (ms) => void (await s.control.clock.advance(ms / 1000, apiKey)) });
}

describe('video-service-sim/msw under msw/node', () => {
  it('create, advance the clock, poll until succeeded, download the MP4', async () => {
    const s = simulator({ scenario: 'fast' });
    const apiKey = 'sk_test_msw_happy';
    const client = new VideoClient({ baseUrl: BASE_URL, apiKey, sleep: async () => {} });

    const created = await client.create({ model: 'video-3.2', prompt: 'A paper boat drifting down a rain gutter.', duration_seconds: 4, resolution: '720p' });
    expect(created.status).toBe('queued');

    // Nothing moves until the test says so (manual clock).
    expect((await client.get(created.id)).status).toBe('queued');
    await s.control.clock.advance(2, apiKey);
    expect((await client.get(created.id)).status).not.toBe('queued');
    await s.control.clock.advance(60, apiKey);
    const video = await client.waitFor(created.id);
    expect(video).toMatchObject({ status: 'succeeded', duration_seconds: 4, resolution: '720p', error: null });
    expect(video.output!.url).toBe(`${BASE_URL}/cdn/videos/${video.id}.mp4`);

    // The file: served by the same handlers, a real H.264 MP4 of the video's length and size.
    const res = await fetch(video.output!.url);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^video\/mp4/);
    const bytes = new Uint8Array(await res.arrayBuffer());
    expect(bytes.length).toBe(Number(res.headers.get('content-length')));
    const mp4 = readMp4(bytes);
    expect(mp4.boxes[0]).toBe('ftyp');
    expect(mp4.boxes).toContain('moov');
    expect(mp4.boxes).toContain('mdat');
    expect(mp4.majorBrand).toBe('isom');
    expect(mp4.durationSeconds).toBeCloseTo(4, 1);
    expect([mp4.width, mp4.height]).toEqual([1280, 720]);

    // And the thumbnail, a PNG.
    const thumbnail = new Uint8Array(await (await fetch(video.output!.thumbnail_url)).arrayBuffer());
    expect([...thumbnail.subarray(1, 4)].map((c) => String.fromCharCode(c)).join('')).toBe('PNG');
  });

  it('flaky scenario: a client with retries and an Idempotency-Key ends with one generation per create', async () => {
    // ~7% of requests 500, ~7% 429 with Retry-After; seeded, so the same run every time.
    const s = simulator({ scenario: 'flaky', seed: 7 });
    const apiKey = 'sk_test_msw_flaky';
    const client = clientFor(s, apiKey);
    // And the worst case for a create: it is carried out, then the connection drops before the
    // answer (fetch rejects). Only the Idempotency-Key tells the retry apart from a new video.
    await s.control.faults.queue({ path: '/v1/videos', method: 'POST', api_key: apiKey, network: 'reset', phase: 'after' });

    const ids: string[] = [];
    for (let i = 0; i < 12; i++) {
      const video = await client.create({ model: 'video-3.2', prompt: `Take ${i}: a heron lifting off a misty pond.` });
      ids.push(video.id);
    }
    expect(client.retries).toContain('network');
    expect(new Set(ids).size).toBe(12);
    // What the service holds: exactly one generation per create, retries and the lost answer included.
    const held = await s.control.generations.list({ apiKey, limit: 100 });
    expect(held.data.map((g) => g.id).sort()).toEqual([...ids].sort());

    // Polls are retried too; every video resolves (a flaky one may fail: ~15% of generations do).
    for (const id of ids) expect(['succeeded', 'failed']).toContain((await client.waitFor(id)).status);
    // Along the way the client met the scenario's 500s and 429s, and got past each.
    expect(client.retries.filter((r) => r === '500' || r === '429').length).toBeGreaterThan(0);
  });

  it('a prompt trigger: [sim:fail=render] gives a failed video with error code render_failed', async () => {
    const s = simulator({ scenario: 'fast' });
    const apiKey = 'sk_test_msw_trigger';
    const client = clientFor(s, apiKey);
    const created = await client.create({ model: 'video-3.2', prompt: 'A lighthouse at dawn [sim:fail=render]' });
    expect(created.status).toBe('queued');
    const video = await client.waitFor(created.id);
    expect(video.status).toBe('failed');
    expect(video.output).toBeNull();
    expect(video.error).toMatchObject({ type: 'api_error', code: 'render_failed' });
    // The prompt is kept as it was sent, directive included.
    expect(video.prompt).toBe('A lighthouse at dawn [sim:fail=render]');
  });
});
