/**
 * The dashboard as a control room (README, "Produce every state"), end to end in headless
 * Chromium: every control the page offers is driven from the page, and its effect is checked on the
 * page and on the simulator.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { NETWORK, NETWORK_KINDS } from '../../src/core/faults/network.js';
import { createSimulator } from '../../src/index.js';
import { createVideoAt } from '../helpers.js';
import { openBrowser, type OpenBrowser, failureScreenshot as screenshotOnFailure, openGeneration } from './chromium.js';

const KEY = 'sk_test_room';

const sim = createSimulator({ scenario: 'fast', clock: 'manual' });
let url: string;
let browser: OpenBrowser;
let page: Page;

beforeAll(async () => {
  url = await sim.listen(0);
  // Error answers the tests cause on purpose (a queued 429 and 500, a rejected create).
  browser = await openBrowser([
    [429, /^\/v1\//],
    [500, /^\/v1\//],
    [422, /^\/v1\//],
    // A request pattern the simulator refuses (the journal's filter).
    [400, /^\/_sim\/(verify|requests\/wait)$/],
  ]);
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

const detailStatus = (status: string) => page.getByTestId('detail-status').getByText(status, { exact: true });
const stored = (id: string) => sim.generations.get(id);

describe('the selected generation', () => {
  it('advances one stage from the page, leaving the clock where it was', async () => {
    failureScreenshot('control-room-advance-failure.png');
    const { id } = (await createVideoAt(url, { prompt: 'A kite over a windy beach.' }, KEY)).json;
    await open(id);
    await page.getByTestId('action-advance').click();
    await detailStatus('processing').waitFor();
    expect(stored(id).status).toBe('processing');
    expect(stored(id).stages[1]?.left_at).toBe('2026-01-01T00:00:00.000Z');
    expect(sim.clock.get().now).toBe('2026-01-01T00:00:00.000Z');
  });

  it('fails it from the page with a code of its stage, and shows its error', async () => {
    failureScreenshot('control-room-fail-failure.png');
    const { id } = (await createVideoAt(url, { prompt: 'A lantern festival over a river.' }, KEY)).json;
    await open(id);
    // Queued: its stage cannot fail.
    expect(await page.getByTestId('action-fail').isDisabled()).toBe(true);
    await page.getByTestId('action-advance').click();
    await detailStatus('processing').waitFor();
    const codes = await page.getByTestId('action-fail-code').locator('option').evaluateAll((options) => options.map((o) => (o as HTMLOptionElement).value));
    const stage = stored(id).stages.at(-1)?.stage as string;
    expect(codes).toEqual([`${stage}_failed`, 'upstream_timeout', 'internal_error']);
    await page.getByTestId('action-fail-code').selectOption('upstream_timeout');
    await page.getByTestId('action-fail').click();
    await detailStatus('failed').waitFor();
    await page.getByTestId('detail-error').getByText('api_error · upstream_timeout').waitFor();
    expect(stored(id).error?.code).toBe('upstream_timeout');
    await page.locator(`[data-testid="generation-row"][data-id="${id}"][data-status="failed"]`).getByTestId('generation-error').getByText('upstream_timeout').waitFor();
    await page.getByTestId('action-hint').getByText('Resolved as failed: nothing left to move.').waitFor();
  });

  it('rejects the output of a verifying generation from the page', async () => {
    failureScreenshot('control-room-reject-failure.png');
    const { id } = (await createVideoAt(url, { prompt: 'A glass of water on a windowsill.' }, KEY)).json;
    sim.generations.advance(id);
    while (stored(id).status !== 'verifying') sim.generations.advance(id);
    await open(id);
    expect(await page.getByTestId('action-cancel').isDisabled()).toBe(true);
    await page.getByTestId('action-fail').click();
    await detailStatus('failed').waitFor();
    await page.getByTestId('detail-error').getByText('compliance_error · output_rejected').waitFor();
    await page.getByTestId('detail-compliance').getByText('Output not verified').waitFor();
  });

  it('finishes it now from the page, to its drawn outcome', async () => {
    failureScreenshot('control-room-finish-failure.png');
    const { id } = (await createVideoAt(url, { prompt: 'A snail crossing a mossy log, macro.' }, KEY)).json;
    await open(id);
    await page.getByTestId('action-finish').click();
    await detailStatus('succeeded').waitFor();
    await page.getByTestId('detail-video').waitFor();
    expect(stored(id).completed_at).toBe(sim.clock.get().now);
  });

  it('cancels it from the page', async () => {
    failureScreenshot('control-room-cancel-failure.png');
    const { id } = (await createVideoAt(url, { prompt: 'Fog rolling over a harbour at dawn.' }, KEY)).json;
    await open(id);
    await page.getByTestId('action-cancel').click();
    await detailStatus('canceled').waitFor();
    expect(stored(id).status).toBe('canceled');
    expect(browser.errors).toEqual([]);
  });
});

describe("an account's next requests", () => {
  it('queues a 429 for its creates; the create form then gets it, and the journal shows its code', async () => {
    failureScreenshot('control-room-429-failure.png');
    await page.getByTestId('tools-account').fill(KEY);
    await page.getByTestId('fault-kind').selectOption('429');
    await page.getByTestId('fault-target').selectOption('POST /v1/videos');
    await page.getByTestId('fault-queue').click();
    await page.getByTestId('fault-row').getByText('429 on POST /v1/videos ×1').waitFor();
    expect(sim.faults.list().faults).toEqual([{ path: '/v1/videos', method: 'POST', status: 429, times_left: 1, api_key: KEY }]);

    await page.getByTestId('create-key').fill(KEY);
    await page.getByTestId('create-kind').selectOption('video');
    await page.getByTestId('create-prompt').fill('A red bicycle leaning on a wall.');
    await page.getByTestId('create-submit').click();
    await page.getByTestId('create-result').getByText(/^429 · rate_limit_error · rate_limit_exceeded: /).waitFor();
    await page.getByTestId('journal-error-code').getByText('rate_limit_exceeded', { exact: true }).waitFor();
    await page.getByTestId('faults-empty').getByText(`Nothing queued for ${KEY}.`).waitFor();
    expect(sim.faults.list().faults).toEqual([]);
  });

  it('queues a 500 and latency for its polls', async () => {
    failureScreenshot('control-room-500-failure.png');
    await page.getByTestId('tools-account').fill(KEY);
    await page.getByTestId('fault-kind').selectOption('500');
    await page.getByTestId('fault-target').selectOption('GET /v1/videos/*');
    await page.getByTestId('fault-times').fill('2');
    await page.getByTestId('fault-queue').click();
    await page.getByTestId('fault-kind').selectOption('latency');
    await page.getByTestId('fault-latency').fill('250');
    await page.getByTestId('fault-times').fill('1');
    await page.getByTestId('fault-queue').click();
    await page.getByTestId('fault-row').nth(1).getByText('250 ms latency on GET /v1/videos/* ×1').waitFor();
    expect(sim.faults.list().faults).toEqual([
      { path: '/v1/videos/*', method: 'GET', status: 500, times_left: 2, api_key: KEY },
      { path: '/v1/videos/*', method: 'GET', latency_ms: 250, times_left: 1, api_key: KEY },
    ]);
    const poll = await fetch(`${url}/v1/videos/vid_any`, { headers: { Authorization: `Bearer ${KEY}` } });
    expect(poll.status).toBe(500);
    await page.getByTestId('faults-clear').click();
    await page.getByTestId('faults-empty').getByText(`Nothing queued for ${KEY}.`).waitFor();
    expect(sim.faults.list()).toEqual({ queued: 0, faults: [] });
  });

  it('queues a connection reset after the create takes effect; the journal panel shows the lost answer as "reset, applied"', async () => {
    failureScreenshot('control-room-network-failure.png');
    await page.getByTestId('tools-account').fill(KEY);
    await page.getByTestId('fault-kind').selectOption('network:reset');
    await page.getByTestId('fault-phase').selectOption('after');
    await page.getByTestId('fault-target').selectOption('POST /v1/videos');
    await page.getByTestId('fault-queue').click();
    await page.getByTestId('fault-row').getByText('reset, applied on POST /v1/videos ×1').waitFor();
    expect(sim.faults.list().faults).toEqual([{ path: '/v1/videos', method: 'POST', network: 'reset', phase: 'after', times_left: 1, api_key: KEY }]);

    // A client's create: its connection is reset, yet the video was created.
    const lost = await fetch(`${url}/v1/videos`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${KEY}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ model: 'video-3.2', prompt: 'A paper boat in a gutter stream.' }),
    }).then(
      () => 'answered',
      (e: { cause?: { code?: string } }) => e.cause?.code,
    );
    expect(lost).toBe('ECONNRESET');
    await page.getByTestId('journal-network').getByText('reset, applied', { exact: true }).waitFor();
    const row = page.getByTestId('journal-row').filter({ has: page.getByTestId('journal-network') });
    await row.getByText('no answer', { exact: true }).waitFor();
    expect(sim.generations.list({ apiKey: KEY }).data.some((g) => g.prompt === 'A paper boat in a gutter stream.')).toBe(true);
    expect(browser.errors).toEqual([]);
  });

  it('offers every kind of network fault the server lists (ui/addresses.js); one that delivers (part of) the answer happens after only', async () => {
    const options = await page.locator('#fault-network option').evaluateAll((els) => els.map((el) => [(el as HTMLOptionElement).value, el.textContent]));
    expect(options).toEqual(NETWORK_KINDS.map((kind) => [`network:${kind}`, NETWORK[kind].label]));
    for (const kind of NETWORK_KINDS) {
      await page.getByTestId('fault-kind').selectOption(`network:${kind}`);
      const before = page.getByTestId('fault-phase').locator('option[value="before"]');
      expect([kind, await before.isDisabled()]).toEqual([kind, !NETWORK[kind].phase.before]);
      if (!NETWORK[kind].phase.before) expect(await page.getByTestId('fault-phase').inputValue()).toBe('after');
    }
    expect(browser.errors).toEqual([]);
  });

  it("forces the next create's outcome: a render failure, seen once the clock moves", async () => {
    failureScreenshot('control-room-outcome-failure.png');
    await page.getByTestId('tools-account').fill(KEY);
    await page.getByTestId('outcome-kind').selectOption('fail_stage:render');
    await page.getByTestId('outcome-queue').click();
    await page.getByTestId('fault-row').getByText('outcome {"fail_stage":"render"} on POST /v1/videos ×1').waitFor();
    await page.getByTestId('create-key').fill(KEY);
    await page.getByTestId('create-prompt').fill('A paper plane over rooftops.');
    await page.getByTestId('create-submit').click();
    await page.getByTestId('create-result').getByText(/^200 · vid_\w+ \(queued\)$/).waitFor();
    const id = (await page.getByTestId('create-result').textContent())?.match(/vid_\w+/)?.[0] as string;
    await page.getByTestId('detail-id').getByText(id, { exact: true }).waitFor();
    await page.getByTestId('advance-10s').click();
    await detailStatus('failed').waitFor();
    await page.getByTestId('detail-error').getByText('api_error · render_failed').waitFor();
  });

  it('forces each other outcome through POST /_sim/faults', async () => {
    failureScreenshot('control-room-outcomes-failure.png');
    await page.getByTestId('tools-account').fill('sk_test_outcomes');
    const kinds = ['fail_stage:keyframe', 'fail_stage:routing', 'claim_linking_rejected', 'output_rejected', 'flags'];
    for (const [i, kind] of kinds.entries()) {
      await page.getByTestId('outcome-kind').selectOption(kind);
      if (kind === 'flags') {
        await page.getByTestId('outcome-flag-code').fill('watermark_missing');
        await page.getByTestId('outcome-flag-severity').selectOption('block');
      }
      await page.getByTestId('outcome-queue').click();
      await page.getByTestId('fault-row').nth(i).waitFor();
    }
    expect(sim.faults.list().faults.map((f) => f.outcome)).toEqual([
      { fail_stage: 'keyframe' },
      { fail_stage: 'routing' },
      { claim_linking_rejected: true },
      { output_rejected: true },
      { flags: [{ code: 'watermark_missing', severity: 'block', message: 'Flag watermark_missing (forced from the dashboard).' }] },
    ]);
    sim.faults.clear('sk_test_outcomes');
  });
});

describe('the create form', () => {
  it('creates a keyframe image with the typed key: a real /v1 request, journaled as that key', async () => {
    failureScreenshot('control-room-image-failure.png');
    await page.getByTestId('create-key').fill('sk_test_images');
    await page.getByTestId('create-kind').selectOption('image');
    await page.getByTestId('create-prompt').fill('A lighthouse on a cliff, storm light.');
    await page.getByTestId('create-submit').click();
    await page.getByTestId('create-result').getByText(/^200 · img_\w+ \(ready\)$/).waitFor();
    const journal = (await (await fetch(`${url}/_sim/requests?api_key=sk_test_images`)).json()) as { data: { method: string; path: string; status: number }[] };
    expect(journal.data.map((e) => `${e.method} ${e.path} ${e.status}`)).toEqual(['POST /v1/images 200']);
    expect(browser.errors).toEqual([]);
  });
});

describe('prompt triggers in the create form', () => {
  it('lists the directives; a prompt with [sim:error=500] gets the 500, and the journal shows the trigger', async () => {
    failureScreenshot('control-room-trigger-failure.png');
    const help = page.getByTestId('create-triggers');
    for (const directive of ['[sim:fail=render]', '[sim:reject=claim_linking]', '[sim:flag=CODE]', '[sim:error=429]']) {
      await help.getByText(directive, { exact: true }).waitFor();
    }
    expect(await page.getByTestId('create-triggers-off').isHidden()).toBe(true);
    await page.getByTestId('create-key').fill(KEY);
    await page.getByTestId('create-kind').selectOption('video');
    await page.getByTestId('create-prompt').fill('A windmill at dusk [sim:error=500]');
    await page.getByTestId('create-submit').click();
    await page.getByTestId('create-result').getByText(/^500 · api_error · internal_error: /).waitFor();
    await page.getByTestId('journal-trigger').getByText('trigger: [sim:error=500]').first().waitFor();
    expect(browser.errors).toEqual([]);
  });
});

describe('the "Switch to" list', () => {
  /** Waits for the page's next poll of the clock to be answered. */
  const nextPoll = () => page.waitForResponse((response) => new URL(response.url()).pathname === '/_sim/health');

  it('keeps a scenario picked by keyboard while the page polls, and switches to it (Tab, then Enter)', async () => {
    failureScreenshot('control-room-switch-keys-failure.png');
    const select = page.getByTestId('scenario-select');
    await select.focus();
    await select.selectOption('slow'); // as the arrow keys would
    await page.keyboard.press('Tab');
    await nextPoll();
    await nextPoll();
    expect(await select.inputValue()).toBe('slow');
    const asked: string[] = [];
    page.once('dialog', (dialog) => {
      asked.push(dialog.message());
      void dialog.accept();
    });
    await page.keyboard.press('Enter');
    await page.getByTestId('scenario-name').getByText('slow', { exact: true }).waitFor();
    expect(asked[0]).toMatch(/^Switch the simulator to scenario "slow"\?/);
    expect(sim.core.scenario.name).toBe('slow');
  });

  it('keeps a scenario chosen with selectOption through polls, and a click switches to it', async () => {
    failureScreenshot('control-room-switch-click-failure.png');
    const select = page.getByTestId('scenario-select');
    await select.selectOption('flaky');
    await nextPoll();
    await nextPoll();
    expect(await select.inputValue()).toBe('flaky');
    page.once('dialog', (dialog) => void dialog.accept());
    await page.getByTestId('scenario-switch').click();
    await page.getByTestId('scenario-name').getByText('flaky', { exact: true }).waitFor();
    expect(sim.core.scenario.name).toBe('flaky');
    // After the switch the list shows the scenario in use.
    expect(await select.inputValue()).toBe('flaky');
    expect(browser.errors).toEqual([]);
  });
});

describe('the journal filtered by a request pattern', () => {
  it("shows only the requests it matches, and POST /_sim/verify's answer: the sentence and the closest entries, then verified", async () => {
    failureScreenshot('control-room-pattern-failure.png');
    const key = 'sk_test_room_pattern';
    const { id } = (await createVideoAt(url, { prompt: 'A paper lantern drifting up at dusk.' }, key)).json;
    await fetch(`${url}/v1/videos/${id}`, { headers: { Authorization: `Bearer ${key}` } });
    await page.getByTestId('journal-pattern').fill(`{"api_key":"${key}","path":"/v1/videos/*","seen":"succeeded"}`);
    await page.getByTestId('journal-pattern-apply').click();
    await page
      .getByTestId('journal-verify-message')
      .getByText(`Expected at least 1 request matching {"api_key":"${key}","path":"/v1/videos/*","seen":"succeeded"}; found 0.`, { exact: true })
      .waitFor();
    expect(await page.getByTestId('journal-closest-entry').first().textContent()).toMatch(/^#\d+ GET \/v1\/videos\/vid_\w+ \(sk_test_room_pattern\) -> 200, seen queued: differs in seen$/);
    expect(await page.getByTestId('journal-row').count()).toBe(0);
    // The app's next poll sees it succeeded: the journal shows that request alone, verified.
    sim.generations.finish(id, key);
    await fetch(`${url}/v1/videos/${id}`, { headers: { Authorization: `Bearer ${key}` } });
    await page.getByTestId('journal-verified').getByText('Verified: 1 request match.', { exact: true }).waitFor();
    await expect.poll(() => page.getByTestId('journal-row').count()).toBe(1);
    // A field the pattern cannot have is the simulator's 400, said in place of the verdict.
    await page.getByTestId('journal-pattern').fill('{"methd":"GET"}');
    await page.getByTestId('journal-pattern-apply').click();
    await page.getByTestId('journal-pattern-problem').getByText("Unknown parameter 'request/methd'", { exact: false }).waitFor();
    await page.getByTestId('journal-pattern-clear').click();
    await expect.poll(() => page.getByTestId('journal-row').count()).toBeGreaterThan(1);
    expect(await page.getByTestId('journal-verdict').isHidden()).toBe(true);
  });
});
