/**
 * The UI through its own service worker (Mock Service Worker with the simulator's handlers): the
 * test types a prompt and clicks Generate as a user would, moves the page's virtual clock through
 * `window.sim` (the control API of `createSimulatorHandlers`), and waits for the row to show
 * the outcome.
 */
import { expect, test as base, type Page } from '@playwright/test';

/** The page's simulator, driven from the test: its control calls run in the page. */
interface Sim {
  /** Moves the page account's virtual clock by `seconds`. */
  advance(seconds: number): Promise<void>;
  /** The simulator's view of a generation (`GET /_sim/generations/{id}`). */
  generation(id: string): Promise<{ status: string; stages: unknown[] }>;
}

type PageSim = { sim: { clock: { advance(s: number, key?: string): Promise<unknown> }; generations: { get(id: string): Promise<unknown> } }; apiKey: string };

const test = base.extend<{ sim: Sim }>({
  sim: async ({ page }, use) => {
    await use({
      advance: (seconds) => page.evaluate(async (s) => void (await (window as unknown as PageSim).sim.clock.advance(s, (window as unknown as PageSim).apiKey)), seconds),
      generation: (id) => page.evaluate((i) => (window as unknown as PageSim).sim.generations.get(i), id) as Promise<{ status: string; stages: unknown[] }>,
    });
  },
});

async function open(page: Page): Promise<void> {
  await page.goto('/');
  await expect(page.getByRole('status')).toHaveText('Mock service ready');
}

async function generate(page: Page, prompt: string) {
  await page.getByLabel('Prompt').fill(prompt);
  await page.getByRole('button', { name: 'Generate' }).click();
  const row = page.getByRole('row').filter({ hasText: prompt });
  await expect(row.getByTestId('status')).toHaveText('queued');
  return row;
}

test('a video goes from queued to succeeded when the test moves the clock', async ({ page, sim }) => {
  await open(page);
  const row = await generate(page, 'A hot-air balloon over a patchwork of fields.');

  // The page polls every second; with the clock standing still, the video stays queued.
  await page.waitForTimeout(1500);
  await expect(row.getByTestId('status')).toHaveText('queued');

  await sim.advance(3);
  await expect(row.getByTestId('status')).not.toHaveText('queued');
  await sim.advance(60);
  await expect(row.getByTestId('status')).toHaveText('succeeded');
  const link = row.getByRole('link', { name: 'video' });
  await expect(link).toHaveAttribute('href', /\/api\/cdn\/videos\/vid_\w+\.mp4$/);

  // The simulator agrees, and its file is there (answered by the same worker).
  const id = (await row.getByRole('cell').first().textContent())!;
  expect((await sim.generation(id)).status).toBe('succeeded');
  const file = await page.evaluate(async (href) => {
    const res = await fetch(href);
    return { status: res.status, type: res.headers.get('content-type') };
  }, (await link.getAttribute('href'))!);
  expect(file).toEqual({ status: 200, type: expect.stringMatching(/^video\/mp4/) });
});

test('a prompt trigger makes the video fail at render, and the UI shows the code', async ({ page, sim }) => {
  await open(page);
  const row = await generate(page, 'A glass city at night [sim:fail=render]');
  await sim.advance(60);
  await expect(row.getByTestId('status')).toHaveText('failed');
  await expect(row.getByTestId('detail')).toHaveText('render_failed');
});
