/**
 * The dashboard behind the proxy in front of three shards, in headless Chromium (Debian's
 * chromium): one merged view of every shard's generations, each row labelled with its shard, the
 * clock moved on every shard, and a generation's action sent to the shard that holds it, each
 * request with the shards' control token.
 */
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { failureScreenshot, openBrowser, type OpenBrowser } from '../browser/chromium.js';
import { PROMPT } from '../helpers.js';
import { CONTROL, TOKEN, startCluster, type Cluster } from './cluster.js';

describe('the dashboard behind the proxy', () => {
  let cluster: Cluster;
  let browser: OpenBrowser;
  let page: Page;
  const created: { id: string; key: string }[] = [];
  const holder = new Map<string, number>();

  beforeAll(async () => {
    cluster = await startCluster(3, ['--scenario', 'fast', '--clock', 'manual']);
    for (let k = 0; k < 9; k++) {
      const key = `sk_test_board_${k}`;
      const res = await fetch(`${cluster.proxy.url}/v1/videos`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
        body: JSON.stringify({ model: 'video-3.2', prompt: `${PROMPT} ${k}` }),
      });
      created.push({ id: ((await res.json()) as { id: string }).id, key });
    }
    for (const [i] of cluster.shards.entries()) {
      const list = (await (await fetch(`${cluster.proxy.url}/shards/${i}/_sim/generations?limit=100`, { headers: CONTROL })).json()) as { data: { id: string }[] };
      for (const g of list.data) holder.set(g.id, i);
    }
    browser = await openBrowser();
    page = browser.page;
    // With the shards' control token in its address, as users open it: it sends it to every shard.
    await page.goto(`${cluster.proxy.url}/_sim/#token=${TOKEN}`);
    await page.getByTestId('scenario-name').getByText('fast', { exact: true }).waitFor();
  });

  afterAll(async () => {
    await browser?.close();
    await cluster?.stop();
  });

  it('shows every shard\'s generations in one view, each row labelled with the shard that holds it', async () => {
    failureScreenshot(() => page, 'shards-dashboard-merged-failure.png');
    expect(new Set(holder.values()).size).toBeGreaterThan(1);
    const rows = page.getByTestId('generation-row');
    await expect.poll(() => rows.count()).toBe(created.length);
    const shown = await rows.evaluateAll((trs) =>
      trs.map((tr) => ({ id: (tr as HTMLElement).dataset.id, shard: tr.querySelector('[data-testid="generation-shard"]')?.textContent })),
    );
    expect(shown.map((r) => r.id).sort()).toEqual(created.map((c) => c.id).sort());
    for (const row of shown) expect(row.shard, row.id).toBe(`shard ${holder.get(row.id as string)}`);
    expect(browser.errors).toEqual([]);
  });

  it('sends an action to the shard that holds the generation, and moves the clock of every shard', async () => {
    failureScreenshot(() => page, 'shards-dashboard-actions-failure.png');
    // oxlint-disable-next-line typescript/no-unnecessary-type-assertion -- tsc needs it (noUncheckedIndexedAccess)
    const target = created.find((c) => holder.get(c.id) === 2) ?? (created[0] as { id: string });
    await page.evaluate((hash) => (window.location.hash = hash), `#${target.id}`);
    await page.getByTestId('detail-id').getByText(target.id, { exact: true }).waitFor();
    await page.getByTestId('detail-shard').getByText(`shard ${holder.get(target.id)}`, { exact: true }).waitFor();
    await page.getByTestId('action-finish').click();
    await page.getByTestId('detail-status').getByText('succeeded', { exact: true }).waitFor();
    const onHolder = (await (await fetch(`${cluster.proxy.url}/shards/${holder.get(target.id)}/_sim/generations/${target.id}`, { headers: CONTROL })).json()) as { status: string };
    expect(onHolder.status).toBe('succeeded');
    await page.getByTestId('advance-10s').click();
    await expect
      .poll(async () => Promise.all(cluster.shards.map(async (_, i) => ((await (await fetch(`${cluster.proxy.url}/shards/${i}/_sim/clock`, { headers: CONTROL })).json()) as { now: string }).now)))
      .toEqual(Array(3).fill('2026-01-01T00:00:10.000Z'));
    // Its thumbnail comes through the proxy from its shard.
    const thumbnail = page.getByTestId('generation-thumbnail').first();
    await thumbnail.waitFor();
    // Loaded and decoded (the element shows before its bytes have come).
    await expect.poll(() => thumbnail.evaluate((img) => (img as HTMLImageElement).naturalWidth), { timeout: 10_000 }).toBeGreaterThan(0);
    expect(browser.errors).toEqual([]);
  });
});
