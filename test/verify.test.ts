/**
 * Verifying what a client sent: `POST /_sim/verify` over the request journal. Each field of a
 * request pattern, each form of `times`, a sequence, the closest entries and what they differ in,
 * the requests a small journal dropped; what the journal keeps for patterns (the body's fields, the
 * statuses an answer showed, the Idempotency-Key, a lost answer) and its `seq`, across a reset, a
 * state file and a snapshot; and the typed client's `verify`.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import { afterAll, describe, expect, it } from 'vitest';
import { SimulatorControl, VerificationError, type SimulatorHandle } from '../src/index.js';
import { KEPT_VALUE_CHARS } from '../src/core/journal/keptBody.js';
import { PROMPT, VALID_VIDEO, bearer, expectError, fastWith, makeSim } from './helpers.js';

const KEY = 'sk_test_verify';
const OTHER = 'sk_test_other';

const dir = mkdtempSync(join(tmpdir(), 'sim-verify-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function create(sim: SimulatorHandle, body: Record<string, unknown> = VALID_VIDEO, headers: Record<string, string> = {}, key = KEY) {
  return request(sim.app).post('/v1/videos').set(bearer(key)).set(headers).send(body);
}

async function verify(sim: SimulatorHandle, body: Record<string, unknown>) {
  const res = await request(sim.app).post('/_sim/verify').send(body);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body as { verified: boolean; count: number; message: string | null; closest: { seq: number; differs: string[] }[]; dropped: number };
}

/** How many requests the journal holds matching `pattern`. */
async function count(sim: SimulatorHandle, pattern: Record<string, unknown>): Promise<number> {
  return (await verify(sim, { request: pattern, times: { at_least: 0 } })).count;
}

describe('a request pattern', () => {
  it('matches method, api_key and status exactly', async () => {
    const sim = makeSim();
    await create(sim);
    await create(sim, { model: 'video-9', prompt: PROMPT });
    await request(sim.app).get('/v1/videos').set(bearer(OTHER));
    expect(await count(sim, { method: 'POST' })).toBe(2);
    expect(await count(sim, { method: 'GET' })).toBe(1);
    expect(await count(sim, { api_key: KEY })).toBe(2);
    expect(await count(sim, { api_key: OTHER })).toBe(1);
    expect(await count(sim, { status: 200 })).toBe(2);
    expect(await count(sim, { status: 400, api_key: KEY })).toBe(1);
    expect(await count(sim, { status: null })).toBe(0);
    expect(await count(sim, {})).toBe(3);
  });

  it('matches a path exactly or by a prefix ending in *, the query string only when the pattern has one', async () => {
    const sim = makeSim();
    const { id } = (await create(sim)).body as { id: string };
    await request(sim.app).get(`/v1/videos/${id}`).set(bearer(KEY));
    await request(sim.app).get('/v1/videos?limit=5').set(bearer(KEY));
    await request(sim.app).get('/v1/videos').set(bearer(KEY));
    expect(await count(sim, { path: '/v1/videos' })).toBe(3);
    expect(await count(sim, { path: '/v1/videos?limit=5' })).toBe(1);
    expect(await count(sim, { path: '/v1/videos?limit=6' })).toBe(0);
    expect(await count(sim, { path: '/v1/videos?*' })).toBe(1);
    expect(await count(sim, { path: '/v1/videos/*' })).toBe(1);
    expect(await count(sim, { path: `/v1/videos/${id}` })).toBe(1);
    expect(await count(sim, { path: '/v1/*' })).toBe(4);
    expect(await count(sim, { path: '/v1/video' })).toBe(0);
  });

  it('matches a null status: a network fault lost the answer', async () => {
    const sim = makeSim();
    sim.faults.queue({ path: '/v1/videos', method: 'POST', network: 'reset', phase: 'after', api_key: KEY });
    await expect(create(sim)).rejects.toThrow();
    await create(sim);
    expect(await count(sim, { method: 'POST', status: null })).toBe(1);
    expect(await count(sim, { method: 'POST', status: 200 })).toBe(1);
  });

  it('matches body fields compared as JSON: key order, spacing and 8 against 8.0 aside; nested values; a field absent or different does not match', async () => {
    const sim = makeSim();
    await request(sim.app)
      .post('/v1/videos')
      .set(bearer(KEY))
      .set('Content-Type', 'application/json')
      .send(`{ "prompt": ${JSON.stringify(PROMPT)},  "model": "video-3.2", "duration_seconds": 8.0 }`);
    // Refused (an unknown field) but journaled with its body as sent.
    await create(sim, { ...VALID_VIDEO, extra: { b: [1, 2], a: 'x' } });
    expect(await count(sim, { body: { model: 'video-3.2' } })).toBe(2);
    expect(await count(sim, { body: { duration_seconds: 8 } })).toBe(1);
    expect(await count(sim, { body: { prompt: PROMPT, model: 'video-3.2', duration_seconds: 8 } })).toBe(1);
    expect(await count(sim, { body: { extra: { a: 'x', b: [1, 2] } } })).toBe(1);
    expect(await count(sim, { body: { extra: { a: 'x', b: [2, 1] } } })).toBe(0);
    expect(await count(sim, { body: { model: 'video-3.1' } })).toBe(0);
    expect(await count(sim, { body: { negative_prompt: null } })).toBe(0);
    expect(await count(sim, { body: {} })).toBe(2);
  });

  it('matches a long body value the journal keeps only as its digest, as it matches a short one', async () => {
    const sim = makeSim();
    const long = `${PROMPT} `.repeat(40).trim();
    expect(JSON.stringify(long).length).toBeGreaterThan(KEPT_VALUE_CHARS);
    await create(sim, { model: 'video-3.2', prompt: long, negative_prompt: 'blur' });
    const [entry] = (await request(sim.app).get('/_sim/requests')).body.data as { body: Record<string, unknown>; body_digests: Record<string, string> }[];
    // The body is over 1 KiB: its long value is kept as a digest, the short ones as they are.
    expect(entry?.body).toEqual({ model: 'video-3.2', negative_prompt: 'blur' });
    expect(Object.keys(entry?.body_digests ?? {})).toEqual(['prompt']);
    expect(await count(sim, { body: { prompt: long } })).toBe(1);
    expect(await count(sim, { body: { prompt: `${long}.` } })).toBe(0);
    expect(await count(sim, { body: { prompt: long, negative_prompt: 'blur' } })).toBe(1);
  });

  it('matches seen: a status the answer showed, of a video, a cancel or any video of a list (a replayed create too)', async () => {
    const sim = makeSim();
    const { id } = (await create(sim, VALID_VIDEO, { 'Idempotency-Key': 'k-1' })).body as { id: string };
    await create(sim, VALID_VIDEO, { 'Idempotency-Key': 'k-1' });
    sim.generations.finish(id, KEY);
    await create(sim);
    await request(sim.app).get('/v1/videos').set(bearer(KEY));
    await request(sim.app).get(`/v1/videos/${id}`).set(bearer(KEY));
    expect(await count(sim, { seen: 'queued' })).toBe(4);
    expect(await count(sim, { seen: 'succeeded' })).toBe(2);
    expect(await count(sim, { seen: 'succeeded', path: '/v1/videos/*' })).toBe(1);
    expect(await count(sim, { seen: 'failed' })).toBe(0);
    const list = ((await request(sim.app).get('/_sim/requests')).body.data as { path: string; seen?: string[] }[]).find((e) => e.path === '/v1/videos' && e.seen?.length === 2);
    expect(list?.seen).toEqual(['queued', 'succeeded']);
  });

  it('matches idempotency_key: the key sent, true for any, false for none', async () => {
    const sim = makeSim();
    await create(sim, VALID_VIDEO, { 'Idempotency-Key': 'k-1' });
    await create(sim, VALID_VIDEO, { 'Idempotency-Key': 'k-2' });
    await create(sim);
    expect(await count(sim, { idempotency_key: 'k-1' })).toBe(1);
    expect(await count(sim, { idempotency_key: true })).toBe(2);
    expect(await count(sim, { idempotency_key: false })).toBe(1);
  });

  it('refuses an unknown field with 400 unknown_parameter, and a malformed one with 400 invalid_parameter', async () => {
    const sim = makeSim();
    expectError(await request(sim.app).post('/_sim/verify').send({ request: { methd: 'GET' } }), 400, 'invalid_request_error', 'unknown_parameter', 'request/methd');
    expectError(await request(sim.app).post('/_sim/verify').send({ request: {}, time: 1 }), 400, 'invalid_request_error', 'unknown_parameter', 'time');
    expectError(await request(sim.app).post('/_sim/verify').send({ request: { method: 'get' } }), 400, 'invalid_request_error', 'invalid_parameter', 'request/method');
    expectError(await request(sim.app).post('/_sim/verify').send({ request: { seen: 'done' } }), 400, 'invalid_request_error', 'invalid_parameter', 'request/seen');
    expectError(await request(sim.app).post('/_sim/verify').send({ request: {}, times: { exactly: 1, at_most: 1 } }), 400, 'invalid_request_error', 'invalid_parameter', 'times');
    expectError(await request(sim.app).post('/_sim/verify').send({ sequence: [{}], request: {} }), 400, 'invalid_request_error', 'invalid_parameter', 'request');
    expectError(await request(sim.app).post('/_sim/verify').send({}), 400, 'invalid_request_error', 'missing_parameter', 'request');
    expectError(await request(sim.app).post('/_sim/requests/wait').send({ request: { path: 'v1' } }), 400, 'invalid_request_error', 'invalid_parameter', 'request/path');
  });
});

describe('times', () => {
  it('at least 1 by default; exactly, at_least, at_most, and at_most 0 (never), each with its sentence', async () => {
    const sim = makeSim();
    await create(sim);
    await create(sim);
    const posts = { method: 'POST' };
    expect(await verify(sim, { request: posts })).toEqual({ verified: true, count: 2, message: null, closest: [], dropped: 0 });
    expect((await verify(sim, { request: posts, times: { exactly: 2 } })).verified).toBe(true);
    expect((await verify(sim, { request: posts, times: { at_least: 2 } })).verified).toBe(true);
    expect((await verify(sim, { request: posts, times: { at_most: 2 } })).verified).toBe(true);
    expect((await verify(sim, { request: { method: 'DELETE' }, times: { at_most: 0 } })).verified).toBe(true);
    expect((await verify(sim, { request: posts, times: { exactly: 1 } })).message).toBe('Expected exactly 1 request matching {"method":"POST"}; found 2.');
    expect((await verify(sim, { request: posts, times: { at_least: 3 } })).message).toBe('Expected at least 3 requests matching {"method":"POST"}; found 2.');
    expect((await verify(sim, { request: posts, times: { at_most: 1 } })).message).toBe('Expected at most 1 request matching {"method":"POST"}; found 2.');
    expect((await verify(sim, { request: posts, times: { at_most: 0 } })).message).toBe('Expected no request matching {"method":"POST"}; found 2.');
    expect((await verify(sim, { request: { method: 'DELETE' } })).message).toBe('Expected at least 1 request matching {"method":"DELETE"}; found 0.');
  });

  it('a sequence: in that order, other requests allowed between; what was found and what was not', async () => {
    const sim = makeSim();
    const { id } = (await create(sim)).body as { id: string };
    await request(sim.app).get('/v1/videos').set(bearer(KEY));
    sim.generations.finish(id, KEY);
    await request(sim.app).get(`/v1/videos/${id}`).set(bearer(KEY));
    const created = { method: 'POST', path: '/v1/videos' };
    const done = { path: '/v1/videos/*', seen: 'succeeded' };
    expect(await verify(sim, { sequence: [created, done] })).toEqual({ verified: true, count: 2, message: null, closest: [], dropped: 0 });
    const backwards = await verify(sim, { sequence: [done, created] });
    expect(backwards).toMatchObject({ verified: false, count: 1 });
    expect(backwards.message).toBe(
      'Expected 2 requests in order matching [{"path":"/v1/videos/*","seen":"succeeded"},{"method":"POST","path":"/v1/videos"}]; found the first 1 (seq 3), but no request matching {"method":"POST","path":"/v1/videos"} after it.',
    );
    const never = await verify(sim, { sequence: [{ method: 'DELETE' }, created] });
    expect(never.message).toBe('Expected 2 requests in order matching [{"method":"DELETE"},{"method":"POST","path":"/v1/videos"}]; found no request matching {"method":"DELETE"}.');
  });
});

describe('closest', () => {
  it('lists up to 3 entries, fewest of the pattern\'s fields missed first, then the most recent, each with differs', async () => {
    const sim = makeSim();
    await create(sim);
    await request(sim.app).get('/v1/videos').set(bearer(KEY));
    await create(sim, { model: 'video-9', prompt: PROMPT });
    await request(sim.app).get('/v1/videos').set(bearer(OTHER));
    const answer = await verify(sim, { request: { method: 'POST', api_key: KEY, status: 201 } });
    expect(answer.verified).toBe(false);
    expect(answer.closest.map((e) => [e.seq, e.differs])).toEqual([
      [3, ['status']],
      [1, ['status']],
      [2, ['method', 'status']],
    ]);
    expect(answer.closest[0]).toMatchObject({ seq: 3, method: 'POST', path: '/v1/videos', status: 400, account: KEY, error_code: 'model_not_found' });
    // Verified: no closest.
    expect((await verify(sim, { request: { method: 'POST' } })).closest).toEqual([]);
  });
});

describe('dropped: a bounded journal', () => {
  const small = () => makeSim({ scenario: fastWith((s) => (s.limits.journal_size = 3)) });

  it('counts the requests of the scope it dropped; where the verdict could depend on them it is no pass, and says so', async () => {
    const sim = small();
    for (let i = 0; i < 3; i++) await create(sim);
    await request(sim.app).get('/v1/videos').set(bearer(OTHER));
    await request(sim.app).get('/v1/videos').set(bearer(OTHER));
    // Kept: the third create and OTHER's two lists; dropped: two of KEY's creates.
    const exactly = await verify(sim, { request: { method: 'POST', api_key: KEY }, times: { exactly: 1 } });
    expect(exactly).toMatchObject({ verified: false, count: 1, dropped: 2 });
    expect(exactly.message).toBe(
      'Expected exactly 1 request matching {"method":"POST","api_key":"sk_test_verify"}; found 1, but the journal dropped 2 older requests of sk_test_verify (limits.journal_size) that may have matched, so the count cannot be verified.',
    );
    const never = await verify(sim, { request: { method: 'DELETE' }, times: { at_most: 0 } });
    expect(never).toMatchObject({ verified: false, count: 0, dropped: 2 });
    expect(never.message).toBe(
      'Expected no request matching {"method":"DELETE"}; found 0, but the journal dropped 2 older requests (limits.journal_size) that may have matched, so the count cannot be verified.',
    );
    expect((await verify(sim, { sequence: [{ api_key: KEY }, { api_key: KEY }] })).message).toBe(
      'Expected 2 requests in order matching [{"api_key":"sk_test_verify"},{"api_key":"sk_test_verify"}]; found the first 1 (seq 3), but no request matching {"api_key":"sk_test_verify"} after it, and the journal dropped 2 older requests of sk_test_verify (limits.journal_size) that may have matched.',
    );
    // A sequence of another account, whose requests the journal kept all of, is verified.
    expect(await verify(sim, { sequence: [{ api_key: OTHER }, { api_key: OTHER }] })).toMatchObject({ verified: true, count: 2, dropped: 0 });
    // At least: what is kept decides a pass; a failure says what was dropped.
    expect((await verify(sim, { request: { method: 'POST' } })).verified).toBe(true);
    expect((await verify(sim, { request: { method: 'POST' }, times: { at_least: 2 } })).message).toBe(
      'Expected at least 2 requests matching {"method":"POST"}; found 1, and the journal dropped 2 older requests (limits.journal_size) that may have matched.',
    );
    // Another account's scope dropped nothing: its count is known.
    expect(await verify(sim, { request: { api_key: OTHER }, times: { exactly: 2 } })).toMatchObject({ verified: true, dropped: 0 });
    // A reset of the account forgets them, as if it had never been used.
    await request(sim.app).post('/_sim/reset').send({ api_key: KEY });
    expect(await verify(sim, { request: { method: 'DELETE' }, times: { at_most: 0 } })).toMatchObject({ verified: true, dropped: 0 });
  });

  it('a sequence found whole is no pass while the journal dropped requests of its scope', async () => {
    const sim = small();
    for (let i = 0; i < 4; i++) await create(sim);
    const answer = await verify(sim, { sequence: [{ method: 'POST' }, { method: 'POST' }] });
    expect(answer).toMatchObject({ verified: false, count: 2, dropped: 1 });
    expect(answer.message).toBe(
      'Expected 2 requests in order matching [{"method":"POST"},{"method":"POST"}]; found them (seq 2, 3), but the journal dropped 1 older request (limits.journal_size), so their order among them cannot be verified.',
    );
  });
});

describe('seq and what the journal keeps, across resets, state files and snapshots', () => {
  it('numbers every entry in arrival order, across accounts and resets', async () => {
    const sim = makeSim();
    await create(sim);
    await request(sim.app).get('/v1/videos').set(bearer(OTHER));
    await request(sim.app).post('/_sim/reset').send({});
    await create(sim);
    const { data } = (await request(sim.app).get('/_sim/requests')).body as { data: { seq: number }[] };
    expect(data.map((e) => e.seq)).toEqual([3]);
  });

  it('a restart from a state file, and a snapshot of it, keep each entry with its seq and fields, and go on counting', async () => {
    const file = join(dir, 'state.jsonl');
    const first = makeSim({ state: file, scenario: fastWith((s) => (s.limits.journal_size = 4)) });
    await first.listen(0);
    const { id } = (await create(first, VALID_VIDEO, { 'Idempotency-Key': 'k-1' })).body as { id: string };
    first.generations.finish(id, KEY);
    for (let i = 0; i < 3; i++) await request(first.app).get(`/v1/videos/${id}`).set(bearer(KEY));
    await request(first.app).post('/_sim/reset').send({ api_key: OTHER });
    await create(first, { model: 'video-3.2', prompt: `${PROMPT} `.repeat(40) });
    // Neither a verification nor a wait is recorded: they change nothing.
    await verify(first, { request: {} });
    await request(first.app).post('/_sim/requests/wait').send({ request: {}, timeout_ms: 0 });
    expect(readFileSync(file, 'utf8')).not.toMatch(/_sim\/(verify|requests\/wait)/);
    const journal = (await request(first.app).get('/_sim/requests')).text;
    const dropped = await verify(first, { request: { api_key: KEY }, times: { at_most: 10 } });
    expect(dropped.dropped).toBe(1);
    const snapshot = (await request(first.app).get('/_sim/state')).text;
    await first.close();

    const second = makeSim({ state: file, scenario: undefined });
    expect((await request(second.app).get('/_sim/requests')).text).toBe(journal);
    expect(await verify(second, { request: { api_key: KEY }, times: { at_most: 10 } })).toEqual(dropped);
    await create(second);
    expect(((await request(second.app).get('/_sim/requests')).body.data as { seq: number }[]).at(-1)?.seq).toBe(6);
    await second.close();

    const fromSnapshot = join(dir, 'snapshot.jsonl');
    (await import('node:fs')).writeFileSync(fromSnapshot, snapshot);
    const third = makeSim({ state: fromSnapshot, scenario: undefined });
    expect((await request(third.app).get('/_sim/requests')).text).toBe(journal);
    expect(await verify(third, { request: { api_key: KEY }, times: { at_most: 10 } })).toEqual(dropped);
    await create(third);
    expect(((await request(third.app).get('/_sim/requests')).body.data as { seq: number }[]).at(-1)?.seq).toBe(6);
    await third.close();
  });
});

describe('the typed client', () => {
  it('verify and verifySequence answer the verification, or reject with a VerificationError: the sentence and the closest entries', async () => {
    const sim = makeSim();
    const url = await sim.listen(0);
    const control = new SimulatorControl({ baseUrl: url });
    await fetch(`${url}/v1/videos`, { method: 'POST', headers: { ...bearer(KEY), 'Content-Type': 'application/json' }, body: JSON.stringify(VALID_VIDEO) });
    expect(await control.verify({ method: 'POST', idempotency_key: false })).toMatchObject({ verified: true, count: 1 });
    expect(await control.verifySequence([{ method: 'POST' }])).toMatchObject({ verified: true, count: 1 });
    const failed = await control.verify({ method: 'POST', idempotency_key: true }).catch((e: unknown) => e);
    expect(failed).toBeInstanceOf(VerificationError);
    expect((failed as VerificationError).message).toBe(
      [
        'Expected at least 1 request matching {"method":"POST","idempotency_key":true}; found 0.',
        'Closest requests in the journal:',
        '  #1 POST /v1/videos (sk_test_verify) -> 200, seen queued; differs: idempotency_key',
      ].join('\n'),
    );
    expect((failed as VerificationError).closest).toHaveLength(1);
    // The in-process handle throws the same, at once.
    expect(() => sim.verify({ method: 'POST' }, { at_most: 0 })).toThrow(VerificationError);
    expect(() => sim.verifySequence([{ method: 'GET' }])).toThrow('Expected 1 request in order matching [{"method":"GET"}]; found no request matching {"method":"GET"}.');
    // requests(pattern): the matching entries; without one, every entry.
    expect((await control.requests({ method: 'POST' })).map((e) => e.seq)).toEqual([1]);
    expect(sim.requests()).toHaveLength(1);
    await sim.close();
  });
});
