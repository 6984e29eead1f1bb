/**
 * The dashboard's state line in headless Chromium (the setup of dashboard.test.ts): with --state, the
 * file, its size and last compaction; with or without it, a link that downloads the state as a
 * compacted state file, which restores the same state.
 */
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSimulator, type SimulatorHandle } from '../../src/index.js';
import { compactStateFile } from '../../src/persistence/compact.js';
import { answerInProcess } from '../helpers.js';
import { parseStateText } from '../stateFiles.js';
import { LIVENESS, launchChromium } from './chromium.js';

const KEY = 'sk_test_panel';
const dir = mkdtempSync(join(tmpdir(), 'sim-state-panel-'));
let profile: string;
let context: BrowserContext | undefined;
let page: Page;
const sims: SimulatorHandle[] = [];

function start(options: Parameters<typeof createSimulator>[0]): SimulatorHandle {
  const sim = createSimulator({ clock: 'manual', log: () => {}, ...options });
  sims.push(sim);
  return sim;
}

async function create(sim: SimulatorHandle): Promise<string> {
  const answer = answerInProcess(sim, 'POST', '/v1/videos', { key: KEY, body: { model: 'video-3.2', prompt: 'A lighthouse at dawn.' } });
  return (answer.body as { id: string }).id;
}

/** Clicks the download link and answers what the browser saved. */
async function download(): Promise<{ name: string; text: string }> {
  const [saved] = await Promise.all([page.waitForEvent('download'), page.getByTestId('state-download').click()]);
  const path = join(dir, `downloaded-${Date.now()}.jsonl`);
  await saved.saveAs(path);
  return { name: saved.suggestedFilename(), text: readFileSync(path, 'utf8') };
}

beforeAll(async () => {
  profile = mkdtempSync(join(tmpdir(), 'sim-state-panel-chromium-'));
  context = await launchChromium(profile, {
    acceptDownloads: true,
  });
  page = context.pages()[0] ?? (await context.newPage());
  page.setDefaultTimeout(LIVENESS);
});

afterAll(async () => {
  await context?.close();
  await Promise.all(sims.map((sim) => sim.close()));
  if (profile) rmSync(profile, { recursive: true, force: true });
  rmSync(dir, { recursive: true, force: true });
});

describe('the dashboard state line', () => {
  it('with --state shows the file, its size and its last compaction, and downloads the state compacted', async () => {
    const file = join(dir, 'kept.jsonl');
    const first = start({ scenario: 'fast', state: file });
    const id = await create(first);
    await first.close();
    await compactStateFile(file, () => {});
    const compactedAt = parseStateText(readFileSync(file, 'utf8')).snapshot?.compacted_at as string;
    const sim = start({ state: file });
    const url = await sim.listen(0);
    await create(sim);

    await page.goto(`${url}/_sim/`);
    const panel = page.getByTestId('state-panel');
    await expect.poll(() => panel.getAttribute('data-durable'), { timeout: LIVENESS }).toBe('true');
    expect(await page.getByTestId('state-file').textContent()).toBe(file);
    // The size as health last said it (an `{"ids":N}` line for the page's own reads may have come since).
    const size = /^(\d+\.\d) KB, 1 request$/.exec((await page.getByTestId('state-size').textContent()) ?? '');
    expect(Math.abs(Number(size?.[1]) - statSync(file).size / 1024)).toBeLessThanOrEqual(0.1);
    expect(await page.getByTestId('state-compacted').textContent()).toBe(`compacted ${compactedAt}`);
    expect(await page.getByTestId('state-failed').count()).toBe(0);

    const saved = await download();
    expect(saved.name).toBe('state.jsonl');
    const parsed = parseStateText(saved.text);
    expect(parsed.items.flatMap((row) => ('generation' in row ? [row.generation.id] : []))).toContain(id);
    expect(parsed.entries).toEqual([]);
  });

  it('without --state says the state is in memory only, and still downloads it; the file restores the same state', async () => {
    const sim = start({ scenario: 'fast' });
    const url = await sim.listen(0);
    const id = await create(sim);
    await page.goto(`${url}/_sim/`);
    const panel = page.getByTestId('state-panel');
    await expect.poll(() => panel.getAttribute('data-durable'), { timeout: LIVENESS }).toBe('false');
    expect(await panel.textContent()).toContain('State: in memory only; a restart loses it');
    expect(await page.getByTestId('state-file').count()).toBe(0);

    const saved = await download();
    const file = join(dir, 'handed.jsonl');
    writeFileSync(file, saved.text);
    const restored = start({ state: file });
    // The same state, but for the global request ids the page's own reads took since.
    const { requests: given, ...kept } = sim.core.toState();
    const { requests: restoredIds, ...restoredState } = restored.core.toState();
    expect(restoredState).toEqual(kept);
    expect(restoredIds).toBeLessThanOrEqual(given);
    expect(restored.core.store.get(id)?.status).toBe('queued');
  });
});
