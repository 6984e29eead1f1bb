/**
 * What the dashboard tells its user about what they just did, in headless Chromium: each live-control
 * action is confirmed in words; the message covers no panel (the selected generation's stages stay
 * in view); stages ended by control actions on a clock that did not move say so instead of showing
 * empty bars; and selecting a generation fills in the control room's account.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Locator, Page } from 'playwright-core';
import { createSimulator } from '../../src/index.js';
import { createVideoAt } from '../helpers.js';
import { ARTIFACTS, openBrowser, type OpenBrowser, failureScreenshot as screenshotOnFailure, openGeneration } from './chromium.js';

const START = '2026-01-01 00:00:00.000';

const sim = createSimulator({ scenario: 'fast', clock: 'manual' });
let url: string;
let browser: OpenBrowser;
let page: Page;

beforeAll(async () => {
  url = await sim.listen(0);
  browser = await openBrowser();
  page = browser.page;
  await page.goto(`${url}/_sim/`);
  await page.getByTestId('scenario-name').getByText('fast', { exact: true }).waitFor();
});

afterAll(async () => {
  await browser?.close();
  await sim.close();
});

const failureScreenshot = (name: string): void => screenshotOnFailure(() => page, name);


/** Opens a generation in the detail panel through its `#id` link. */
const open = (id: string): Promise<void> => openGeneration(page, id);

/** The stage a stored generation is in, as the dashboard names it (`output_verification` → `verification`). */
function stageNow(id: string): string {
  const stage = sim.generations.get(id).stages.at(-1)!.stage;
  return stage === 'output_verification' ? 'verification' : stage.replaceAll('_', ' ');
}

const toast = () => page.getByTestId('toast');

/** Waits for the toast to say exactly `text`. */
async function toastSays(text: string): Promise<void> {
  await toast().getByText(text, { exact: true }).waitFor();
}

/** Whether two elements' boxes on the screen overlap. */
async function overlap(a: Locator, b: Locator): Promise<boolean> {
  const [x, y] = [await a.boundingBox(), await b.boundingBox()];
  if (!x || !y) return false;
  return x.x < y.x + y.width && y.x < x.x + x.width && x.y < y.y + y.height && y.y < x.y + x.height;
}

describe('live control of the selected generation', () => {
  it('confirms Advance, Finish, Fail and Cancel in words, beside the status badge', async () => {
    failureScreenshot('dashboard-feedback-actions-failure.png');
    const { id } = (await createVideoAt(url, { prompt: 'A kite over a windy beach.' }, 'sk_test_words')).json;
    await open(id);
    await page.getByTestId('action-advance').click();
    await toastSays(`Advanced ${id} to ${stageNow(id)}.`);
    expect(await toast().getAttribute('data-kind')).toBe('info');

    const failing = (await createVideoAt(url, { prompt: 'A lantern festival over a river.' }, 'sk_test_words')).json.id;
    await open(failing);
    await page.getByTestId('action-advance').click();
    await toastSays(`Advanced ${failing} to ${stageNow(failing)}.`);
    await page.getByTestId('action-fail-code').selectOption('upstream_timeout');
    const stage = stageNow(failing);
    await page.getByTestId('action-fail').click();
    await toastSays(`Failed ${failing} at ${stage} with upstream_timeout.`);

    await open(id);
    await page.getByTestId('action-finish').click();
    await toastSays(`Finished ${id}: succeeded.`);

    const canceled = (await createVideoAt(url, { prompt: 'Fog rolling over a harbour at dawn.' }, 'sk_test_words')).json.id;
    await open(canceled);
    await page.getByTestId('action-cancel').click();
    await toastSays(`Canceled ${canceled}.`);
    expect(browser.errors).toEqual([]);
  });

  it("puts its message where it covers no panel: the selected generation's stages stay in view", async () => {
    failureScreenshot('dashboard-feedback-toast-failure.png');
    const { id } = (await createVideoAt(url, { prompt: 'A paper boat on a river.' }, 'sk_test_toast')).json;
    await open(id);
    await page.getByTestId('action-advance').click();
    await toastSays(`Advanced ${id} to ${stageNow(id)}.`);
    await page.evaluate(() => window.scrollTo(0, 0));
    const stages = page.getByTestId('detail-stages');
    await stages.scrollIntoViewIfNeeded();
    expect(await stages.isVisible()).toBe(true);
    expect(await overlap(toast(), stages), 'the toast covers the stage table').toBe(false);
    expect(await overlap(toast(), page.locator('.detail')), 'the toast covers the selected generation').toBe(false);
    await page.evaluate(() => window.scrollTo(0, 0));
    for (const panel of await page.locator('.panel').all()) {
      if (!(await panel.isVisible())) continue;
      expect(await overlap(toast(), panel), `the toast covers ${await panel.getAttribute('class')}`).toBe(false);
    }
    await page.screenshot({ path: join(ARTIFACTS, 'dashboard-feedback.png') });
  });
});

describe('stages ended by control actions', () => {
  it('says when and by what stages were ended, on a clock that did not move', async () => {
    failureScreenshot('dashboard-feedback-note-failure.png');
    const { id } = (await createVideoAt(url, { prompt: 'A snail crossing a mossy log, macro.' }, 'sk_test_instant')).json;
    await open(id);
    expect(await page.getByTestId('stages-note').count()).toBe(0); // queued: nothing ended yet
    await page.getByTestId('action-advance').click();
    const first = stageNow(id);
    await toastSays(`Advanced ${id} to ${first}.`);
    await page.getByTestId('action-advance').click();
    await toastSays(`Advanced ${id} to ${stageNow(id)}.`);
    await page.getByTestId('stages-note').getByText(
      `Ended by control actions at ${START}: queue, ${first}. No virtual time passed in them, so their bars have no length.`,
      { exact: true },
    ).waitFor();
  });

  it('says nothing of stages that took time on the clock', async () => {
    failureScreenshot('dashboard-feedback-timed-failure.png');
    const { id } = (await createVideoAt(url, { prompt: 'Leaves drifting across a still pond.' }, 'sk_test_timed')).json;
    sim.clock.advance(30, 'sk_test_timed'); // fast: every stage ends within 10 s, by the clock
    expect(sim.generations.get(id).status).toBe('succeeded');
    await open(id);
    await page.getByTestId('detail-status').getByText('succeeded', { exact: true }).waitFor();
    expect(await page.getByTestId('stages-note').count()).toBe(0);
  });
});

describe("the control room's account", () => {
  it('is filled in from the selected generation, unless another account was typed there', async () => {
    failureScreenshot('dashboard-feedback-account-failure.png');
    await page.goto('about:blank');
    await page.goto(`${url}/_sim/`);
    await page.getByTestId('scenario-name').getByText('fast', { exact: true }).waitFor();
    const account = page.getByTestId('tools-account');
    expect(await account.inputValue()).toBe('');

    const a = (await createVideoAt(url, { prompt: 'A red bicycle leaning on a wall.' }, 'sk_test_first')).json.id;
    const b = (await createVideoAt(url, { prompt: 'A glass of water on a windowsill.' }, 'sk_test_second')).json.id;
    await open(a);
    await expect.poll(() => account.inputValue()).toBe('sk_test_first');
    await page.getByTestId('faults-empty').getByText('Nothing queued for sk_test_first.', { exact: true }).waitFor();
    expect(await page.getByTestId('create-key').inputValue()).toBe('sk_test_first');

    // Selected from its row: the field follows the selection.
    await page.locator(`[data-testid="generation-row"][data-id="${b}"]`).getByTestId('generation-open').click();
    await page.getByTestId('detail-id').getByText(b, { exact: true }).waitFor();
    await expect.poll(() => account.inputValue()).toBe('sk_test_second');

    // An account typed by the user stays.
    await account.fill('sk_test_typed');
    await open(a);
    expect(await account.inputValue()).toBe('sk_test_typed');
    expect(browser.errors).toEqual([]);
  });
});
