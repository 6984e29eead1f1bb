/**
 * The Testcontainers module (README, "Produce every state"): `VideoSimContainer` builds the image
 * from the repository's Dockerfile, starts it with a scenario, seed, clock and control token, waits
 * for `/_sim/health`, and its `SimulatorControl` drives a generation to `succeeded`, whose media
 * URLs name the address the test reaches the container at.
 *
 * Ryuk, Testcontainers' reaper, is off by default here (test/docker/vitest.config.ts): its image
 * cannot be pulled where the engine has no registry, and the container is stopped in `afterAll`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SimulatorControlError, createSimulator } from '../../src/index.js';
import { VideoSimContainer, type StartedVideoSimContainer } from '../../src/testcontainers.js';

const KEY = 'sk_test_testcontainers';
const TOKEN = 'tc-token-0123456789';

describe('VideoSimContainer', () => {
  let sim: StartedVideoSimContainer;

  beforeAll(async () => {
    const container = await VideoSimContainer.build({ tag: 'video-service-sim:testcontainers' });
    sim = await container.withScenario('fast').withSeed(4242).withClock('manual').withControlToken(TOKEN).start();
  }, 20 * 60_000);

  afterAll(async () => {
    await sim?.stop();
  });

  it('starts the image with the scenario, seed and clock, and exposes its address and token', async () => {
    expect(sim.baseUrl).toMatch(/^http:\/\/[^:]+:\d+$/);
    expect(sim.controlToken).toBe(TOKEN);
    const health = await sim.control.health();
    expect([health.status, health.scenario, health.seed, health.clock.mode]).toEqual(['ok', 'fast', 4242, 'manual']);
  });

  it('drives a generation to succeeded through the control client', async () => {
    const created = await fetch(`${sim.baseUrl}/v1/videos`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${KEY}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ model: 'video-3.2', prompt: 'A lighthouse at dawn, slow pan.' }),
    });
    expect(created.status).toBe(200);
    const { id } = (await created.json()) as { id: string };
    expect((await sim.control.generations.get(id)).status).toBe('queued');
    const clock = await sim.control.clock.advance(10, KEY);
    expect(clock.now).toBe('2026-01-01T00:00:10.000Z');
    const polled = await fetch(`${sim.baseUrl}/v1/videos/${id}`, { headers: { Authorization: `Bearer ${KEY}` } });
    expect(((await polled.json()) as { status: string }).status).toBe('succeeded');
    const error = await Promise.resolve(sim.control.generations.finish(id)).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SimulatorControlError);
    expect((error as SimulatorControlError).code).toBe('generation_resolved');
  });

  it('finishes a generation at once through the control client', async () => {
    const created = await fetch(`${sim.baseUrl}/v1/videos`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${KEY}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ model: 'video-3.2', prompt: 'A paper boat on a puddle.' }),
    });
    const { id } = (await created.json()) as { id: string };
    const finished = await sim.control.generations.finish(id);
    expect([finished.status, finished.completed_at]).toEqual(['succeeded', '2026-01-01T00:00:10.000Z']);
  });

  it("answers media URLs that reach this container, not another simulator on the host's port 8080", async () => {
    // Another simulator where the container's own address would point: localhost:8080. (Something
    // already listening there is the same trap.)
    const other = createSimulator({ scenario: 'fast', clock: 'manual' });
    const listening = await other.listen(8080, '127.0.0.1').then(
      () => true,
      (e: NodeJS.ErrnoException) => {
        if (e.code === 'EADDRINUSE') return false;
        throw e;
      },
    );
    try {
      const created = await fetch(`${sim.baseUrl}/v1/videos`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${KEY}`, 'Content-Type': 'application/json' },
        body: JSON.stringify({ model: 'video-3.2', prompt: 'A kite over a beach, slow tilt.' }),
      });
      const { id } = (await created.json()) as { id: string };
      const finished = await sim.control.generations.finish(id);
      expect(finished.status).toBe('succeeded');
      const polled = await fetch(`${sim.baseUrl}/v1/videos/${id}`, { headers: { Authorization: `Bearer ${KEY}` } });
      const { output } = (await polled.json()) as { output: { url: string; thumbnail_url: string } };
      expect(output.url).toBe(`${sim.baseUrl}/cdn/videos/${id}.mp4`);
      expect(output.thumbnail_url).toBe(`${sim.baseUrl}/cdn/thumbnails/${id}.png`);
      const video = await fetch(output.url);
      expect([video.status, video.headers.get('content-type')]).toEqual([200, 'video/mp4']);
      expect(Buffer.from(await video.arrayBuffer()).subarray(4, 8).toString('latin1')).toBe('ftyp');
      const thumbnail = await fetch(output.thumbnail_url);
      expect([thumbnail.status, thumbnail.headers.get('content-type')]).toEqual([200, 'image/png']);
    } finally {
      if (listening) await other.close();
    }
  });
});
