/**
 * Integer query parameters (`limit` of GET /v1/videos, GET /_sim/requests and GET /_sim/generations,
 * `changed_since`): any run of decimal digits is a number, however many digits it has; a value past
 * 2^53-1 is 400 naming the parameter's range, never "must be an integer".
 */
import { readFileSync } from 'node:fs';
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { openapiPath } from '../src/index.js';
import { bearer, createVideo, listVideos, makeSim, withFreshSim } from './helpers.js';

type Sim = ReturnType<typeof makeSim>;

let sim: Sim;
withFreshSim((fresh) => (sim = fresh));

const message = (res: { body: { error?: { message?: string } } }): string | undefined => res.body.error?.message;

describe('GET /v1/videos limit', () => {
  it('reads limit=0000000000000001 (sixteen digits) as 1', async () => {
    await createVideo(sim);
    await createVideo(sim);
    const res = await listVideos(sim, 'sk_test_alice', '?limit=0000000000000001');
    expect(res.status).toBe(200);
    expect(res.body.data).toHaveLength(1);
    expect(res.body.has_more).toBe(true);
  });

  it.each([
    ['1000000000000000', '1000000000000000', 'must be at most 100'],
    ['9007199254740991', '9007199254740991', 'must be at most 100'],
    ['9007199254740993', '9007199254740993', 'must be at most 100'],
    ['38 nines', '9'.repeat(38), 'must be at most 100'],
    ['1 and 400 zeros (past a double)', `1${'0'.repeat(400)}`, 'must be at most 100'],
    ['-99999999999999999999', '-99999999999999999999', 'must be at least 1'],
    ['0000', '0000', 'must be at least 1'],
  ])('limit=%s is 400 naming its range', async (_label, limit, expected) => {
    const res = await listVideos(sim, 'sk_test_alice', `?limit=${limit}`);
    expect(res.status).toBe(400);
    expect(res.body.error).toEqual({
      type: 'invalid_request_error',
      code: 'invalid_parameter',
      param: 'limit',
      message: `Invalid value for 'limit': ${expected}.`,
    });
  });

  it.each(['1e1', '0x10', '+1', '1.0', ' 1', 'Infinity'])('limit=%s (not a run of decimal digits) is 400 "must be an integer"', async (limit) => {
    const res = await listVideos(sim, 'sk_test_alice', `?limit=${encodeURIComponent(limit)}`);
    expect(res.status).toBe(400);
    expect(message(res)).toBe("Invalid value for 'limit': must be an integer.");
  });
});

describe('GET /_sim/generations changed_since', () => {
  // Cursors of the list across accounts (multiples of 65536: a cursor names its list), the last the largest below 2^53.
  it.each(['0', '000', '3722522472153088', '9007199254675456'])('takes changed_since=%s', async (since) => {
    await createVideo(sim);
    const res = await request(sim.app).get(`/_sim/generations?changed_since=${since}`);
    expect(res.status).toBe(200);
    expect(res.body.data).toHaveLength(since.replace(/^0+/, '') === '' ? 1 : 0);
  });

  it.each(['9007199254740992', '18446744073709551616'])('refuses changed_since=%s past 2^53-1, naming the range', async (since) => {
    const res = await request(sim.app).get(`/_sim/generations?changed_since=${since}`);
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 'invalid_parameter', param: 'changed_since', message: "Invalid value for 'changed_since': must be at most 9007199254740991." });
  });
});

describe('GET /_sim/requests limit', () => {
  it('reads a limit written with leading zeros, and refuses one past 2^53-1 with its range', async () => {
    await request(sim.app).get('/v1/videos').set(bearer('sk_test_alice'));
    expect((await request(sim.app).get('/_sim/requests?limit=00000000000000000001')).body.data).toHaveLength(1);
    const res = await request(sim.app).get('/_sim/requests?limit=90071992547409910000');
    expect(message(res)).toBe("Invalid value for 'limit': must be at most 10000.");
  });
});

describe('openapi.yaml', () => {
  it('bounds every integer query parameter on both sides within ±(2^53-1), so that the bounds name the range of any out-of-range value', () => {
    const contract = parse(readFileSync(openapiPath, 'utf8')) as {
      paths: Record<string, Record<string, { parameters?: ({ $ref?: string } & Param)[] }>>;
      components: { parameters: Record<string, Param> };
    };
    type Param = { name: string; in: string; schema?: { type?: string; minimum?: number; maximum?: number } };
    const unbounded: string[] = [];
    let checked = 0;
    for (const [path, item] of Object.entries(contract.paths)) {
      for (const [method, operation] of Object.entries(item)) {
        for (const p of operation.parameters ?? []) {
          const param = p.$ref ? (contract.components.parameters[p.$ref.split('/').pop() as string] as Param) : p;
          if (param.in !== 'query' || param.schema?.type !== 'integer') continue;
          checked++;
          const { minimum, maximum } = param.schema;
          const safe = (n: number | undefined) => n !== undefined && Number.isSafeInteger(n);
          if (!safe(minimum) || !safe(maximum)) unbounded.push(`${method.toUpperCase()} ${path} ${param.name}`);
        }
      }
    }
    expect(checked).toBeGreaterThanOrEqual(4);
    expect(unbounded).toEqual([]);
  });
});
