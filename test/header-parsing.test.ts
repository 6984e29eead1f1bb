/**
 * The headers the simulator parses, parsed strictly and in one pass: the `Authorization` header of
 * `/v1` and of the control API (`bearerCredential`) and the `Host` header (`hostNameOf`), each as a
 * table of inputs and what they give, and the control token's rules. How long a hostile header
 * takes is a figure of the bench (`node bench/bench.mjs --only headers`), not a timed test.
 */
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { bearerCredential } from '../src/core/accounts/auth.js';
import { controlTokenProblem, hostNameOf } from '../src/http/accessGuard.js';
import { createSimulator } from '../src/index.js';
import { bearer, expectError, makeSim } from './helpers.js';

const TOKEN = 'control-token-for-tests';

describe('bearerCredential', () => {
  it.each([
    ['Bearer sk_test_a', 'sk_test_a'],
    ['bearer sk_test_a', 'sk_test_a'],
    ['BEARER   sk_test_a   ', 'sk_test_a'],
    ['  Bearer sk_test_a', 'sk_test_a'],
    ['Bearer sk_test_a\t', 'sk_test_a'],
    ['Bearer a/b+c=', 'a/b+c='],
    ['Bearer', undefined],
    ['Bearer ', undefined],
    ['Bearer    ', undefined],
    ['Bearersk_test_a', undefined],
    ['Bearer\tsk_test_a', undefined],
    ['Basic sk_test_a', undefined],
    ['sk_test_a', undefined],
    ['Bearer a b', undefined],
    [`Bearer a${' '.repeat(16_000)}b`, undefined],
    [`Bearer a${'\t'.repeat(16_000)}b`, undefined],
    [`Bearer ${'a '.repeat(8_000)}`, undefined],
    [`Bearer ${'x'.repeat(16_000)}`, 'x'.repeat(16_000)],
  ])('%j gives %j', (header, credential) => {
    expect(bearerCredential(header)).toBe(credential);
  });
});

describe('hostNameOf', () => {
  it.each([
    ['localhost', 'localhost'],
    ['LocalHost:8080', 'localhost'],
    ['localhost.', 'localhost'],
    ['app.localhost:3000', 'app.localhost'],
    ['127.0.0.1:65535', '127.0.0.1'],
    ['sim_1.internal', 'sim_1.internal'],
    ['[::1]', '[::1]'],
    ['[::1]:8080', '[::1]'],
    ['[FE80::1]:80', '[fe80::1]'],
    ['localhost:80@evil.example', undefined],
    ['[::1]evil', undefined],
    ['[::1]:80x', undefined],
    ['127.0.0.1:abc', undefined],
    ['localhost:', undefined],
    ['localhost:123456', undefined],
    ['localhost:80:80', undefined],
    ['[::1', undefined],
    ['[::1%25eth0]', undefined],
    ['[not-an-address]', undefined],
    ['::1', undefined],
    ['', undefined],
    ['.localhost', undefined],
    ['a..localhost', undefined],
    ['localhost..', undefined],
    ['evil example', undefined],
    ['user@localhost', undefined],
    ['localhost/path', undefined],
    [`${'a'.repeat(16_000)}.localhost`, undefined],
    [`localhost:${'1'.repeat(16_000)}`, undefined],
    [`[${':'.repeat(16_000)}]`, undefined],
  ])('%j gives %j', (host, name) => {
    expect(hostNameOf(host)).toBe(name);
  });
});

describe('the Authorization header over HTTP', () => {
  it('a 16 KiB hostile control Authorization header is 401 invalid_control_token', async () => {
    const sim = makeSim({ controlToken: TOKEN });
    const hostile = `Bearer a${' '.repeat(16_000)}b`;
    expectError(await request(sim.app).get('/_sim/requests').set('Authorization', hostile), 401, 'authentication_error', 'invalid_control_token');
    expect((await request(sim.app).get('/_sim/requests').set(bearer(TOKEN))).status).toBe(200);
  });

  it('a 16 KiB hostile /v1 Authorization header is 401 invalid_api_key, malformed', async () => {
    const sim = makeSim();
    const res = await request(sim.app).get('/v1/videos').set('Authorization', `Bearer sk_test_a${' '.repeat(16_000)}b`);
    expectError(res, 401, 'authentication_error', 'invalid_api_key');
    expect(res.body.error.message).toMatch(/^Malformed Authorization header/);
  });
});

describe('the control token', () => {
  it.each([
    ['0123456789abcdef', undefined],
    [TOKEN, undefined],
    ['0123456789abcde', /^must be at least 16 characters long \(got 15\)/],
    ['', /^must be printable ASCII/],
    ['two words and more', /^must be printable ASCII/],
    ['caf\u00e9-0123456789abcdef', /^must be printable ASCII/],
  ])('%j: %s', (token, problem) => {
    const found = controlTokenProblem(token);
    if (problem === undefined) expect(found).toBeUndefined();
    else expect(found).toMatch(problem);
  });

  it('createSimulator refuses a short one with a RangeError naming controlToken', () => {
    expect(() => createSimulator({ scenario: 'fast', controlToken: 'short' })).toThrow(
      new RangeError('controlToken must be at least 16 characters long (got 5): a short token can be guessed; make one with `openssl rand -hex 16`'),
    );
  });
});
