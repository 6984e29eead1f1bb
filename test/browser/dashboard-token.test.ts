/**
 * The dashboard of a simulator that has a control token, in headless Chromium (Debian's
 * `chromium`, driven by playwright-core): it takes the token from its `#token=` fragment (and hides
 * it), or asks for it once on a 401, and sends it on every control request; it works behind
 * --allowed-hosts, and a page on a host the simulator does not serve (DNS rebinding) gets nothing.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createSimulator } from '../../src/index.js';
import { CHROMIUM, CHROMIUM_ARGS, LIVENESS } from './chromium.js';

const ARTIFACTS = fileURLToPath(new URL('../../artifacts/browser/', import.meta.url));
const TOKEN = 'dashboard-token-7f3a9c';
/** Host names Chromium resolves to 127.0.0.1: one the simulator serves, one it does not. */
const SERVED = 'sim.team.test';
const REBOUND = 'rebound.evil.test';

const sim = createSimulator({ scenario: 'fast', clock: 'manual', controlToken: TOKEN, allowedHosts: [SERVED] });
let port: number;
let browser: Browser | undefined;
let context: BrowserContext | undefined;

interface Watched {
  page: Page;
  /** Every control request (not the dashboard's files): its path and Authorization header. */
  control: { method: string; path: string; authorization: string | undefined }[];
  errors: string[];
}

beforeAll(async () => {
  mkdirSync(ARTIFACTS, { recursive: true });
  await sim.listen(0, '127.0.0.1');
  port = sim.port as number;
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [...CHROMIUM_ARGS, `--host-resolver-rules=MAP ${SERVED} 127.0.0.1, MAP ${REBOUND} 127.0.0.1`],
  });
});

afterEach(async () => {
  await context?.close();
  context = undefined;
});

afterAll(async () => {
  await browser?.close();
  await sim.close();
});

/** A fresh tab (its own sessionStorage) that records its control requests and its errors. */
async function openTab(): Promise<Watched> {
  context = await browser!.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  page.setDefaultTimeout(LIVENESS);
  const watched: Watched = { page, control: [], errors: [] };
  page.on('pageerror', (error) => watched.errors.push(`pageerror: ${error.message}`));
  page.on('console', (message) => {
    // Chromium logs each 401 the page handles (it asks for the token) as a failed resource.
    if (message.type() === 'error' && !/status of 401/.test(message.text())) watched.errors.push(`console: ${message.text()}`);
  });
  page.on('request', (request) => {
    const path = new URL(request.url()).pathname;
    if (path.startsWith('/_sim/') && path !== '/_sim/' && !path.startsWith('/_sim/ui/')) {
      watched.control.push({ method: request.method(), path, authorization: request.headers().authorization });
    }
  });
  return watched;
}

/** The dashboard showed the scenario: its control requests were answered. */
const loaded = (page: Page) => page.getByTestId('scenario-name').getByText('fast', { exact: true }).waitFor();

describe('dashboard with a control token', () => {
  it('takes the token from #token=, removes it from the address bar, keeps it for the tab and sends it on every control request', async () => {
    const { page, control, errors } = await openTab();
    await page.goto(`http://localhost:${port}/_sim/#token=${TOKEN}`);
    await loaded(page);
    expect(page.url()).toBe(`http://localhost:${port}/_sim/`);
    expect(await page.evaluate(() => Object.values(sessionStorage))).toEqual([TOKEN]);

    const before = sim.clock.state().now;
    await page.getByTestId('advance-10s').click();
    await expect.poll(() => Date.parse(sim.clock.state().now) - Date.parse(before)).toBe(10_000);

    // A reload (no fragment now) still has it.
    await page.reload();
    await loaded(page);
    expect(control.some((r) => r.method === 'POST' && r.path === '/_sim/clock/advance')).toBe(true);
    expect(control.filter((r) => r.authorization !== `Bearer ${TOKEN}`)).toEqual([]);
    expect(await page.getByTestId('token-dialog').count()).toBe(0);
    expect(errors).toEqual([]);
  });

  it('without a token, asks for it once (a form, not a prompt) on the first 401, then shows everything', async () => {
    const { page, control, errors } = await openTab();
    page.on('dialog', (dialog) => errors.push(`unexpected ${dialog.type()}: ${dialog.message()}`));
    await page.goto(`http://localhost:${port}/_sim/`);
    const dialog = page.getByTestId('token-dialog');
    await dialog.waitFor();
    await expect.poll(() => page.getByTestId('token-reason').textContent()).toMatch(/needs its control token/);
    await page.screenshot({ path: join(ARTIFACTS, 'dashboard-token.png') });
    expect(await page.locator('[data-testid="token-dialog"]').count()).toBe(1);

    await page.getByTestId('token-input').fill(TOKEN);
    await page.getByTestId('token-submit').click();
    await loaded(page);
    await dialog.waitFor({ state: 'hidden' });
    await page.getByTestId('live-indicator').getByText(/^live/).waitFor();
    // Every control request after the answer carried the token; those before it were refused.
    const firstWithToken = control.findIndex((r) => r.authorization !== undefined);
    expect(firstWithToken).toBeGreaterThan(0);
    expect(control.slice(firstWithToken).filter((r) => r.authorization !== `Bearer ${TOKEN}`)).toEqual([]);
    expect(errors).toEqual([]);
  });

  it('asks again, saying so, when the token it was given is refused', async () => {
    const { page, errors } = await openTab();
    await page.goto(`http://localhost:${port}/_sim/#token=not-the-token`);
    await page.getByTestId('token-dialog').waitFor();
    await expect.poll(() => page.getByTestId('token-reason').textContent()).toMatch(/refused this token/);
    await page.getByTestId('token-input').fill(TOKEN);
    await page.getByTestId('token-submit').click();
    await loaded(page);
    expect(await page.evaluate(() => Object.values(sessionStorage))).toEqual([TOKEN]);
    expect(errors).toEqual([]);
  });

  it('works on a host name allowed with --allowed-hosts (its own origin), and a page on another name gets nothing', async () => {
    const { page, errors } = await openTab();
    await page.goto(`http://${SERVED}:${port}/_sim/#token=${TOKEN}`);
    await loaded(page);
    const before = sim.clock.state().now;
    await page.getByTestId('advance-1min').click();
    await expect.poll(() => Date.parse(sim.clock.state().now) - Date.parse(before)).toBe(60_000);
    expect(errors).toEqual([]);

    // A page whose name was rebound to this address: the server answers it nothing but a 403.
    const rebound = await page.goto(`http://${REBOUND}:${port}/_sim/`);
    expect(rebound?.status()).toBe(403);
    expect(await rebound?.json()).toMatchObject({ error: { type: 'permission_error', code: 'host_not_allowed' } });
  });
});
