/**
 * `video-service-sim/matchers` under Vitest's `expect.extend`: `toHaveReceivedRequest` over the
 * in-process handle and `SimulatorControl`, with `times` and `.not`, and its failure message (the
 * verification's sentence and the closest entries), word for word.
 */
import request from 'supertest';
import { beforeAll, describe, expect, it } from 'vitest';
import { SimulatorControl } from '../src/index.js';
import { requestMatchers, type RequestMatchers } from '../src/matchers.js';
import { VALID_VIDEO, bearer, fastWith, makeSim } from './helpers.js';

declare module 'vitest' {
  // The declaration merges the matchers into vitest's own interface: it has nothing of its own.
  // oxlint-disable-next-line typescript/no-empty-object-type
  interface Matchers<T = any> extends RequestMatchers<T> {}
}

const KEY = 'sk_test_matchers';

/** The message an assertion failed with (it must fail). */
async function failureOf(assertion: Promise<unknown>): Promise<string> {
  const error = await assertion.then(
    () => undefined,
    (e: unknown) => e as Error,
  );
  expect(error, 'the assertion passed').toBeDefined();
  return (error as Error).message;
}

beforeAll(() => {
  expect.extend(requestMatchers);
});

describe('toHaveReceivedRequest', () => {
  it('passes when the journal holds the requests, with times too, over the in-process handle and SimulatorControl', async () => {
    const sim = makeSim();
    const url = await sim.listen(0);
    await request(sim.app).post('/v1/videos').set(bearer(KEY)).set('Idempotency-Key', 'k-1').send(VALID_VIDEO);
    await expect(sim).toHaveReceivedRequest({ method: 'POST', path: '/v1/videos', idempotency_key: true });
    await expect(sim).toHaveReceivedRequest({ method: 'POST' }, { exactly: 1 });
    const control = new SimulatorControl({ baseUrl: url });
    await expect(control).toHaveReceivedRequest({ api_key: KEY, body: { model: 'video-3.2' } }, { at_most: 1 });
    await expect(control).not.toHaveReceivedRequest({ method: 'POST', idempotency_key: false });
    await expect(control).not.toHaveReceivedRequest({ method: 'POST' }, { exactly: 2 });
    await sim.close();
  });

  it("fails with the verification's sentence and the closest entries, word for word", async () => {
    const sim = makeSim();
    await request(sim.app).post('/v1/videos').set(bearer(KEY)).send(VALID_VIDEO);
    await request(sim.app).get('/v1/videos').set(bearer(KEY));
    expect(await failureOf(expect(sim).toHaveReceivedRequest({ method: 'POST', idempotency_key: true }))).toBe(
      [
        'Expected at least 1 request matching {"method":"POST","idempotency_key":true}; found 0.',
        'Closest requests in the journal:',
        '  #1 POST /v1/videos (sk_test_matchers) -> 200, seen queued; differs: idempotency_key',
        '  #2 GET /v1/videos (sk_test_matchers) -> 200, seen queued; differs: method, idempotency_key',
      ].join('\n'),
    );
    expect(await failureOf(expect(sim).toHaveReceivedRequest({ method: 'GET' }, { exactly: 2 }))).toBe(
      [
        'Expected exactly 2 requests matching {"method":"GET"}; found 1.',
        'Closest requests in the journal:',
        '  #2 GET /v1/videos (sk_test_matchers) -> 200, seen queued; matches',
        '  #1 POST /v1/videos (sk_test_matchers) -> 200, seen queued; differs: method',
      ].join('\n'),
    );
  });

  it('.not fails when a request matched, naming it; and when the journal dropped requests that may have', async () => {
    const sim = makeSim();
    await request(sim.app).post('/v1/videos').set(bearer(KEY)).send(VALID_VIDEO);
    expect(await failureOf(expect(sim).not.toHaveReceivedRequest({ method: 'POST' }))).toBe(
      ['Expected no request matching {"method":"POST"}; found 1.', 'Closest requests in the journal:', '  #1 POST /v1/videos (sk_test_matchers) -> 200, seen queued; matches'].join('\n'),
    );
    expect(await failureOf(expect(sim).not.toHaveReceivedRequest({ method: 'POST' }, { at_least: 1 }))).toBe(
      'Expected other than at least 1 request matching {"method":"POST"}; found 1.',
    );
    const small = makeSim({ scenario: fastWith((s) => (s.limits.journal_size = 1)) });
    await request(small.app).get('/v1/videos').set(bearer(KEY));
    await request(small.app).get('/v1/videos').set(bearer(KEY));
    expect(await failureOf(expect(small).not.toHaveReceivedRequest({ method: 'DELETE' }))).toMatch(
      /^Expected no request matching \{"method":"DELETE"\}; found 0, but the journal dropped 1 older request \(limits\.journal_size\) that may have matched, so the count cannot be verified\./,
    );
  });

  it('refuses a value that is no control', async () => {
    await expect(expect({}).toHaveReceivedRequest({})).rejects.toThrow('toHaveReceivedRequest expects a simulator control');
  });
});
