/**
 * The dashboard at /_sim/, end to end in headless Chromium: Debian's `chromium` package driven by
 * playwright-core (never a browser download). Screenshots go to artifacts/browser/ (a CI artifact).
 */
import { mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { controlGenerations } from '../../src/core/generations/generationControl.js';
import { createSimulator } from '../../src/index.js';
import { call, createVideoAt, queueFaultAt } from '../helpers.js';
import { ARTIFACTS, LIVENESS, failureScreenshot as screenshotOnFailure, launchChromium, openGeneration } from './chromium.js';

const KEY = 'sk_test_browser';
/** A generation id no test creates. */
const GONE = 'vid_000000000000000000000000';
/**
 * 404s that are expected: answers the page handles (a report this simulator may not make, a link to
 * a generation it does not have) and the icon Chromium asks for when it shows an image by itself.
 */
const EXPECTED_404 = ['/_sim/report', `/_sim/generations/${GONE}`, '/favicon.ico'];

const sim = createSimulator({ scenario: 'fast', clock: 'manual' });
let url: string;
let profile: string;
let context: BrowserContext | undefined;
let page: Page;
const pageErrors: string[] = [];
const controlRequests: string[] = [];
const resetRequests: string[] = [];

beforeAll(async () => {
  mkdirSync(ARTIFACTS, { recursive: true });
  for (const name of readdirSync(ARTIFACTS)) if (name.endsWith('-failure.png')) rmSync(join(ARTIFACTS, name));
  url = await sim.listen(0);
  profile = mkdtempSync(join(tmpdir(), 'sim-dashboard-chromium-'));
  context = await launchChromium(profile, {
    viewport: { width: 1440, height: 960 },
  });
  page = context.pages()[0] ?? (await context.newPage());
  page.setDefaultTimeout(LIVENESS);
  page.on('pageerror', (error) => pageErrors.push(`pageerror: ${error.stack ?? error.message}`));
  page.on('console', (message) => {
    if (message.type() !== 'error') return;
    // Chromium logs every 404 answer; those the page asks for knowingly (and handles) are fine.
    const at = message.location().url;
    if (/status of 404/.test(message.text()) && EXPECTED_404.some((path) => new URL(at, url).pathname === path)) return;
    pageErrors.push(`console: ${message.text()} (${at})`);
  });
  page.on('request', (request) => {
    const path = new URL(request.url()).pathname;
    if (path.startsWith('/_sim/generations')) controlRequests.push(request.url());
    if (path === '/_sim/reset') resetRequests.push(request.postData() ?? '');
  });
});

afterAll(async () => {
  await context?.close();
  await sim.close();
  if (profile) rmSync(profile, { recursive: true, force: true });
});

const failureScreenshot = (name: string): void => screenshotOnFailure(() => page, name);

async function post(path: string, body: Record<string, unknown>): Promise<unknown> {
  const answer = await call(url, 'POST', path, { body });
  expect(answer.status).toBe(200);
  // Parsed here, not `answer.json`: an answer that is not JSON fails.
  return JSON.parse(answer.text) as unknown;
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

    const video = (await createVideoAt(url, { prompt: 'A paper boat drifting down a rain-soaked gutter, close-up, golden hour.' }, KEY)).json;
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
    const fault = (outcome: Record<string, unknown>) => queueFaultAt(url, { path: '/v1/videos', method: 'POST', outcome, api_key: 'sk_test_flags' });
    await fault({ fail_stage: 'render' });
    const failed = (await createVideoAt(url, { prompt: 'A drone shot over a foggy pine forest at sunrise.' }, 'sk_test_flags')).json;
    await fault({ flags: [{ code: 'low_contrast', severity: 'warning', message: 'The output has low contrast.' }] });
    const flagged = (await createVideoAt(url, { prompt: 'A neon-lit alley in the rain, slow dolly forward.', resolution: '720p' }, 'sk_test_flags')).json;
    const pending = (await createVideoAt(url, { prompt: 'Macro shot of dew drops on a spider web.' }, KEY)).json;
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

  it('shows every request id of the journal whole, so the requests of one account are told apart', async () => {
    failureScreenshot('dashboard-journal-failure.png');
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const response = await fetch(`${url}/v1/videos?limit=1`, { headers: { Authorization: `Bearer ${KEY}` } });
      expect(response.status).toBe(200);
      ids.push(response.headers.get('x-request-id') as string);
    }
    expect(new Set(ids).size).toBe(3);
    const cells = page.getByTestId('journal-request-id');
    await cells.getByText(ids[2] as string, { exact: true }).waitFor();
    const shownIds = await cells.allTextContents();
    for (const id of ids) expect(shownIds).toContain(id);
    expect(new Set(shownIds).size).toBe(shownIds.length);
    expect(pageErrors).toEqual([]);
  });

  it("filtered to an account whose clock was advanced on its own, shows that account's time", async () => {
    failureScreenshot('dashboard-account-clock-failure.png');
    const key = 'sk_test_ahead';
    const video = (await createVideoAt(url, { prompt: 'A lighthouse beam sweeping over a stormy sea.' }, key)).json;
    await post('/_sim/clock/advance', { seconds: 600, api_key: key });
    const accountNow = sim.clock.state(key).now;
    expect(accountNow).not.toBe(sim.clock.state().now);

    await page.getByTestId('filter-account').fill(key);
    await page.getByTestId('filter-account').press('Enter');
    await row(video.id, 'succeeded').waitFor();
    await page.getByTestId('account-clock-now').getByText(shown(accountNow), { exact: true }).waitFor();
    expect(await page.getByTestId('account-clock').textContent()).toBe(`Clock of ${key}: ${shown(accountNow)} (10 min 0 s ahead of the global clock)`);
    // The global clock stays where it is; the completion is in the account's past, not in the future.
    expect(await page.getByTestId('clock-now').textContent()).toBe(shown(sim.clock.state().now));
    const completed = (await (await fetch(`${url}/v1/videos/${video.id}`, { headers: { Authorization: `Bearer ${key}` } })).json()) as { completed_at: string };
    expect(Date.parse(completed.completed_at)).toBeLessThanOrEqual(Date.parse(accountNow));

    // Without the filter, the account's clock is no longer shown.
    await page.locator('#filter-clear').click();
    await page.getByTestId('account-clock').waitFor({ state: 'hidden' });
    expect(pageErrors).toEqual([]);
  });

  it("filtered to an account, shows its client report, and hides the panel when the simulator answers 404", async () => {
    failureScreenshot('dashboard-report-failure.png');
    const key = 'sk_test_report';
    await createVideoAt(url, { prompt: 'A cat watching snow fall through a window.' }, key);
    const report = {
      account: key,
      requests: 7,
      coverage: { endpoints: { 'POST /v1/videos': 3, 'GET /v1/videos/{id}': 4 }, statuses: { '200': 5, '429': 2 } },
      findings: [
        {
          code: 'retry_too_soon',
          severity: 'error',
          count: 2,
          message: "A request was repeated after a 429 before that answer's Retry-After had passed.",
          examples: ['req_0a1b2c3d_000004', 'req_0a1b2c3d_000006'],
        },
        { code: 'poll_too_fast', severity: 'warning', count: 1, message: 'Two retrieves less than 2 seconds apart.', examples: ['req_0a1b2c3d_000005'] },
      ],
    };
    const asked: string[] = [];
    await page.route('**/_sim/report?*', (route) => {
      asked.push(route.request().url());
      return route.fulfill({ json: report });
    });
    try {
      await page.goto(`${url}/_sim/`);
      await page.getByTestId('filter-account').fill(key);
      await page.getByTestId('filter-account').press('Enter');
      const panel = page.getByTestId('report');
      await panel.waitFor();
      expect(new URL(asked[0] as string).searchParams.get('api_key')).toBe(key);
      expect(await page.getByTestId('report-summary').textContent()).toBe(`${key} · 7 requests · 2 findings (1 error, 1 warning)`);
      const findings = page.getByTestId('report-finding');
      expect(await findings.count()).toBe(2);
      const first = findings.first();
      expect(await first.getAttribute('data-code')).toBe('retry_too_soon');
      expect(await first.getAttribute('data-severity')).toBe('error');
      expect(await first.textContent()).toContain("before that answer's Retry-After had passed.");
      expect(await first.textContent()).toContain('req_0a1b2c3d_000006');
      expect(await page.getByTestId('report-endpoints').textContent()).toBe('POST /v1/videos3GET /v1/videos/{id}4');
      expect(await page.getByTestId('report-statuses').textContent()).toBe('20054292');
      await page.screenshot({ path: join(ARTIFACTS, 'dashboard-report.png'), fullPage: true });

      // A simulator without the report (or with nothing to report): the panel goes, with no error.
      await page.unroute('**/_sim/report?*');
      await page.route('**/_sim/report?*', (route) =>
        route.fulfill({
          status: 404,
          json: { error: { type: 'invalid_request_error', code: 'resource_not_found', message: 'No requests of this account.', param: 'api_key' } },
        }),
      );
      await page.getByRole('button', { name: 'Apply' }).click();
      await panel.waitFor({ state: 'hidden' });
      expect(await page.getByTestId('toast').isVisible()).toBe(false);
    } finally {
      await page.unroute('**/_sim/report?*');
    }
    await page.locator('#filter-clear').click();
    expect(pageErrors).toEqual([]);
  });

  it('says so when a #vid_… link names a generation the simulator does not have', async () => {
    failureScreenshot('dashboard-missing-failure.png');
    const gone = GONE;
    await page.goto('about:blank');
    await page.goto(`${url}/_sim/#${gone}`);
    const missing = page.getByTestId('detail-missing');
    await missing.waitFor();
    expect(await missing.textContent()).toContain(`No such generation: ${gone}`);
    expect(await missing.isVisible()).toBe(true);
    await page.screenshot({ path: join(ARTIFACTS, 'dashboard-missing.png') });

    // A link to one that exists, followed in the same page, shows it.
    const video = (await createVideoAt(url, { prompt: 'Leaves drifting across a still pond.' }, KEY)).json;
    await openGeneration(page, video.id);
    expect(await missing.count()).toBe(0);
    expect(pageErrors).toEqual([]);
  });

  it("lists the scenarios and the pipeline's stages the server answers", async () => {
    failureScreenshot('dashboard-server-lists-failure.png');
    await page.route('**/_sim/scenarios', async (route) => {
      const real = (await (await route.fetch()).json()) as { object: string; data: { name: string; purpose: string }[] };
      await route.fulfill({ json: { ...real, data: [...real.data, { name: 'nightly', purpose: 'A scenario only the server knows of.' }] } });
    });
    try {
      await page.goto(`${url}/_sim/`);
      const select = page.getByTestId('scenario-select');
      await select.locator('option[value="nightly"]').waitFor({ state: 'attached' });
      const options = await select.locator('option').evaluateAll((list) => list.map((o) => [(o as HTMLOptionElement).value, o.getAttribute('title')]));
      expect(options).toEqual([
        ['compliance', expect.any(String)],
        ['default', 'the realistic happy path; most generations resolve in 1-3 minutes, nothing is injected.'],
        ['fast', 'the happy path at CI speed; every generation resolves within 10 virtual seconds, nothing injected.'],
        ['flaky', expect.any(String)],
        ['low-balance', expect.any(String)],
        ['rate-limited', expect.any(String)],
        ['slow', expect.any(String)],
        ['unreliable-network', expect.any(String)],
        ['nightly', 'A scenario only the server knows of.'],
      ]);
      await select.selectOption('nightly');
      expect(await page.getByTestId('scenario-purpose').textContent()).toBe('nightly: A scenario only the server knows of.');
      await select.selectOption('fast');

      // The stage table and the timeline legend follow GET /_sim/pipeline.
      const stages = await page.getByTestId('scenario-stages').locator('tbody tr').evaluateAll((rows) =>
        rows.map((r) => [...r.querySelectorAll('td')].slice(0, 2).map((td) => td.textContent)),
      );
      expect(stages).toEqual([
        ['queue', 'queued'],
        ['keyframe', 'processing'],
        ['routing', 'processing'],
        ['render', 'processing'],
        ['verification', 'verifying'],
      ]);
      expect(await page.getByTestId('legend').textContent()).toBe('queue keyframe routing render verification ');
    } finally {
      await page.unroute('**/_sim/scenarios');
    }
    expect(pageErrors).toEqual([]);
  });

  it('asks before a switch or a reset, and drops nothing when the answer is no', async () => {
    failureScreenshot('dashboard-confirm-failure.png');
    const stored = () => controlGenerations(sim.core, { limit: 1000 }).data.length;
    const before = stored();
    expect(before).toBeGreaterThan(0);
    const dialogs: string[] = [];
    page.on('dialog', (dialog) => {
      dialogs.push(`${dialog.type()}: ${dialog.message()}`);
      void dialog.dismiss();
    });
    try {
      await page.getByTestId('scenario-reset').click();
      await page.getByTestId('scenario-select').selectOption('default');
      await page.getByTestId('scenario-switch').click();
      await page.evaluate(() => undefined); // the click handlers have run
    } finally {
      page.removeAllListeners('dialog');
    }
    expect(dialogs).toHaveLength(2);
    expect(dialogs[0]).toMatch(/^confirm: Reset the simulator and reload scenario "fast"\?\n\nThis drops all state of this simulator for every client using it: /);
    expect(dialogs[1]).toMatch(/^confirm: Switch the simulator to scenario "default"\?\n\nThis drops all state of this simulator for every client using it: /);
    expect(resetRequests).toEqual([]);
    expect(stored()).toBe(before);
    expect(sim.core.scenario.name).toBe('fast');
    expect(await page.getByTestId('scenario-name').textContent()).toBe('fast');
    expect(pageErrors).toEqual([]);
  });

  it('switches the scenario once confirmed, which drops all state and reloads the page', async () => {
    failureScreenshot('dashboard-reset-failure.png');
    await page.getByTestId('scenario-select').selectOption('default');
    page.once('dialog', (dialog) => void dialog.accept());
    await page.getByTestId('scenario-switch').click();
    await page.getByTestId('scenario-name').getByText('default', { exact: true }).waitFor();
    await page.getByTestId('generations-empty').waitFor();
    expect(await page.getByTestId('generation-row').count()).toBe(0);
    expect(sim.core.scenario.name).toBe('default');

    // Live again after the reset: a new generation appears.
    const video = (await createVideoAt(url, { prompt: 'A hot air balloon rising over a desert canyon.' }, KEY)).json;
    await row(video.id, 'queued').waitFor();
    expect(pageErrors).toEqual([]);
  });

  it('after a reset with a new prompt, shows the new thumbnail of the same video id, not the one it showed before', async () => {
    failureScreenshot('dashboard-media-failure.png');
    const key = 'sk_test_media';
    sim.reset({ scenario: 'fast' }); // elsewhere: the page starts over by itself
    await page.getByTestId('scenario-name').getByText('fast', { exact: true }).waitFor();
    await page.getByTestId('generations-empty').waitFor();

    const showThumbnail = async (prompt: string) => {
      const video = (await createVideoAt(url, { prompt }, key)).json;
      await row(video.id, 'queued').waitFor();
      await page.getByTestId('advance-10s').click();
      await row(video.id, 'succeeded').waitFor();
      await page.waitForFunction((id) => {
        const img = document.querySelector<HTMLImageElement>(`[data-id="${id}"] img[data-testid="generation-thumbnail"]`);
        return img !== null && img.complete && img.naturalWidth > 0;
      }, video.id);
      const thumbnailUrl = (await page.locator(`[data-id="${video.id}"] img[data-testid="generation-thumbnail"]`).getAttribute('src')) as string;
      const png = Buffer.from(await (await fetch(thumbnailUrl)).arrayBuffer());
      const shownPixels = await pixels({ selector: `[data-id="${video.id}"] img[data-testid="generation-thumbnail"]` });
      return { id: video.id, path: new URL(thumbnailUrl).pathname, png, shownPixels };
    };

    const before = await showThumbnail('A red kite over a green hill, wide shot.');
    expect(before.shownPixels).toBe(await pixels({ png: before.png }));

    page.once('dialog', (dialog) => void dialog.accept());
    await page.getByTestId('scenario-reset').click();
    await page.getByTestId('generations-empty').waitFor();

    const after = await showThumbnail('A blue fishing boat on a grey sea, close-up.');
    expect(after.id).toBe(before.id); // same seed, same id
    expect(after.path).toBe(before.path); // the same media URL on the server
    expect(after.png.equals(before.png)).toBe(false);
    expect(after.shownPixels).not.toBe(before.shownPixels);
    expect(after.shownPixels).toBe(await pixels({ png: after.png }));
    expect(pageErrors).toEqual([]);
  });

  it("shows a video's keyframe once its keyframe stage has ended, in its row and its detail, from the image's media URL", async () => {
    failureScreenshot('dashboard-keyframe-failure.png');
    const key = 'sk_test_keyframe';
    const created = await fetch(`${url}/v1/images`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ prompt: 'A lighthouse on a cliff at dawn, soft mist.' }),
    });
    expect(created.status).toBe(200);
    const image = (await created.json()) as { id: string; url: string };
    const video = (await createVideoAt(url, { prompt: 'The lighthouse beam sweeping through the mist.', keyframe_id: image.id }, key)).json;
    await post(`/_sim/generations/${video.id}/advance`, {}); // the queue
    const moved = (await post(`/_sim/generations/${video.id}/advance`, {})) as { keyframe: { id: string } | null }; // the keyframe stage
    expect(moved.keyframe?.id).toBe(image.id);

    const loaded = (selector: string) =>
      page.waitForFunction((s) => {
        const img = document.querySelector<HTMLImageElement>(s);
        return img !== null && img.complete && img.naturalWidth > 0;
      }, selector);
    const shownAt = async (selector: string) => {
      const shown = new URL((await page.locator(selector).getAttribute('src')) as string);
      return `${shown.origin}${shown.pathname}`;
    };
    const inRow = `[data-id="${video.id}"] img[data-testid="generation-keyframe"]`;
    await loaded(inRow);
    expect(await shownAt(inRow)).toBe(image.url);
    await row(video.id).getByTestId('generation-open').click();
    await page.getByTestId('detail-id').getByText(video.id, { exact: true }).waitFor();
    await loaded('img[data-testid="detail-keyframe"]');
    expect(await shownAt('img[data-testid="detail-keyframe"]')).toBe(image.url);
    expect(pageErrors).toEqual([]);
  });

  it('serves media a browser revalidates: opened again after a reset, a thumbnail URL shows the new image, not a cached copy', async () => {
    failureScreenshot('media-revalidation-failure.png');
    const key = 'sk_test_plain_page';
    const thumbnail = async (prompt: string) => {
      const video = (await createVideoAt(url, { prompt }, key)).json;
      sim.clock.advance(10);
      const shown = (await (await fetch(`${url}/v1/videos/${video.id}`, { headers: { Authorization: `Bearer ${key}` } })).json()) as {
        status: string;
        output: { thumbnail_url: string };
      };
      expect(shown.status).toBe('succeeded');
      const png = Buffer.from(await (await fetch(shown.output.thumbnail_url)).arrayBuffer());
      return { url: shown.output.thumbnail_url, png };
    };
    const openImage = async (address: string) => {
      await page.goto('about:blank');
      const response = await page.goto(address);
      expect(response?.headers()['cache-control']).toBe('no-cache');
      return pixels({ selector: 'img' });
    };

    const before = await thumbnail('A red kite over a green hill, wide shot.');
    expect(await openImage(before.url)).toBe(await pixels({ png: before.png }));

    sim.reset();
    const after = await thumbnail('A blue fishing boat on a grey sea, close-up.');
    expect(after.url).toBe(before.url); // same seed, same id, same URL
    expect(after.png.equals(before.png)).toBe(false);
    expect(await openImage(after.url)).toBe(await pixels({ png: after.png }));
    expect(pageErrors).toEqual([]);
  });
});

/**
 * A digest of the pixels of an image drawn at its natural size: the `<img>` the page shows at
 * `selector`, or PNG bytes decoded by the page from a data: URL (no cache involved).
 */
function pixels(source: { selector: string } | { png: Buffer }): Promise<string> {
  const arg = 'png' in source ? { selector: null, base64: source.png.toString('base64') } : { selector: source.selector, base64: null };
  return page.evaluate(async ({ selector, base64 }) => {
    let img: HTMLImageElement | null;
    if (base64 !== null) {
      img = new Image();
      img.src = `data:image/png;base64,${base64}`;
    } else img = document.querySelector<HTMLImageElement>(selector);
    if (!img) throw new Error(`no image at ${selector}`);
    await img.decode();
    const canvas = document.createElement('canvas');
    [canvas.width, canvas.height] = [img.naturalWidth, img.naturalHeight];
    const context = canvas.getContext('2d') as CanvasRenderingContext2D;
    context.drawImage(img, 0, 0);
    const digest = await crypto.subtle.digest('SHA-256', context.getImageData(0, 0, canvas.width, canvas.height).data);
    return `${canvas.width}x${canvas.height}:${[...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, '0')).join('')}`;
  }, arg);
}
