/**
 * The dashboard at /_sim/, end to end in headless Chromium: Debian's `chromium` package driven by
 * playwright-core (never a browser download). Screenshots go to artifacts/browser/ (a CI artifact).
 */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from 'vitest';
import { createSimulator } from '../../src/index.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const ARTIFACTS = fileURLToPath(new URL('../../artifacts/browser/', import.meta.url));
/** Liveness, not performance: how long the page may take to show something. */
const LIVENESS = 20_000;
const KEY = 'sk_test_browser';

const sim = createSimulator({ scenario: 'fast', clock: 'manual' });
let url: string;
let profile: string;
let context: BrowserContext | undefined;
let page: Page;
const pageErrors: string[] = [];
const controlRequests: string[] = [];

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`${CHROMIUM} is missing: install Debian's package (apt-get install -y chromium); browsers are never downloaded.`);
  }
  mkdirSync(ARTIFACTS, { recursive: true });
  for (const name of readdirSync(ARTIFACTS)) if (name.endsWith('-failure.png')) rmSync(join(ARTIFACTS, name));
  url = await sim.listen(0);
  profile = mkdtempSync(join(tmpdir(), 'sim-dashboard-chromium-'));
  context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width: 1440, height: 960 },
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--disable-dev-shm-usage',
    ],
  });
  page = context.pages()[0] ?? (await context.newPage());
  page.setDefaultTimeout(LIVENESS);
  page.on('pageerror', (error) => pageErrors.push(`pageerror: ${error.stack ?? error.message}`));
  page.on('console', (message) => {
    if (message.type() === 'error') pageErrors.push(`console: ${message.text()}`);
  });
  page.on('request', (request) => {
    const path = new URL(request.url()).pathname;
    if (path.startsWith('/_sim/generations')) controlRequests.push(request.url());
  });
});

afterAll(async () => {
  await context?.close();
  await sim.close();
  if (profile) rmSync(profile, { recursive: true, force: true });
});

function failureScreenshot(name: string): void {
  onTestFailed(async () => {
    await page?.screenshot({ path: join(ARTIFACTS, name), fullPage: true }).catch(() => undefined);
  });
}

async function createVideo(body: Record<string, unknown>, key = KEY): Promise<{ id: string; status: string }> {
  const response = await fetch(`${url}/v1/videos`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ model: 'video-3.2', ...body }),
  });
  expect(response.status).toBe(200);
  return (await response.json()) as { id: string; status: string };
}

const row = (id: string, status?: string) =>
  page.locator(`[data-testid="generation-row"][data-id="${id}"]${status ? `[data-status="${status}"]` : ''}`);

/** The clock as the page shows it. */
const shown = (iso: string) => iso.replace('T', ' ').replace(/Z$/, '');

describe('dashboard at /_sim/', () => {
  it('shows a new generation live, advances the clock from its button, shows the thumbnail and plays the MP4', async () => {
    failureScreenshot('dashboard-failure.png');
    await page.goto(`${url}/_sim/`);
    await page.getByTestId('scenario-name').getByText('fast', { exact: true }).waitFor();
    await page.getByTestId('generations-empty').waitFor();
    expect(await page.getByTestId('clock-now').textContent()).toBe(shown(sim.clock.state().now));

    const video = await createVideo({ prompt: 'A paper boat drifting down a rain-soaked gutter, close-up, golden hour.' });
    await row(video.id, 'queued').waitFor();

    await page.getByTestId('advance-10s').click();
    await row(video.id, 'succeeded').waitFor();
    expect(sim.clock.state().now).toBe('2026-01-01T00:00:10.000Z');
    await page.getByTestId('clock-now').getByText(shown(sim.clock.state().now), { exact: true }).waitFor();

    // The thumbnail, loaded.
    await page.waitForFunction((id) => {
      const img = document.querySelector<HTMLImageElement>(`[data-id="${id}"] img[data-testid="generation-thumbnail"]`);
      return img !== null && img.complete && img.naturalWidth > 0;
    }, video.id);

    // The detail panel: its stages and the MP4 in a <video> element.
    await row(video.id).getByTestId('generation-open').click();
    await page.getByTestId('detail-id').getByText(video.id, { exact: true }).waitFor();
    expect(await page.getByTestId('detail-stages').locator('tbody tr').count()).toBe(6);
    const player = page.getByTestId('detail-video');
    await player.waitFor();
    await page.waitForFunction(() => {
      const v = document.querySelector<HTMLVideoElement>('[data-testid="detail-video"]');
      return v !== null && (v.readyState >= HTMLMediaElement.HAVE_METADATA || v.error !== null);
    });
    const media = await player.evaluate(async (element) => {
      const v = element as HTMLVideoElement;
      await v.play();
      return { readyState: v.readyState, width: v.videoWidth, height: v.videoHeight, error: v.error?.message ?? null };
    });
    expect(media.error).toBeNull();
    expect(media.readyState).toBeGreaterThanOrEqual(1); // HAVE_METADATA
    expect(media).toMatchObject({ width: 1920, height: 1080 });
    await page.waitForFunction(() => {
      const v = document.querySelector<HTMLVideoElement>('[data-testid="detail-video"]');
      return v !== null && v.currentTime > 0;
    });

    // Live updates asked only for what changed.
    expect(controlRequests.some((u) => new URL(u).searchParams.has('changed_since'))).toBe(true);
    // The journal shows the create.
    await page.getByTestId('journal').getByText('/v1/videos', { exact: true }).first().waitFor();

    await page.screenshot({ path: join(ARTIFACTS, 'dashboard.png'), fullPage: true });
    expect(pageErrors).toEqual([]);
  });

  it('shows failures and compliance flags after "until all resolved"', async () => {
    failureScreenshot('dashboard-flags-failure.png');
    const fault = (outcome: Record<string, unknown>) =>
      fetch(`${url}/_sim/faults`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ path: '/v1/videos', method: 'POST', outcome, api_key: 'sk_test_flags' }),
      }).then((r) => expect(r.status).toBe(200));
    await fault({ fail_stage: 'render' });
    const failed = await createVideo({ prompt: 'A drone shot over a foggy pine forest at sunrise.' }, 'sk_test_flags');
    await fault({ flags: [{ code: 'low_contrast', severity: 'warning', message: 'The output has low contrast.' }] });
    const flagged = await createVideo({ prompt: 'A neon-lit alley in the rain, slow dolly forward.', resolution: '720p' }, 'sk_test_flags');
    const pending = await createVideo({ prompt: 'Macro shot of dew drops on a spider web.' });
    await row(pending.id, 'queued').waitFor();

    await page.getByTestId('advance-until-resolved').click();
    await row(failed.id, 'failed').getByTestId('generation-error').getByText(/render_failed/).waitFor();
    await row(flagged.id, 'succeeded').getByText('low_contrast').waitFor();
    await row(pending.id, 'succeeded').waitFor();
    await page.getByTestId('in-flight').getByText(/All resolved/).waitFor();

    await row(failed.id).getByTestId('generation-open').click();
    await page.getByTestId('detail-error').getByText(/render_failed/).waitFor();
    await page.screenshot({ path: join(ARTIFACTS, 'dashboard-flags.png'), fullPage: true });
    expect(pageErrors).toEqual([]);
  });

  it('switches the scenario, which drops all state and reloads the page', async () => {
    failureScreenshot('dashboard-reset-failure.png');
    await page.getByTestId('scenario-select').selectOption('default');
    await page.getByTestId('scenario-switch').click();
    await page.getByTestId('scenario-name').getByText('default', { exact: true }).waitFor();
    await page.getByTestId('generations-empty').waitFor();
    expect(await page.getByTestId('generation-row').count()).toBe(0);
    expect(sim.core.scenario.name).toBe('default');

    // Live again after the reset: a new generation appears.
    const video = await createVideo({ prompt: 'A hot air balloon rising over a desert canyon.' });
    await row(video.id, 'queued').waitFor();
    expect(pageErrors).toEqual([]);
  });
});
