/**
 * Validation messages name what is wrong: every 400 about a body names the deepest field that is
 * wrong (`param`) and what it allows, and no message ends in an empty list ("must be .",
 * "one of .", "with ."). A fast-check fuzzer breaks fault bodies (the most nested body: `outcome`,
 * its `flags`, and the status/type/code pairs) and other bodies of /v1 and /_sim.
 */
import fc from 'fast-check';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ERROR_CODES } from '../src/core/errors.js';
import { PROMPT, makeSim } from './helpers.js';

// Deterministic runs (npm test must be); set FC_SEED to explore other inputs.
const SEED = Number(process.env.FC_SEED ?? 20261207);

const sim = makeSim();
let url: string;

beforeAll(async () => {
  url = await sim.listen(0);
});
afterAll(() => sim.close());

/** An empty list in a message: " .", ": .", "with .", "one of .", "()". */
const EMPTY_LIST = /\s\.|:\s*\.|\bwith\s*\.|\bof\s*[.,]|\(\s*\)|,\s*[.,]|\bundefined\b/;

/** A 400 about a request's parameters names a field and says what it allows, in a whole sentence. */
function expectNamedRefusal(res: request.Response): void {
  const context = `${res.status} ${res.text.slice(0, 400)}`;
  expect([200, 400], context).toContain(res.status);
  if (res.status !== 400) return;
  const error = (res.body as { error: { code: string; param?: unknown; message: string } }).error;
  expect(typeof error.param, context).toBe('string');
  expect((error.param as string).length, context).toBeGreaterThan(0);
  expect(error.message, context).not.toMatch(EMPTY_LIST);
}

/** A value of any JSON type. */
const anyJson = fc.jsonValue({ maxDepth: 2 });

/** A field's valid values, or anything else (about half the time). */
const orBroken = <T>(valid: fc.Arbitrary<T>): fc.Arbitrary<unknown> => fc.oneof(valid, anyJson, fc.string({ maxLength: 8 }));

const flag = fc.record(
  {
    code: orBroken(fc.constantFrom('blurry', 'nsfw')),
    severity: orBroken(fc.constantFrom('info', 'warning', 'block', 'low', 'high', '')),
    message: orBroken(fc.string({ maxLength: 10 })),
    extra: anyJson,
  },
  { requiredKeys: [] },
);

const outcome = fc.oneof(
  fc.record(
    {
      fail_stage: orBroken(fc.constantFrom('keyframe', 'routing', 'render', 'rendr', 'queue', 'output_verification')),
      claim_linking_rejected: orBroken(fc.boolean()),
      output_rejected: orBroken(fc.boolean()),
      flags: orBroken(fc.array(orBroken(flag), { maxLength: 3 })),
      unexpected: anyJson,
    },
    { requiredKeys: [] },
  ),
  anyJson,
);

const faultBody = fc.record(
  {
    path: orBroken(fc.constantFrom('/v1/videos', '/v1/videos/*', '/v1/images', '/v1/*', '/v2/videos', 'v1/videos', '')),
    method: orBroken(fc.constantFrom('GET', 'POST', 'DELETE', 'PUT', 'get')),
    status: orBroken(fc.constantFrom(400, 401, 402, 404, 422, 429, 500, 503, 0)),
    type: orBroken(fc.constantFrom('invalid_request_error', 'api_error', 'rate_limit_error', 'compliance_error', 'nope')),
    code: orBroken(fc.constantFrom(...ERROR_CODES, 'nope')),
    message: orBroken(fc.string({ maxLength: 20 })),
    latency_ms: orBroken(fc.integer({ min: -10, max: 70_000 })),
    outcome,
    times: orBroken(fc.integer({ min: -1, max: 200_000 })),
    api_key: orBroken(fc.constantFrom('sk_test_fuzz', '')),
    bogus: anyJson,
  },
  { requiredKeys: [] },
);

describe('validation messages', () => {
  it.each([
    [{ outcome: { fail_stage: 'rendr' } }, 'outcome/fail_stage', "Invalid value for 'outcome/fail_stage': must be one of keyframe, routing, render."],
    [
      { outcome: { flags: [{ code: 'blurry', severity: 'low', message: 'Soft focus.' }] } },
      'outcome/flags/0/severity',
      "Invalid value for 'outcome/flags/0/severity': must be one of info, warning, block.",
    ],
    [{ outcome: { flags: 'none' } }, 'outcome/flags', "Invalid value for 'outcome/flags': must be an array."],
    [{ outcome: 'render' }, 'outcome', "Invalid value for 'outcome': must be an object."],
    [{ status: 'x' }, 'status', "Invalid value for 'status': must be an integer."],
  ])('the fault body %j is 400 naming %s and what it allows', async (fault, param, message) => {
    const res = await request(url).post('/_sim/faults').send({ path: '/v1/videos', ...fault });
    expect(res.status).toBe(400);
    expect(res.body.error).toEqual({ type: 'invalid_request_error', code: 'invalid_parameter', param, message });
  });

  it('every refused fault body names a field and lists what it allows (fuzzed)', async () => {
    await fc.assert(
      fc.asyncProperty(faultBody, async (body) => {
        const res = await request(url).post('/_sim/faults').send(body);
        expectNamedRefusal(res);
        if (res.status === 200) await request(url).delete('/_sim/faults');
      }),
      { numRuns: 400, seed: SEED },
    );
  });

  it('every refused body of /v1 and /_sim names a field and lists what it allows (fuzzed)', async () => {
    // A queued generation of an account that nothing here resets or advances.
    const created = await request(url).post('/v1/videos').set({ Authorization: 'Bearer sk_test_queued' }).send({ model: 'video-3.2', prompt: PROMPT });
    const id = created.body.id as string;
    const value = orBroken(fc.constantFrom(...ERROR_CODES, 'video-3.2', '720p', '16:9', 'fast', 8, 1));
    /** Each route with a valid body and the fields it takes (and one it does not). */
    const routes = [
      { path: '/v1/videos', auth: true, body: { model: 'video-3.2', prompt: PROMPT }, fields: ['model', 'prompt', 'negative_prompt', 'duration_seconds', 'resolution', 'keyframe_id'] },
      { path: '/v1/images', auth: true, body: { prompt: PROMPT }, fields: ['prompt', 'aspect_ratio'] },
      { path: '/_sim/reset', auth: false, body: { api_key: 'sk_test_fuzz' }, fields: ['scenario', 'seed', 'api_key'] },
      { path: '/_sim/clock/advance', auth: false, body: { seconds: 1, api_key: 'sk_test_fuzz' }, fields: ['seconds', 'api_key'] },
      { path: `/_sim/generations/${id}/fail`, auth: false, body: {}, fields: ['code'] },
    ];
    const target = fc
      .constantFrom(...routes)
      .chain((route) => fc.tuple(fc.constant(route), fc.dictionary(fc.constantFrom(...route.fields, 'unexpected'), value, { minKeys: 1, maxKeys: 2 })));
    await fc.assert(
      fc.asyncProperty(target, async ([route, change]) => {
        // A reset or a clock move of all accounts would end the generation's queue stage.
        if (route.path === '/_sim/reset' || route.path === '/_sim/clock/advance') change.api_key ??= 'sk_test_fuzz';
        if (change.api_key === 'sk_test_queued') return;
        let req = request(url).post(route.path);
        if (route.auth) req = req.set({ Authorization: 'Bearer sk_test_fuzz' });
        const res = await req.send({ ...route.body, ...change });
        expectNamedRefusal(res);
      }),
      { numRuns: 300, seed: SEED },
    );
  });
});
