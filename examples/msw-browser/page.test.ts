/**
 * The page in headless Chromium (Debian's `chromium`, driven by playwright-core; no browser is
 * downloaded): served with `Content-Security-Policy: script-src 'self'`, its service worker
 * (Mock Service Worker) answers `/api` with the simulator's handlers. The test clicks Create, moves
 * the page's virtual clock through `window.sim`, waits for the page's own polling to show
 * `succeeded`, and checks that the <video> element plays the output for its duration.
 */
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { CSP, serve } from './serve.mjs';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--disable-background-networking', '--no-first-run', '--autoplay-policy=no-user-gesture-required'];

let server: { url: string; close(): Promise<void> };
let browser: Browser;
let page: Page;
const problems: string[] = [];

beforeAll(async () => {
  server = await serve(0);
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS });
  page = await (await browser.newContext()).newPage();
  page.setDefaultTimeout(20_000);
  page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
  page.on('console', (m) => {
    // A CSP refusal is logged as an error: any would fail the test.
    if (m.type() === 'error') problems.push(`console: ${m.text()} (${m.location().url})`);
  });
});

afterAll(async () => {
  await browser?.close();
  await server?.close();
});

it('create, advance the clock, poll, and play the video for duration_seconds', async () => {
  const response = await page.goto(server.url);
  expect(response?.headers()['content-security-policy']).toBe(CSP);
  // The policy holds in the page: an inline script is refused (and so would be eval, which the
  // simulator's bundle never needs). The refusal is logged; nothing else may be.
  const inline = await page.evaluate(() => {
    const script = document.createElement('script');
    script.textContent = 'window.inlineRan = true';
    document.head.append(script);
    return (window as unknown as { inlineRan?: boolean }).inlineRan ?? false;
  });
  expect(inline).toBe(false);
  expect(problems.splice(0)).toEqual([expect.stringMatching(/Content Security Policy/)]);
  // The worker is registered and controls the page, and the handlers are ready.
  await expect.poll(() => page.textContent('#status')).toBe('ready');
  expect(await page.evaluate(() => navigator.serviceWorker.controller?.scriptURL)).toBe(`${server.url}/mockServiceWorker.js`);

  await page.fill('#duration', '6');
  await page.click('#create-button');
  await expect.poll(() => page.textContent('#status')).toBe('queued');
  const id = (await page.textContent('#video-id'))!;
  expect(id).toMatch(/^vid_/);

  // Virtual time stands still until the test moves it (the page keeps polling meanwhile).
  await page.waitForTimeout(1200);
  expect(await page.textContent('#status')).toBe('queued');
  await page.evaluate(() => (window as unknown as { sim: { clock: { advance(s: number): Promise<unknown> } } }).sim.clock.advance(60));
  await expect.poll(() => page.textContent('#status')).toBe('succeeded');

  // The <video> element: its source is the simulator's file, answered by the same worker.
  const playback = await page.evaluate(async () => {
    const video = document.getElementById('player') as HTMLVideoElement;
    const playing = new Promise<string>((resolve) => {
      if (!video.paused && video.currentTime > 0) resolve('already playing');
      video.addEventListener('timeupdate', () => video.currentTime > 0 && resolve('timeupdate'));
      video.addEventListener('playing', () => resolve('playing'));
    });
    const event = await Promise.race([playing, new Promise<string>((r) => setTimeout(() => r('none'), 10_000))]);
    return {
      src: video.currentSrc,
      expected: Number(video.dataset.expectedDuration),
      resolution: video.dataset.resolution,
      duration: video.duration,
      readyState: video.readyState,
      event,
      width: video.videoWidth,
      height: video.videoHeight,
      error: video.error?.message ?? null,
    };
  });
  expect(playback.error).toBeNull();
  expect(playback.src).toBe(`${server.url}/api/cdn/videos/${id}.mp4`);
  expect(playback.expected).toBe(6);
  expect(Math.abs(playback.duration - playback.expected)).toBeLessThan(0.25);
  expect(playback.readyState).toBeGreaterThanOrEqual(2); // HAVE_CURRENT_DATA or more
  expect(playback.event).not.toBe('none');
  // The picture of the video's resolution (1080p unless the create asks for 720p).
  expect(playback.resolution).toBe('1080p');
  expect([playback.width, playback.height]).toEqual([1920, 1080]);
  // Played on: currentTime moves.
  const t0 = await page.evaluate(() => (document.getElementById('player') as HTMLVideoElement).currentTime);
  await expect.poll(() => page.evaluate(() => (document.getElementById('player') as HTMLVideoElement).currentTime)).toBeGreaterThan(t0);

  expect(problems).toEqual([]);
});
