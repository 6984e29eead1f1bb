/**
 * The client report after lost answers (network faults): a create lost after taking effect and
 * carried out again without its Idempotency-Key is `duplicate_after_lost_answer`, naming both ids;
 * a retry without the key is `post_retry_without_idempotency_key` too; a retry with the key, or a
 * client that lists its videos to find the lost create, gets no finding. Over real sockets, then on
 * the core's rules.
 */
import request from 'supertest';
import { afterEach, describe, expect, it } from 'vitest';
import { clientReport, type ClientReport, type ReportedRequest } from '../src/core/journal/clientReport.js';
import { PROMPT, journalRecord, makeSim, queueFault } from './helpers.js';
import { rawRequest } from './rawHttp.js';

const KEY = 'sk_test_client';
const CREATE = JSON.stringify({ model: 'video-3.2', prompt: PROMPT });

type Sim = ReturnType<typeof makeSim>;
let open: Sim[] = [];
afterEach(async () => {
  await Promise.all(open.map((s) => s.close()));
  open = [];
});

async function listening(): Promise<{ sim: Sim; url: string }> {
  const sim = makeSim();
  open.push(sim);
  return { sim, url: await sim.listen(0) };
}

function create(url: string, key?: string) {
  return rawRequest(url, {
    method: 'POST',
    path: '/v1/videos',
    headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json', connection: 'close', ...(key && { 'idempotency-key': key }) },
    body: CREATE,
  });
}

async function report(sim: Sim): Promise<ClientReport> {
  return (await request(sim.app).get('/_sim/report').query({ api_key: KEY })).body as ClientReport;
}

const codes = (r: ClientReport): string[] => r.findings.map((f) => f.code);

describe('recovering from a lost answer, over real sockets', () => {
  it('a create reset after taking effect, sent again without a key: duplicate_after_lost_answer (naming both ids) and post_retry_without_idempotency_key', async () => {
    const { sim, url } = await listening();
    await queueFault(sim, { path: '/v1/videos', method: 'POST', network: 'reset', phase: 'after' });
    expect((await create(url)).end).toBe('reset');
    const again = await create(url);
    const [lost, second] = (await request(sim.app).get('/_sim/generations').query({ api_key: KEY })).body.data as { id: string }[];
    expect(second?.id).toBe(JSON.parse(again.body.toString()).id);

    const found = await report(sim);
    expect(codes(found)).toEqual(['duplicate_after_lost_answer', 'post_retry_without_idempotency_key']);
    const [duplicate] = found.findings;
    expect(duplicate).toMatchObject({ severity: 'error', count: 1, examples: [again.headers['x-request-id']] });
    expect(duplicate?.message).toContain(`(${lost?.id})`);
    expect(duplicate?.message).toContain(`(${second?.id})`);
    expect(found.coverage.statuses).toEqual({ none: 1, '200': 1 });
  });

  it('a create lost after taking effect, retried with its key, gets no finding', async () => {
    const { sim, url } = await listening();
    await queueFault(sim, { path: '/v1/videos', method: 'POST', network: 'close', phase: 'after' });
    await create(url, 'one-create');
    expect((await create(url, 'one-create')).headers['idempotent-replayed']).toBe('true');
    expect(codes(await report(sim))).toEqual([]);
  });

  it('a client that lists its videos to find the lost create, and does not create again, gets no finding', async () => {
    const { sim, url } = await listening();
    await queueFault(sim, { path: '/v1/videos', method: 'POST', network: 'gateway', phase: 'after' });
    expect((await create(url)).status).toBe(502);
    const listed = await rawRequest(url, { method: 'GET', path: '/v1/videos', headers: { authorization: `Bearer ${KEY}`, connection: 'close' } });
    expect(JSON.parse(listed.body.toString()).data).toHaveLength(1);
    expect(codes(await report(sim))).toEqual([]);
  });
});

describe('clientReport after lost answers', () => {
  const create = (fields: Partial<ReportedRequest>): ReportedRequest =>
    journalRecord({ method: 'POST', path: '/v1/videos', operation: 'createVideo', bodyFingerprint: 'same', status: 200, ...fields });

  it.each(['reset', 'close', 'hang', 'truncate', 'gateway'] as const)('a create lost (%s) after taking effect and carried out again without its key is a duplicate', (kind) => {
    const records = [
      create({ request_id: 'r1', status: kind === 'gateway' ? 502 : kind === 'truncate' ? 200 : null, network: { kind, phase: 'after' }, createdId: 'vid_a' }),
      create({ request_id: 'r2', createdId: 'vid_b', atMs: 1000 }),
    ];
    const found = clientReport(KEY, records);
    expect(codes(found)).toEqual(['duplicate_after_lost_answer', 'post_retry_without_idempotency_key']);
    expect(found.findings[0]?.message).toMatch(/\(vid_a\) was sent again without its Idempotency-Key and carried out again \(vid_b\)/);
  });

  it('a create slowed (slow) is answered whole: a second create is no duplicate of a lost answer', () => {
    const records = [create({ request_id: 'r1', network: { kind: 'slow', phase: 'after' }, createdId: 'vid_a' }), create({ request_id: 'r2', createdId: 'vid_b' })];
    expect(codes(clientReport(KEY, records))).toEqual([]);
  });

  it('a create lost before taking effect, sent again without a key: only post_retry_without_idempotency_key (one generation)', () => {
    const records = [create({ request_id: 'r1', status: null, network: { kind: 'reset', phase: 'before' } }), create({ request_id: 'r2', createdId: 'vid_b' })];
    expect(codes(clientReport(KEY, records))).toEqual(['post_retry_without_idempotency_key']);
  });

  it('a new key on the retry is no cure: the create is carried out twice', () => {
    const records = [
      create({ request_id: 'r1', status: null, network: { kind: 'reset', phase: 'after' }, createdId: 'vid_a', idempotencyKey: 'k1' }),
      create({ request_id: 'r2', createdId: 'vid_b', idempotencyKey: 'k2' }),
    ];
    expect(codes(clientReport(KEY, records))).toEqual(['duplicate_after_lost_answer', 'post_retry_without_idempotency_key']);
  });

  it('counts each duplicate and says how many more there were', () => {
    const records = [
      create({ request_id: 'r1', status: null, network: { kind: 'reset', phase: 'after' }, createdId: 'vid_a' }),
      create({ request_id: 'r2', status: null, network: { kind: 'close', phase: 'after' }, createdId: 'vid_b' }),
      create({ request_id: 'r3', createdId: 'vid_c' }),
    ];
    const [duplicate] = clientReport(KEY, records).findings;
    expect(duplicate).toMatchObject({ code: 'duplicate_after_lost_answer', count: 2, examples: ['r2', 'r3'] });
    expect(duplicate?.message).toContain('(vid_a)');
    expect(duplicate?.message).toContain('(vid_b), and 1 more like it');
  });

  it('a truncated retrieve is no answer: the poll rules do not read what its cut body would have shown', () => {
    const retrieve = (fields: Partial<ReportedRequest>): ReportedRequest =>
      journalRecord({ path: '/v1/videos/vid_a', operation: 'retrieveVideo', videoId: 'vid_a', videoStatus: 'succeeded', ...fields });
    const records = [retrieve({ request_id: 'r1', network: { kind: 'truncate', phase: 'after' } }), retrieve({ request_id: 'r2', atMs: 5000 })];
    expect(codes(clientReport(KEY, records))).toEqual([]);
  });
});
