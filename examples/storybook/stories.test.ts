/**
 * The built Storybook (storybook-static/, from `storybook build`) in headless Chromium (Debian's
 * `chromium`, driven by playwright-core; no browser is downloaded): each status story is loaded
 * alone (iframe.html?id=...), must show its status, and is screenshot to
 * artifacts/screenshots/STORY.png; the screenshot must hold a picture (a PNG of the card's size,
 * not one colour).
 */
import { mkdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { inflateSync } from 'node:zlib';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serve } from './serve.mjs';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--disable-background-networking', '--no-first-run'];
const SHOTS = join(import.meta.dirname, 'artifacts', 'screenshots');

const STORIES = [
  { id: 'video-status--queued', status: 'queued' },
  { id: 'video-status--processing', status: 'processing' },
  { id: 'video-status--succeeded', status: 'succeeded' },
  { id: 'video-status--failed', status: 'failed' },
  { id: 'video-status--canceled', status: 'canceled' },
];

let server: { url: string; close(): Promise<void> };
let browser: Browser;

beforeAll(async () => {
  mkdirSync(SHOTS, { recursive: true });
  server = await serve(0);
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS });
});

afterAll(async () => {
  await browser?.close();
  await server?.close();
});

/** Whether a PNG (8-bit RGB or RGBA, as Chromium writes) has more than one colour, and its size. */
function pngSummary(png: Buffer): { width: number; height: number; colours: number } {
  expect(png.subarray(1, 4).toString('latin1')).toBe('PNG');
  const width = png.readUInt32BE(16);
  const height = png.readUInt32BE(20);
  const [depth, type] = [png[24], png[25]];
  expect(depth).toBe(8);
  const channels = type === 6 ? 4 : 3;
  const idat: Buffer[] = [];
  for (let at = 8; at < png.length; ) {
    const length = png.readUInt32BE(at);
    if (png.toString('latin1', at + 4, at + 8) === 'IDAT') idat.push(png.subarray(at + 8, at + 8 + length));
    at += 12 + length;
  }
  const raw = inflateSync(Buffer.concat(idat));
  // Sampling the bytes of each row (filters aside, distinct bytes mean a picture that is not flat).
  const seen = new Set<number>();
  const stride = width * channels + 1;
  for (let y = 0; y < height; y += 7) for (let x = 1; x < stride; x += 13) seen.add(raw[y * stride + x]!);
  return { width, height, colours: seen.size };
}

async function openStory(page: Page, id: string): Promise<void> {
  await page.goto(`${server.url}/iframe.html?id=${id}&viewMode=story`);
}

describe('storybook build', () => {
  it('lists one story per status', () => {
    const index = JSON.parse(readFileSync(join(import.meta.dirname, 'storybook-static', 'index.json'), 'utf8')) as { entries: Record<string, { type: string }> };
    const stories = Object.entries(index.entries).filter(([, e]) => e.type === 'story').map(([id]) => id);
    expect(stories.sort()).toEqual(STORIES.map((s) => s.id).sort());
  });

  for (const story of STORIES) {
    it(`${story.id} renders the ${story.status} card`, async () => {
      const page = await browser.newPage({ viewport: { width: 800, height: 700 } });
      const problems: string[] = [];
      page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
      page.on('console', (m) => m.type() === 'error' && problems.push(`console: ${m.text()} (${m.location().url})`));
      try {
        page.setDefaultTimeout(30_000);
        await openStory(page, story.id);
        const status = page.locator('#storybook-root [data-testid="status"]');
        await status.waitFor();
        expect(await status.textContent()).toBe(story.status);
        if (story.status === 'succeeded') {
          // The player has the whole of the video's file (through the worker): HAVE_ENOUGH_DATA.
          await page.waitForFunction(() => (document.querySelector('[data-testid="player"]') as HTMLVideoElement | null)?.readyState! >= 4);
          const duration = await page.$eval('[data-testid="player"]', (v) => (v as HTMLVideoElement).duration);
          expect(duration).toBeCloseTo(4, 0);
        }
        if (story.status === 'failed') expect(await page.textContent('[data-testid="error"]')).toMatch(/^render_failed: /);
        const card = page.locator('#storybook-root .video-card');
        const file = join(SHOTS, `${story.id}.png`);
        const png = await card.screenshot({ path: file });
        expect(statSync(file).size).toBe(png.length);
        const shot = pngSummary(png);
        const box = (await card.boundingBox())!;
        expect(Math.abs(shot.width - box.width)).toBeLessThanOrEqual(1);
        expect(shot.height).toBeGreaterThan(80);
        expect(shot.colours).toBeGreaterThan(2);
        expect(problems).toEqual([]);
      } finally {
        await page.close();
      }
    });
  }
});
