/**
 * GET /v1/videos: order, default limit, paging with `after`, the status filter, the item shape.
 */
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { bearer, cancelVideo, createVideo, expectError, getVideo, makeSim } from './helpers.js';

type Sim = ReturnType<typeof makeSim>;

function list(sim: Sim, query: Record<string, string | number> = {}, key = 'sk_test_alice') {
  return request(sim.app).get('/v1/videos').query(query).set(bearer(key));
}

async function createMany(sim: Sim, n: number, key = 'sk_test_alice', stepSeconds = 0.001): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const res = await createVideo(sim, { prompt: `Shot number ${i}: a lighthouse at dawn, waves crashing.` }, key);
    expect(res.status).toBe(200);
    ids.push(res.body.id);
    if (stepSeconds > 0) sim.clock.advance(stepSeconds);
  }
  return ids;
}

/** Pages through the whole list; returns every page. */
async function pageAll(sim: Sim, query: Record<string, string | number>, key = 'sk_test_alice') {
  const pages: { data: { id: string; status: string }[]; has_more: boolean }[] = [];
  let after: string | undefined;
  for (let guard = 0; guard < 100; guard++) {
    const res = await list(sim, after ? { ...query, after } : query, key);
    expect(res.status).toBe(200);
    pages.push(res.body);
    if (!res.body.has_more) return pages;
    const last = res.body.data[res.body.data.length - 1];
    expect(last, 'a page with has_more true is not empty').toBeDefined();
    after = last.id;
  }
  throw new Error('paging never ended');
}

describe('GET /v1/videos', () => {
  it('a fresh account lists {object: list, data: [], has_more: false}', async () => {
    const sim = makeSim();
    await createMany(sim, 3, 'sk_test_someone_else');
    const res = await list(sim);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ object: 'list', data: [], has_more: false });
  });

  it('lists in ascending order of creation (oldest first)', async () => {
    const sim = makeSim();
    const ids = await createMany(sim, 12, 'sk_test_alice', 0.1);
    const res = await list(sim);
    expect(res.body.data.map((v: { id: string }) => v.id)).toEqual(ids);
    // One every 0.1 virtual seconds from the scenario start.
    expect(res.body.data.map((v: { created_at: string }) => v.created_at)).toEqual(
      ids.map((_, i) => new Date(Date.parse('2026-01-01T00:00:00.000Z') + i * 100).toISOString()),
    );
  });

  it('keeps creation order among generations created at the same instant', async () => {
    const sim = makeSim();
    const ids = await createMany(sim, 10, 'sk_test_alice', 0);
    const res = await list(sim);
    expect(res.body.data.map((v: { id: string }) => v.id)).toEqual(ids);
  });

  it('returns 20 items by default, with has_more true when more exist', async () => {
    const sim = makeSim();
    const ids = await createMany(sim, 25);
    const res = await list(sim);
    expect(res.body.data).toHaveLength(20);
    expect(res.body.has_more).toBe(true);
    expect(res.body.data.map((v: { id: string }) => v.id)).toEqual(ids.slice(0, 20));
  });

  it('returns exactly 20 with has_more false when there are exactly 20', async () => {
    const sim = makeSim();
    await createMany(sim, 20);
    const res = await list(sim);
    expect(res.body.data).toHaveLength(20);
    expect(res.body.has_more).toBe(false);
  });

  it('pages through 50 generations with limit 7 via after = last id: no duplicates, no gaps, has_more false exactly on the last page', async () => {
    const sim = makeSim();
    const ids = await createMany(sim, 50);
    const pages = await pageAll(sim, { limit: 7 });
    expect(pages.map((p) => p.data.length)).toEqual([7, 7, 7, 7, 7, 7, 7, 1]);
    expect(pages.map((p) => p.has_more)).toEqual([true, true, true, true, true, true, true, false]);
    const seen = pages.flatMap((p) => p.data.map((v) => v.id));
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen).toEqual(ids);
  });

  it('when the total is a multiple of the limit, the last full page already says has_more false', async () => {
    const sim = makeSim();
    const ids = await createMany(sim, 49);
    const pages = await pageAll(sim, { limit: 7 });
    expect(pages.map((p) => p.data.length)).toEqual([7, 7, 7, 7, 7, 7, 7]);
    expect(pages[pages.length - 1]?.has_more).toBe(false);
    expect(pages.flatMap((p) => p.data.map((v) => v.id))).toEqual(ids);
  });

  it('after the newest id returns an empty page with has_more false', async () => {
    const sim = makeSim();
    const ids = await createMany(sim, 3);
    const res = await list(sim, { after: ids[2] as string });
    expect(res.body).toEqual({ object: 'list', data: [], has_more: false });
  });

  it('limit 100 is allowed; 0 and 101 are 400 invalid_parameter param limit', async () => {
    const sim = makeSim();
    await createMany(sim, 3);
    expect((await list(sim, { limit: 100 })).body.data).toHaveLength(3);
    expectError(await list(sim, { limit: 0 }), 400, 'invalid_request_error', 'invalid_parameter', 'limit');
    expectError(await list(sim, { limit: 101 }), 400, 'invalid_request_error', 'invalid_parameter', 'limit');
  });

  it('an unknown after id is 400 invalid_parameter param after', async () => {
    const sim = makeSim();
    await createMany(sim, 2);
    expectError(await list(sim, { after: 'vid_unknown' }), 400, 'invalid_request_error', 'invalid_parameter', 'after');
  });

  it('an unknown status value is 400 param status', async () => {
    const sim = makeSim();
    expectError(await list(sim, { status: 'done' }), 400, 'invalid_request_error', 'invalid_parameter', 'status');
  });

  it('status=canceled returns exactly the canceled generations, oldest first', async () => {
    const sim = makeSim();
    const ids = await createMany(sim, 15);
    const canceled = ids.filter((_, i) => i % 3 === 1);
    for (const id of canceled) expect((await cancelVideo(sim, id)).status).toBe(200);
    sim.clock.advance(30); // the rest succeed

    const res = await list(sim, { status: 'canceled' });
    expect(res.body.data.map((v: { id: string }) => v.id)).toEqual(canceled);
    expect(res.body.data.every((v: { status: string }) => v.status === 'canceled')).toBe(true);
    expect(res.body.has_more).toBe(false);

    const succeeded = await list(sim, { status: 'succeeded' });
    expect(succeeded.body.data.map((v: { id: string }) => v.id)).toEqual(ids.filter((id) => !canceled.includes(id)));

    expect((await list(sim, { status: 'queued' })).body).toEqual({ object: 'list', data: [], has_more: false });
  });

  it('the status filter follows the current status as generations progress', async () => {
    const sim = makeSim();
    const ids = await createMany(sim, 4, 'sk_test_alice', 0);
    expect((await list(sim, { status: 'queued' })).body.data.map((v: { id: string }) => v.id)).toEqual(ids);
    sim.clock.advance(30);
    expect((await list(sim, { status: 'queued' })).body.data).toEqual([]);
    expect((await list(sim, { status: 'succeeded' })).body.data.map((v: { id: string }) => v.id)).toEqual(ids);
  });

  it('status combined with after pages through the filtered set only, has_more counting filtered items', async () => {
    const sim = makeSim();
    const ids = await createMany(sim, 20);
    const canceled = ids.filter((_, i) => i % 4 === 0 || i === 19); // 0, 4, 8, 12, 16, 19
    for (const id of canceled) expect((await cancelVideo(sim, id)).status).toBe(200);

    const pages = await pageAll(sim, { status: 'canceled', limit: 2 });
    expect(pages.map((p) => p.data.map((v) => v.id))).toEqual([
      canceled.slice(0, 2),
      canceled.slice(2, 4),
      canceled.slice(4, 6),
    ]);
    expect(pages.map((p) => p.has_more)).toEqual([true, true, false]);

    // `after` may name a generation that the filter excludes.
    const res = await list(sim, { status: 'canceled', after: ids[5] as string });
    expect(res.body.data.map((v: { id: string }) => v.id)).toEqual(canceled.filter((id) => ids.indexOf(id) > 5));

    // has_more is false when later items exist but none matches the filter.
    const tail = await list(sim, { status: 'canceled', after: ids[16] as string, limit: 1 });
    expect(tail.body.data.map((v: { id: string }) => v.id)).toEqual([ids[19]]);
    expect(tail.body.has_more).toBe(false);
    const noMatchAfter = await list(sim, { status: 'canceled', after: ids[12] as string, limit: 1 });
    expect(noMatchAfter.body.data.map((v: { id: string }) => v.id)).toEqual([ids[16]]);
    expect(noMatchAfter.body.has_more).toBe(true);
  });

  it('each item is deep-equal to GET of the same id, at every stage of the pipeline', async () => {
    const sim = makeSim();
    const ids = await createMany(sim, 12, 'sk_test_alice', 0.3);
    expect((await cancelVideo(sim, ids[11] as string)).status).toBe(200);
    await request(sim.app).post('/v1/images').set(bearer()).send({ prompt: 'A still' });
    const everSeen = new Set<string>();
    for (const step of [0, 1.2, 2.5, 4, 30]) {
      sim.clock.advance(step);
      const res = await list(sim, { limit: 100 });
      expect(res.body.data).toHaveLength(12);
      const statuses = new Set<string>();
      for (const item of res.body.data) {
        statuses.add(item.status);
        everSeen.add(item.status);
        const got = await getVideo(sim, item.id);
        expect(item).toEqual(got.body);
      }
      if (step === 30) expect([...statuses].sort()).toEqual(['canceled', 'succeeded']);
    }
    expect([...everSeen].sort()).toEqual(['canceled', 'processing', 'queued', 'succeeded', 'verifying']);
  });
});
