/**
 * examples/frontend/index.html against a simulator, in headless Chromium whose timers the test
 * moves (Playwright's clock): a queued 429 is shown from its error body, a 429 while polling is
 * retried, a reset ends the poll loop with the error, and a new request stops following the old one.
 */
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { SimulatorControl, createSimulator } from '../../src/index.js';
import { openBrowser, type OpenBrowser, failureScreenshot as screenshotOnFailure } from './chromium.js';

const KEY = 'sk_test_frontend_dev';
const EXAMPLE = pathToFileURL(join(import.meta.dirname, '../../examples/frontend/index.html')).href;

const sim = createSimulator({ scenario: 'fast', clock: 'manual' });
let control: SimulatorControl;
let browser: OpenBrowser;
let page: Page;
/** The ids of the videos the page polled, in order, each once its answer has arrived. */
const polled: string[] = [];

beforeAll(async () => {
  const url = await sim.listen(0);
  control = new SimulatorControl({ baseUrl: url });
  browser = await openBrowser([
    [429, /^\/v1\//],
    [404, /^\/v1\/videos\//],
  ]);
  page = browser.page;
  // Counted when answered, not when sent: a control call made after the count must not reach the
  // server before the poll it follows.
  page.on('requestfinished', (request) => {
    const match = /\/v1\/videos\/(vid_\w+)$/.exec(new URL(request.url()).pathname);
    if (match && request.method() === 'GET') polled.push(match[1] as string);
  });
  await page.clock.install();
  await page.goto(`${EXAMPLE}?api=${encodeURIComponent(url)}`);
});

beforeEach(async () => {
  await control.reset();
  polled.length = 0;
});

afterAll(async () => {
  await browser?.close();
  await sim.close();
});

const failureScreenshot = (name: string): void => screenshotOnFailure(() => page, name);

const status = () => page.locator('#status');

/**
 * Moves the page's timers on, half a second at a time, until it has polled `count` times in all (a
 * poll's wait starts only once the previous answer has been read, which takes real time).
 */
async function pageTimeUntilPolled(count: number): Promise<void> {
  await expect
    .poll(
      async () => {
        if (polled.length < count) await page.clock.runFor(500);
        return polled.length;
      },
      // A liveness bound: each step waits for the page's real work, which a loaded machine slows.
      { timeout: 10_000 },
    )
    .toBe(count);
}

async function generate(): Promise<string> {
  await page.getByRole('button', { name: 'Generate' }).click();
  await status().getByText(/^vid_\w+: queued$/).waitFor();
  return ((await status().textContent()) as string).split(':')[0] as string;
}

describe('the example frontend', () => {
  it('shows a queued 429 from its error body', async () => {
    failureScreenshot('frontend-429-failure.png');
    await control.faults.queue({ path: '/v1/videos', method: 'POST', status: 429, api_key: KEY });
    await page.getByRole('button', { name: 'Generate' }).click();
    await status().getByText(/^429 rate_limit_exceeded: Too many requests\. .*\(injected by a queued fault\)$/).waitFor();
    expect(browser.errors).toEqual([]);
  });

  it('retries a 429 while polling after a longer wait, then plays the video', async () => {
    failureScreenshot('frontend-poll-429-failure.png');
    await control.faults.queue({ path: '/v1/videos/*', method: 'GET', status: 429, api_key: KEY });
    const id = await generate();
    await page.clock.runFor(2000);
    await status().getByText(`${id}: 429 rate_limit_exceeded`, { exact: false }).waitFor();
    expect(await status().textContent()).toMatch(/\(retrying in 4 s\)$/);
    await control.clock.advance(10);
    await page.clock.runFor(4000);
    await status().getByText(`${id}: succeeded`, { exact: true }).waitFor();
    await page.locator('#result video').waitFor();
    expect(polled).toEqual([id, id]);
  });

  it('stops polling after a reset, showing the 404 from its error body', async () => {
    failureScreenshot('frontend-reset-failure.png');
    const id = await generate();
    await control.reset();
    await page.clock.runFor(2000);
    await status().getByText(`${id}: 404 resource_not_found: No video generation with id '${id}' exists.`, { exact: true }).waitFor();
    await page.clock.runFor(20_000);
    expect(polled).toEqual([id]);
  });

  it('follows only the newest request: the older poll loop stops', async () => {
    failureScreenshot('frontend-stale-failure.png');
    const first = await generate();
    const second = await generate();
    expect(second).not.toBe(first);
    for (let i = 1; i <= 3; i++) await pageTimeUntilPolled(i);
    await control.clock.advance(10);
    await pageTimeUntilPolled(4);
    await status().getByText(`${second}: succeeded`, { exact: true }).waitFor();
    expect(polled).toEqual([second, second, second, second]);
  });
});
