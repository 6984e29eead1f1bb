/**
 * Refusals of the operation itself, over HTTP: insufficient balance (402) and claim-linking
 * rejection (422), their bodies, that they store nothing, and their place in the order of checks.
 */
import request from 'supertest';
import { beforeEach, describe, expect, it } from 'vitest';
import { controlGenerations } from '../src/core/generations/generationControl.js';
import { loadScenario, type Scenario } from '../src/index.js';
import { bearer, createVideo, expectError, fastWith, listVideos, makeSim } from './helpers.js';

type Sim = ReturnType<typeof makeSim>;

// ---------------------------------------------------------------------------------------------------
describe('insufficient balance (402)', () => {
  let poor: Sim;
  beforeEach(() => {
    poor = makeSim({ scenario: fastWith({ accounts: { sk_test_poor: { balance_cents: 50 } } }) });
  });

  it('a 1080p 8 s video (price 80 plus keyframe) with a balance of 50 is 402 insufficient_balance without param or stage', async () => {
    const res = await createVideo(poor, { resolution: '1080p', duration_seconds: 8 }, 'sk_test_poor');
    const error = expectError(res, 402, 'insufficient_balance', 'insufficient_balance');
    expect(Object.keys(error).sort()).toEqual(['code', 'message', 'type']);
  });

  it('a 402 stores nothing', async () => {
    await createVideo(poor, {}, 'sk_test_poor');
    const res = await listVideos(poor, 'sk_test_poor');
    expect(res.body.data).toEqual([]);
  });

  it('a video the balance covers (720p 4 s = 20 + keyframe) succeeds', async () => {
    const res = await createVideo(poor, { resolution: '720p', duration_seconds: 4 }, 'sk_test_poor');
    expect(res.status).toBe(200);
  });

  it('parameter errors come before the balance check', async () => {
    expectError(await createVideo(poor, { duration_seconds: 3 }, 'sk_test_poor'), 400, 'invalid_request_error', 'invalid_parameter', 'duration_seconds');
    expectError(await createVideo(poor, { model: 'video-9.9' }, 'sk_test_poor'), 400, 'invalid_request_error', 'model_not_found', 'model');
    expectError(await createVideo(poor, { keyframe_id: 'foo' }, 'sk_test_poor'), 400, 'invalid_request_error', 'keyframe_not_found', 'keyframe_id');
  });

  it('other accounts keep an unlimited balance', async () => {
    const res = await createVideo(poor, { duration_seconds: 16 }, 'sk_test_rich');
    expect(res.status).toBe(200);
  });
});

// ---------------------------------------------------------------------------------------------------
describe('claim-linking rejection (422)', () => {
  let strict: Sim;
  const fast = loadScenario('fast');
  const rejecting = (extra: Partial<Scenario> = {}): Scenario =>
    fastWith({
      compliance: { ...fast.compliance, claim_linking: { ...fast.compliance.claim_linking, rules: [{ pattern: 'forbidden' }] } },
      ...extra,
    });
  beforeEach(() => {
    strict = makeSim({ scenario: rejecting() });
  });

  it("a create with 'forbidden' in the prompt is 422 compliance_error/claim_linking_rejected stage claim_linking, no param", async () => {
    const res = await createVideo(strict, { prompt: 'Something forbidden in a neon street.' });
    const error = expectError(res, 422, 'compliance_error', 'claim_linking_rejected');
    expect(error.stage).toBe('claim_linking');
    expect(Object.keys(error).sort()).toEqual(['code', 'message', 'stage', 'type']);
  });

  it('a rejected create stores nothing: the list stays empty', async () => {
    await createVideo(strict, { prompt: 'Something forbidden in a neon street.' });
    const res = await listVideos(strict);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ object: 'list', data: [], has_more: false });
    expect(controlGenerations(strict.core, {}).data).toEqual([]);
  });

  it('a prompt without the pattern succeeds', async () => {
    expect((await createVideo(strict)).status).toBe(200);
  });

  it("an image with 'forbidden' in the prompt is 422 claim_linking_rejected too, and stores nothing", async () => {
    const res = await request(strict.app).post('/v1/images').set(bearer()).send({ prompt: 'forbidden still' });
    const error = expectError(res, 422, 'compliance_error', 'claim_linking_rejected');
    expect(error.stage).toBe('claim_linking');
    expect(strict.core.store.imagesOf('sk_test_alice').size).toBe(0);
  });

  it('parameter errors come before claim linking', async () => {
    const res = await createVideo(strict, { prompt: 'forbidden', duration_seconds: 3 });
    expectError(res, 400, 'invalid_request_error', 'invalid_parameter', 'duration_seconds');
  });

  it('the balance check (402) comes before claim linking (422)', async () => {
    const both = makeSim({ scenario: rejecting({ accounts: { sk_test_poor: { balance_cents: 50 } } }) });
    const res = await createVideo(both, { prompt: 'forbidden' }, 'sk_test_poor');
    expectError(res, 402, 'insufficient_balance', 'insufficient_balance');
  });
});
