/**
 * Headless Chromium for the browser tests: Debian's `chromium` package (another path with
 * CHROMIUM_PATH) driven by playwright-core, never a browser download. Collects the page's errors.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type BrowserContext, type Page } from 'playwright-core';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
export const ARTIFACTS = fileURLToPath(new URL('../../artifacts/browser/', import.meta.url));
/** Liveness, not performance: how long a page may take to show something. */
export const LIVENESS = 20_000;

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
  if (!existsSync(CHROMIUM)) {
    throw new Error(`${CHROMIUM} is missing: install Debian's package (apt-get install -y chromium); browsers are never downloaded.`);
  }
  mkdirSync(ARTIFACTS, { recursive: true });
  const profile = mkdtempSync(join(tmpdir(), 'sim-browser-chromium-'));
  const context: BrowserContext = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width: 1440, height: 1100 },
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
