/**
 * The downstream app's client against the shared simulator (see global-setup.ts). Every test has
 * its own API key, so the tests run concurrently and each moves only its own clock.
 */
import { describe, expect, it } from 'vitest';
import { ServiceRequestError, VideoClient, VideoFailedError } from './video-client.js';
import { advance, journal, newApiKey, queueFault, simUrl, virtualSleep } from './sim-helpers.js';

const PROMPT = 'A slow dolly shot across a rain-soaked neon street at night.';

function clientFor(apiKey: string, waits: number[] = []) {
  return new VideoClient({ baseUrl: simUrl(), apiKey, sleep: virtualSleep(apiKey, waits) });
}

describe.concurrent('VideoClient against the simulator', () => {
  it('generates a video and gets a playable MP4', async () => {
    const key = newApiKey();
    const video = await clientFor(key).generate({ model: 'video-3.2', prompt: PROMPT });
    expect(video.status).toBe('succeeded');
    expect(video.cost_cents).toBeGreaterThan(0);
    const media = await fetch(video.output!.url);
    expect(media.status).toBe(200);
    expect(media.headers.get('content-type')).toMatch(/^video\/mp4/);
  });

  it('retries a 500 with the same Idempotency-Key and creates exactly one video', async () => {
    const key = newApiKey();
    await queueFault(key, { path: '/v1/videos', method: 'POST', status: 500, times: 2 });
    const video = await clientFor(key).generate({ model: 'video-3.2', prompt: PROMPT });
    expect(video.status).toBe('succeeded');
    const creates = (await journal(key)).filter((e) => e.method === 'POST');
    expect(creates.map((e) => e.status)).toEqual([500, 500, 200]);
    const list = await fetch(`${simUrl()}/v1/videos`, { headers: { Authorization: `Bearer ${key}` } });
    expect(((await list.json()) as { data: unknown[] }).data).toHaveLength(1);
  });

  it('waits for Retry-After on a 429', async () => {
    const key = newApiKey();
    const waits: number[] = [];
    await queueFault(key, { path: '/v1/videos', method: 'POST', status: 429 });
    await clientFor(key, waits).generate({ model: 'video-3.1', prompt: PROMPT });
    expect(waits[0]).toBe(1_000);
  });

  it('reports a failed render', async () => {
    const key = newApiKey();
    await queueFault(key, { path: '/v1/videos', method: 'POST', outcome: { fail_stage: 'render' } });
    const failure = await clientFor(key).generate({ model: 'video-3.2', prompt: PROMPT }).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(VideoFailedError);
    expect((failure as VideoFailedError).video.error).toMatchObject({ type: 'api_error', code: 'render_failed' });
  });

  it('does not retry a 400', async () => {
    const key = newApiKey();
    const failure = await clientFor(key).createVideo({ model: 'video-9', prompt: PROMPT }).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(ServiceRequestError);
    expect((failure as ServiceRequestError).error).toMatchObject({ code: 'model_not_found', param: 'model' });
    expect(await journal(key)).toHaveLength(1);
  });

  it('sees the intermediate statuses when it advances in small steps', async () => {
    const key = newApiKey();
    const client = clientFor(key);
    const seen = new Set<string>();
    let video = await client.createVideo({ model: 'video-3.2', prompt: PROMPT });
    while (!['succeeded', 'failed', 'canceled'].includes(video.status)) {
      seen.add(video.status);
      await advance(key, 0.25);
      video = await client.retrieveVideo(video.id);
    }
    expect(video.status).toBe('succeeded');
    expect([...seen]).toEqual(['queued', 'processing', 'verifying']);
  });

  it('is reproducible: the same key after a reset gets the same id and fate', async () => {
    const key = newApiKey();
    const first = await clientFor(key).generate({ model: 'video-3.2', prompt: PROMPT });
    await fetch(`${simUrl()}/_sim/reset`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ api_key: key }),
    });
    const again = await clientFor(key).generate({ model: 'video-3.2', prompt: PROMPT });
    expect(again.id).toBe(first.id);
    expect(again.cost_cents).toBe(first.cost_cents);
    expect(again.routed_model).toBe(first.routed_model);
  });
});
