import { defineConfig } from '@playwright/test';

// The static server's port: PORT, or one picked once by the main process (its workers inherit it).
process.env.PORT ??= String(20_000 + Math.floor(Math.random() * 30_000));
const baseURL = `http://127.0.0.1:${process.env.PORT}`;

export default defineConfig({
  testDir: 'tests',
  outputDir: 'artifacts/test-results',
  reporter: [['list']],
  timeout: 60_000,
  forbidOnly: !!process.env.CI,
  retries: 0,
  workers: 1,
  use: {
    baseURL,
    browserName: 'chromium',
    headless: true,
    // Debian's Chromium (apt-get install chromium), never a browser download.
    launchOptions: {
      executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
      args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--disable-background-networking', '--no-first-run'],
    },
    screenshot: 'only-on-failure',
  },
  webServer: {
    command: 'node serve.mjs',
    url: baseURL,
    reuseExistingServer: false,
    stdout: 'ignore',
  },
});
