/**
 * The same client against a simulator owned by this file (no global setup needed): handy when a
 * suite wants its own scenario, or to call `sim.clock.advance` directly.
 */
import { createSimulator, type SimulatorHandle } from 'video-service-sim';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { VideoClient } from './video-client.js';

let sim: SimulatorHandle;
let url: string;

beforeAll(async () => {
  sim = createSimulator({ scenario: 'fast', clock: 'manual', seed: 1234 });
  url = await sim.listen(0);
});
afterAll(() => sim.close());

describe.concurrent('an in-process simulator', () => {
  it('drives a video to succeeded with sim.clock.advance', async () => {
    const apiKey = 'sk_test_in_process_a';
    const client = new VideoClient({
      baseUrl: url,
      apiKey,
      sleep: async (ms) => void sim.clock.advance(ms / 1_000, apiKey),
    });
    const video = await client.generate({ model: 'video-3.2', prompt: 'A hummingbird at a feeder, slow motion.' });
    expect(video.status).toBe('succeeded');
    expect(video.output?.url.startsWith(`${url}/cdn/videos/`)).toBe(true);
  });

  it('keeps accounts apart: another key neither sees nor moves the first one', async () => {
    const a = new VideoClient({ baseUrl: url, apiKey: 'sk_test_in_process_b' });
    const b = new VideoClient({ baseUrl: url, apiKey: 'sk_test_in_process_c' });
    const video = await a.createVideo({ model: 'video-3.0', prompt: 'Waves rolling onto a pebble beach.' });
    sim.clock.advance(60, 'sk_test_in_process_c');
    expect((await a.retrieveVideo(video.id)).status).toBe('queued');
    await expect(b.retrieveVideo(video.id)).rejects.toMatchObject({ status: 404 });
  });
});
