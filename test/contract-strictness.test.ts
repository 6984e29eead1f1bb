/**
 * openapi.yaml states what the server enforces: a body or parameter the server refuses is one its
 * schema refuses too (read from the file by a validator of its own, not the compiled one the server
 * runs), so that a contract fuzzer (Schemathesis) generating from the schema meets no refusal the
 * schema does not announce. Each case is sent to the server and checked against the schema.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { openapiPath } from '../src/index.js';
import { makeSim, postFault, withFreshSim } from './helpers.js';

type Sim = ReturnType<typeof makeSim>;
type Validate = (value: unknown) => boolean;

const require = createRequire(import.meta.url);
const Ajv2020 = require('ajv/dist/2020').default as new (options: object) => {
  addSchema(schema: object, key: string): void;
  getSchema(ref: string): Validate | undefined;
};
const addFormats = require('ajv-formats') as (ajv: object) => void;

const contract = parse(readFileSync(openapiPath, 'utf8')) as {
  paths: Record<string, Record<string, { parameters?: { name: string; in: string; schema: object; $ref?: string }[] }>>;
};
const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats(ajv);
ajv.addSchema(contract, 'openapi');

/** The validator of a schema of openapi.yaml, by its pointer. */
function schema(pointer: string): Validate {
  const validate = ajv.getSchema(`openapi#${pointer}`);
  if (!validate) throw new Error(`openapi.yaml has no schema at ${pointer}`);
  return validate;
}

/** The validator of a query parameter of an operation, declared in place. */
function queryParameter(path: string, method: string, name: string): Validate {
  const parameters = contract.paths[path]?.[method]?.parameters ?? [];
  const at = parameters.findIndex((p) => p.in === 'query' && p.name === name);
  if (at < 0) throw new Error(`${method.toUpperCase()} ${path} declares no query parameter ${name}`);
  return schema(`/paths/${path.replace(/~/g, '~0').replace(/\//g, '~1')}/${method}/parameters/${at}/schema`);
}

let sim: Sim;
withFreshSim((fresh) => (sim = fresh));

/** Expects the server and the schema to agree: both refuse the value, or both take it. */
function agree(label: string, status: number, valid: boolean, refused: boolean): void {
  expect({ label, server: status === 400 ? 'refuses' : status === 200 ? 'takes' : status, schema: valid ? 'takes' : 'refuses' }).toEqual({
    label,
    server: refused ? 'refuses' : 'takes',
    schema: refused ? 'refuses' : 'takes',
  });
}

describe('openapi.yaml is as strict as the server', () => {
  it('POST /_sim/clock/advance: exactly one of seconds and to ({} and both are refused)', async () => {
    const validate = schema('/components/schemas/SimAdvanceRequest');
    const cases: [Record<string, unknown>, boolean][] = [
      [{}, true],
      [{ seconds: 1, to: '2026-01-01T00:10:00.000Z' }, true],
      [{ api_key: 'sk_test_alice' }, true],
      [{ seconds: 1 }, false],
      [{ to: '2026-01-01T00:10:00.000Z' }, false],
      [{ seconds: 0, api_key: 'sk_test_alice' }, false],
    ];
    for (const [body, refused] of cases) {
      const res = await request(sim.app).post('/_sim/clock/advance').send(body);
      agree(JSON.stringify(body), res.status, validate(body), refused);
    }
  });

  it("POST /_sim/faults: the path is a /v1 route's shape or a /cdn/ path, and api_key is not empty", async () => {
    const validate = schema('/components/schemas/SimFaultRequest');
    const cases: [Record<string, unknown>, boolean][] = [
      [{ path: '/x', status: 500 }, true],
      [{ path: '/v2/*', status: 500 }, true],
      [{ path: '/_sim/health', status: 500 }, true],
      [{ path: '/cdnx/*', network: 'reset' }, true],
      [{ path: '/c*', status: 500 }, true],
      [{ path: '/v1', status: 500 }, true],
      [{ path: '/v1/videos', status: 500, api_key: '' }, true],
      [{ path: '/v1/videos', status: 500 }, false],
      [{ path: '/v1/videos/*', status: 500 }, false],
      [{ path: '/v1*', status: 500 }, false],
      [{ path: '/v*', status: 500 }, false],
      [{ path: '/*', status: 500 }, false],
      [{ path: '/cdn/*', network: 'reset' }, false],
      [{ path: '/v1/videos', status: 500, api_key: 'sk_test_alice' }, false],
    ];
    for (const [body, refused] of cases) {
      const res = await postFault(sim, body);
      agree(JSON.stringify(body), res.status, validate(body), refused);
    }
  });

  it('GET /_sim/generations: an empty after is refused', async () => {
    const validate = queryParameter('/_sim/generations', 'get', 'after');
    agree('after=', (await request(sim.app).get('/_sim/generations?after=')).status, validate(''), true);
  });
});
