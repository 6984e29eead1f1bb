/**
 * Video files in a real player: headless Chromium (Debian's `chromium` package driven by
 * playwright-core) loads a succeeded video's `output.url` in a <video> element and reads its
 * duration and size, seeks into the last repetition of the looped clip, and plays to the end.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSimulator } from '../../src/index.js';
import { LIVENESS, launchChromium } from './chromium.js';

const KEY = 'sk_test_video_duration';

const sim = createSimulator({ scenario: 'fast', clock: 'manual' });
let url: string;
let profile: string;
let context: BrowserContext | undefined;
let page: Page;
const pageErrors: string[] = [];

beforeAll(async () => {
  url = await sim.listen(0);
  profile = mkdtempSync(join(tmpdir(), 'sim-video-chromium-'));
  context = await launchChromium(profile, {
    args: ['--autoplay-policy=no-user-gesture-required'],
  });
  page = context.pages()[0] ?? (await context.newPage());
  page.setDefaultTimeout(LIVENESS);
  page.on('pageerror', (error) => pageErrors.push(error.message));
  // A page of the simulator's own origin, so the <video> loads same-origin media.
  await page.goto(`${url}/_sim/health`);
});

afterAll(async () => {
  await context?.close();
  await sim.close();
  if (profile) rmSync(profile, { recursive: true, force: true });
});

/** Creates a video, moves the clock until it has succeeded, and returns its `output.url`. */
async function succeededVideoUrl(resolution: string, durationSeconds: number): Promise<string> {
  const headers = { Authorization: `Bearer ${KEY}`, 'Content-Type': 'application/json' };
  const created = await fetch(`${url}/v1/videos`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ model: 'video-3.2', prompt: 'A metronome ticking on a piano.', resolution, duration_seconds: durationSeconds }),
  });
  expect(created.status).toBe(200);
  const { id } = (await created.json()) as { id: string };
  const advanced = await fetch(`${url}/_sim/clock/advance`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ seconds: 60, api_key: KEY }),
  });
  expect(advanced.status).toBe(200);
  const video = (await (await fetch(`${url}/v1/videos/${id}`, { headers })).json()) as {
    status: string;
    output: { url: string } | null;
  };
  expect(video.status).toBe('succeeded');
  return video.output!.url;
}

interface Playback {
  duration: number;
  width: number;
  height: number;
  /** Where each seek landed, and a fingerprint of the frame shown there. */
  seeks: { at: number; frame: string }[];
  /** currentTime when `ended` fired after playing the last 1.5 s. */
  endedAt: number;
  error: string | null;
}

/** Loads `src` in a fresh <video>, seeks to each of `seekTo`, then plays its last 1.5 s to the end. */
function playInPage(src: string, seekTo: number[]): Promise<Playback> {
  return page.evaluate(
    async ({ src, seekTo }) => {
      const video = document.createElement('video');
      video.muted = true;
      video.preload = 'auto';
      document.body.replaceChildren(video);
      const once = (event: string) =>
        new Promise<void>((resolve, reject) => {
          video.addEventListener(event, () => resolve(), { once: true });
          video.addEventListener('error', () => reject(new Error(`media error ${video.error?.code}: ${video.error?.message}`)), { once: true });
        });
      const canvas = document.createElement('canvas');
      canvas.width = 64;
      canvas.height = 36;
      const draw = canvas.getContext('2d', { willReadFrequently: true })!;
      const fingerprint = (): string => {
        draw.drawImage(video, 0, 0, canvas.width, canvas.height);
        const pixels = draw.getImageData(0, 0, canvas.width, canvas.height).data;
        let hash = 2166136261;
        for (const byte of pixels) hash = Math.imul(hash ^ byte, 16777619) >>> 0;
        return hash.toString(16);
      };

      const loaded = once('loadeddata');
      video.src = src;
      await loaded;
      const seeks: { at: number; frame: string }[] = [];
      // A seek's 'seeked' can come before the frame at the new time is on screen; the frame
      // callback says when it is (a second at most, should the callback not come).
      const presented = () =>
        new Promise<void>((resolve) => {
          video.requestVideoFrameCallback(() => resolve());
          setTimeout(resolve, 1000);
        });
      for (const at of seekTo) {
        const seeked = once('seeked');
        const shown = presented();
        video.currentTime = at;
        await seeked;
        await shown;
        seeks.push({ at: video.currentTime, frame: fingerprint() });
      }
      const seeked = once('seeked');
      video.currentTime = video.duration - 1.5;
      await seeked;
      const ended = once('ended');
      await video.play();
      await ended;
      return {
        duration: video.duration,
        width: video.videoWidth,
        height: video.videoHeight,
        seeks,
        endedAt: video.currentTime,
        error: video.error ? video.error.message : null,
      };
    },
    { src, seekTo },
  );
}

describe('a succeeded video in a <video> element', () => {
  it.each([
    ['720p', 4, { width: 1280, height: 720 }],
    ['1080p', 5, { width: 1920, height: 1080 }],
    ['720p', 10, { width: 1280, height: 720 }],
    ['1080p', 16, { width: 1920, height: 1080 }],
  ] as const)('a %s video of %i s lasts that long at that size, seeks into its last repetition and plays to the end', async (resolution, seconds, size) => {
    const src = await succeededVideoUrl(resolution, seconds);
    // 0.55 s and 1.05 s into the clip, then 0.55 s into its last repetition (the 2 s clip starts
    // again at 0, 2, 4... s), then near the end.
    const lastLoop = 2 * Math.floor((seconds - 0.55) / 2);
    const playback = await playInPage(src, [0.55, 1.05, lastLoop + 0.55, seconds - 0.5]);

    expect(playback.error).toBeNull();
    expect(Math.abs(playback.duration - seconds)).toBeLessThanOrEqual(0.1);
    expect({ width: playback.width, height: playback.height }).toEqual(size);
    const [first, later, again, nearEnd] = playback.seeks;
    expect(first!.at).toBeCloseTo(0.55, 2);
    expect(later!.frame).not.toBe(first!.frame); // the picture moves: fingerprints tell frames apart
    expect(again!.at).toBeCloseTo(lastLoop + 0.55, 2);
    expect(nearEnd!.at).toBeCloseTo(seconds - 0.5, 2);
    // A repetition decodes to the clip's own pictures: the same instant of the clip, the same frame.
    expect(again!.frame).toBe(first!.frame);
    expect(Math.abs(playback.endedAt - seconds)).toBeLessThanOrEqual(0.1);
    expect(pageErrors).toEqual([]);
  });
});
