/**
 * POST /_sim/faults: which `type` and `code` go with which `status`. The server decides
 * (src/core/faults/faults.ts); openapi.yaml's SimFaultRequest states the same pairs per status. Every
 * status, type and code, alone and together, is accepted by both or refused by both.
 */
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { ERROR_CATALOGUE, ERROR_CODES, PROXY_ERROR_CODES, SHARD_ERROR_CODES } from '../src/core/errors.js';
import { FaultQueue, type FaultRequest } from '../src/core/faults/faults.js';
import { makeSim, postFault } from './helpers.js';

const compiled = createRequire(import.meta.url)('../src/generated/contract.cjs') as Record<string, (body: unknown) => boolean>;
const schemaAccepts = compiled.simQueueFault_body as (body: unknown) => boolean;

function serverAccepts(body: FaultRequest): boolean {
  try {
    new FaultQueue(10).add(body);
    return true;
  } catch {
    return false;
  }
}

const STATUSES = [400, 401, 402, 404, 422, 429, 500];
const TYPES = ['invalid_request_error', 'authentication_error', 'insufficient_balance', 'compliance_error', 'rate_limit_error', 'api_error'] as const;

describe('a fault body (POST /_sim/faults)', () => {
  it('pairs status, type and code in openapi.yaml exactly as the server does', () => {
    const disagreements: string[] = [];
    let accepted = 0;
    for (const status of STATUSES) {
      for (const type of [undefined, ...TYPES]) {
        for (const code of [undefined, ...ERROR_CODES]) {
          const body: FaultRequest = { path: '/v1/videos', status, ...(type && { type }), ...(code && { code }) };
          const server = serverAccepts(body);
          if (server) accepted++;
          if (schemaAccepts(body) !== server) disagreements.push(`${JSON.stringify(body)}: server ${server ? 'accepts' : 'refuses'}`);
        }
      }
    }
    expect(disagreements).toEqual([]);
    // Sanity: each status goes with its own type's codes, not with every pair.
    expect(accepted).toBeGreaterThan(STATUSES.length);
    expect(accepted).toBeLessThan(STATUSES.length * (TYPES.length + 1) * (ERROR_CODES.length + 1) / 4);
  });

  it.each([
    [{ status: 500, type: 'invalid_request_error' }, 'type', "Invalid value for 'type': must be one of api_error (the type of status 500)."],
    [{ status: 429, code: 'internal_error' }, 'code', "Invalid value for 'code': must be one of rate_limit_exceeded (the codes of status 429)."],
    [
      { status: 400, type: 'invalid_request_error', code: 'rate_limit_exceeded' },
      'code',
      `Invalid value for 'code': must be one of ${ERROR_CODES.filter((c) => ERROR_CATALOGUE[c].type === 'invalid_request_error' && !PROXY_ERROR_CODES.includes(c) && !SHARD_ERROR_CODES.includes(c)).join(', ')} (the codes of status 400).`,
    ],
  ])('%j is 400 invalid_parameter naming the field and what goes with the status', async (fault, param, message) => {
    const sim = makeSim();
    const res = await postFault(sim, { path: '/v1/videos', ...fault });
    expect(res.status).toBe(400);
    expect(res.body.error).toEqual({ type: 'invalid_request_error', code: 'invalid_parameter', param, message });
  });

  it('refuses a type with another type\'s code in the core too (the pair an answer would carry)', () => {
    expect(() => new FaultQueue(10).add({ path: '/v1/videos', status: 400, type: 'invalid_request_error', code: 'rate_limit_exceeded' })).toThrow(
      "code 'rate_limit_exceeded' (of type 'rate_limit_error') does not go with status 400; the type of status 400 is 'invalid_request_error'.",
    );
  });
});
