/**
 * Headless Chromium for the browser tests: Debian's `chromium` package (another path with
 * CHROMIUM_PATH) driven by playwright-core, never a browser download. Collects the page's errors.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { onTestFailed } from 'vitest';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
export const ARTIFACTS = fileURLToPath(new URL('../../artifacts/browser/', import.meta.url));
/** Liveness, not performance: how long a page may take to show something (ms; its default timeout). */
export const LIVENESS = 20_000;

/** The flags every browser test starts Chromium with (a closed network, no sandbox as root). */
export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-dev-shm-usage',
];

/** Debian's Chromium in a persistent context on `profile` (a fresh folder), with `CHROMIUM_ARGS` and `options`. */
export function launchChromium(
  profile: string,
  options: Omit<Parameters<typeof chromium.launchPersistentContext>[1] & object, 'executablePath' | 'headless'> = {},
): Promise<BrowserContext> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`${CHROMIUM} is missing: install Debian's package (apt-get install -y chromium); browsers are never downloaded.`);
  }
  return chromium.launchPersistentContext(profile, { ...options, executablePath: CHROMIUM, headless: true, args: [...CHROMIUM_ARGS, ...(options.args ?? [])] });
}

export interface OpenBrowser {
  page: Page;
  /** Errors the page threw or logged (failed loads the test expects excepted). */
  errors: string[];
  close(): Promise<void>;
}

/**
 * A fresh profile and page. Chromium logs every error answer as a console error; `expected` lists
 * those the test causes knowingly (`[status, path pattern]`), which are not errors of the page.
 */
export async function openBrowser(expected: [number, RegExp][] = []): Promise<OpenBrowser> {
  mkdirSync(ARTIFACTS, { recursive: true });
  const profile = mkdtempSync(join(tmpdir(), 'sim-browser-chromium-'));
  const context: BrowserContext = await launchChromium(profile, {
    viewport: { width: 1440, height: 1100 },
  });
  const page = context.pages()[0] ?? (await context.newPage());
  page.setDefaultTimeout(LIVENESS);
  const errors: string[] = [];
  page.on('pageerror', (error) => errors.push(`pageerror: ${error.stack ?? error.message}`));
  page.on('console', (message) => {
    if (message.type() !== 'error') return;
    const at = message.location().url;
    const status = Number(/status of (\d{3})/.exec(message.text())?.[1]);
    const path = at === '' ? '' : new URL(at).pathname;
    if (expected.some(([s, pattern]) => s === status && pattern.test(path))) return;
    errors.push(`console: ${message.text()} (${at})`);
  });
  return {
    page,
    errors,
    close: async () => {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

/** Saves a screenshot of `page()` to ARTIFACTS/`name` if the current test fails. */
export function failureScreenshot(page: () => Page | undefined, name: string): void {
  onTestFailed(async () => {
    await page()?.screenshot({ path: join(ARTIFACTS, name), fullPage: true }).catch(() => undefined);
  });
}

/** Opens a generation in the dashboard's detail panel through its `#id` link. */
export async function openGeneration(page: Page, id: string): Promise<void> {
  await page.evaluate((hash) => (window.location.hash = hash), `#${id}`);
  await page.getByTestId('detail-id').getByText(id, { exact: true }).waitFor();
}
