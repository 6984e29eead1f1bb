/**
 * The error catalogue (src/core/errors.ts) against openapi.yaml and the documents: the same codes,
 * the section-7.2 status of each type, every code the simulator documents, the error responses each /v1
 * operation documents, and closed response schemas.
 */
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { ERROR_CATALOGUE, openapiPath } from '../src/index.js';

type Json = Record<string, unknown>;

const doc = parse(readFileSync(openapiPath, 'utf8')) as Json;

/** Resolves a local `$ref` ("#/components/...") against the document. */
function resolve(node: unknown): unknown {
  let current = node;
  const seen = new Set<string>();
  while (isObject(current) && typeof current.$ref === 'string') {
    const ref = current.$ref;
    if (seen.has(ref)) throw new Error(`circular $ref ${ref}`);
    seen.add(ref);
    if (!ref.startsWith('#/')) throw new Error(`non-local $ref ${ref}`);
    current = ref
      .slice(2)
      .split('/')
      .map((s) => s.replaceAll('~1', '/').replaceAll('~0', '~'))
      .reduce<unknown>((at, key) => (isObject(at) ? at[key] : undefined), doc);
    if (current === undefined) throw new Error(`unresolvable $ref ${ref}`);
  }
  return current;
}

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const components = doc.components as Json;
const schemas = components.schemas as Json;
const paths = doc.paths as Record<string, Json>;
const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options', 'trace'];

function operations(prefix: string): { method: string; path: string; op: Json }[] {
  const out: { method: string; path: string; op: Json }[] = [];
  for (const [path, item] of Object.entries(paths)) {
    if (!path.startsWith(prefix)) continue;
    for (const method of HTTP_METHODS) {
      const op = item[method];
      if (isObject(op)) out.push({ method: method.toUpperCase(), path, op });
    }
  }
  return out;
}

/** Section 7.2 of the interface document: the HTTP status of each error type. */
const SECTION_7_2: Record<string, number> = {
  invalid_request_error: 400,
  authentication_error: 401,
  insufficient_balance: 402,
  compliance_error: 422,
  rate_limit_error: 429,
  api_error: 500,
};

/** The simulator's own error type, beside section 7.2's: its access checks (docs/security.md). */
const SIMULATOR_TYPES: Record<string, number> = {
  permission_error: 403,
};

/** The status of every error type. */
const STATUS_OF: Record<string, number> = { ...SECTION_7_2, ...SIMULATOR_TYPES };

/**
 * The documented exceptions: 404 for an unknown id or route (openapi.yaml, ServiceNotFound); 412 and 416 for
 * the preconditions and ranges of media and dashboard files, 417 for an `Expect` (docs/http.md); 421 for
 * a control call that names no account or whose key the proxy in front of shards cannot read, and for
 * a key sent to a shard it does not belong to (docs/scaling.md).
 */
const STATUS_EXCEPTIONS: Record<string, number> = {
  resource_not_found: 404,
  unknown_route: 404,
  precondition_failed: 412,
  range_not_satisfiable: 416,
  expectation_failed: 417,
  sharded_global_call: 421,
  unroutable_api_key: 421,
  wrong_shard: 421,
  simulator_closed: 503,
};

/** The codes the simulator promises (docs/errors.md). */
const CONTRACT_CODES = [
  'missing_parameter',
  'invalid_parameter',
  'unknown_parameter',
  'invalid_json',
  'model_not_found',
  'keyframe_not_found',
  'resource_not_found',
  'not_cancelable',
  'idempotency_key_reused',
  'missing_api_key',
  'invalid_api_key',
  'revoked_api_key',
  'insufficient_balance',
  'claim_linking_rejected',
  'output_rejected',
  'rate_limit_exceeded',
  'internal_error',
  'unknown_route',
  'request_too_large',
  'invalid_request',
  'unsupported_content_type',
] as const;

/** The type each contract code must have, from the interface document and docs/errors.md. */
const CONTRACT_TYPES: Record<(typeof CONTRACT_CODES)[number], string> = {
  missing_parameter: 'invalid_request_error',
  invalid_parameter: 'invalid_request_error',
  unknown_parameter: 'invalid_request_error',
  invalid_json: 'invalid_request_error',
  model_not_found: 'invalid_request_error',
  keyframe_not_found: 'invalid_request_error',
  resource_not_found: 'invalid_request_error',
  not_cancelable: 'invalid_request_error',
  idempotency_key_reused: 'invalid_request_error',
  missing_api_key: 'authentication_error',
  invalid_api_key: 'authentication_error',
  revoked_api_key: 'authentication_error',
  insufficient_balance: 'insufficient_balance',
  claim_linking_rejected: 'compliance_error',
  output_rejected: 'compliance_error',
  rate_limit_exceeded: 'rate_limit_error',
  internal_error: 'api_error',
  unknown_route: 'invalid_request_error',
  request_too_large: 'invalid_request_error',
  invalid_request: 'invalid_request_error',
  unsupported_content_type: 'invalid_request_error',
};

const catalogue = ERROR_CATALOGUE as Record<string, { type: string; status: number; message: string }>;

// ---------------------------------------------------------------------------------------------------
describe('ERROR_CATALOGUE and openapi.yaml ErrorCode', () => {
  const errorCode = resolve(schemas.ErrorCode) as Json;
  const enumValues = errorCode.enum as string[];

  it('ErrorCode is a string enum without duplicates', () => {
    expect(errorCode.type).toBe('string');
    expect(Array.isArray(enumValues)).toBe(true);
    expect(new Set(enumValues).size).toBe(enumValues.length);
  });

  it('every catalogue code is in the ErrorCode enum', () => {
    const missing = Object.keys(ERROR_CATALOGUE).filter((c) => !enumValues.includes(c));
    expect(missing).toEqual([]);
  });

  it('every ErrorCode enum value is in the catalogue', () => {
    const extra = enumValues.filter((c) => !Object.prototype.hasOwnProperty.call(ERROR_CATALOGUE, c));
    expect(extra).toEqual([]);
  });

  it('every error object schema takes its code from ErrorCode', () => {
    for (const name of ['InvalidRequestError', 'AuthenticationError', 'InsufficientBalanceError', 'PermissionError', 'ComplianceError', 'RateLimitError', 'ApiError']) {
      const schema = resolve(schemas[name]) as Json;
      const code = (schema.properties as Json).code as Json;
      expect(code.$ref, name).toBe('#/components/schemas/ErrorCode');
    }
  });
});

describe('ERROR_CATALOGUE statuses (section 7.2)', () => {
  it.each(Object.keys(ERROR_CATALOGUE))('%s has the status of its type, or its documented exception', (code) => {
    const entry = catalogue[code]!;
    expect(Object.keys(STATUS_OF)).toContain(entry.type);
    const expected = STATUS_EXCEPTIONS[code] ?? STATUS_OF[entry.type];
    expect(entry.status).toBe(expected);
  });

  it('the documented exceptions are invalid_request_error with 404 (resource_not_found, unknown_route), 412 (precondition_failed), 416 (range_not_satisfiable) and 417 (expectation_failed)', () => {
    expect(catalogue.resource_not_found).toMatchObject({ type: 'invalid_request_error', status: 404 });
    expect(catalogue.unknown_route).toMatchObject({ type: 'invalid_request_error', status: 404 });
    expect(catalogue.precondition_failed).toMatchObject({ type: 'invalid_request_error', status: 412 });
    expect(catalogue.range_not_satisfiable).toMatchObject({ type: 'invalid_request_error', status: 416 });
    expect(catalogue.expectation_failed).toMatchObject({ type: 'invalid_request_error', status: 417 });
  });

  it('no other code departs from its type status', () => {
    const departing = Object.entries(catalogue)
      .filter(([, e]) => e.status !== STATUS_OF[e.type])
      .map(([c]) => c)
      .sort();
    expect(departing).toEqual(Object.keys(STATUS_EXCEPTIONS).sort());
  });

  it('every entry has a non-empty default message', () => {
    for (const [code, entry] of Object.entries(catalogue)) {
      expect(typeof entry.message, code).toBe('string');
      expect(entry.message.trim().length, code).toBeGreaterThan(0);
    }
  });
});

describe('ERROR_CATALOGUE against the documented codes', () => {
  it.each(CONTRACT_CODES)('%s (a documented code) is in the catalogue', (code) => {
    expect(Object.prototype.hasOwnProperty.call(ERROR_CATALOGUE, code)).toBe(true);
  });

  it.each(CONTRACT_CODES)('%s has the type the documents give it', (code) => {
    expect(catalogue[code]?.type).toBe(CONTRACT_TYPES[code]);
  });
});

// ---------------------------------------------------------------------------------------------------
describe('openapi.yaml /v1 operations', () => {
  const v1 = operations('/v1/');
  const COMMON = ['400', '401', '404', '429', '500'];
  /** The error type each status's response schema must carry. */
  const TYPE_OF_STATUS: Record<string, string> = {
    '400': 'invalid_request_error',
    '401': 'authentication_error',
    '402': 'insufficient_balance',
    '403': 'permission_error',
    '404': 'invalid_request_error',
    '421': 'invalid_request_error',
    '422': 'compliance_error',
    '429': 'rate_limit_error',
    '500': 'api_error',
  };

  it('the /v1 operations are the five of the interface document, no more', () => {
    expect(v1.map((o) => `${o.method} ${o.path}`).sort()).toEqual(
      ['DELETE /v1/videos/{id}', 'GET /v1/videos', 'GET /v1/videos/{id}', 'POST /v1/images', 'POST /v1/videos'].sort(),
    );
  });

  it.each(v1.map((o) => [`${o.method} ${o.path}`, o.op] as const))('%s documents 400, 401, 404, 429 and 500', (_name, op) => {
    const responses = op.responses as Json;
    for (const status of COMMON) expect(Object.keys(responses), status).toContain(status);
  });

  it.each(v1.filter((o) => o.method === 'POST').map((o) => [`${o.method} ${o.path}`, o.op] as const))(
    'the create %s also documents 402 and 422',
    (_name, op) => {
      const responses = op.responses as Json;
      expect(Object.keys(responses)).toEqual(expect.arrayContaining(['402', '422']));
    },
  );

  it.each(v1.map((o) => [`${o.method} ${o.path}`, o.op] as const))(
    "%s: each error response's schema is the section-7 shape of the status's type",
    (_name, op) => {
      for (const [status, raw] of Object.entries(op.responses as Json)) {
        if (status.startsWith('2')) continue;
        const response = resolve(raw) as Json;
        const schema = resolve(((response.content as Json)['application/json'] as Json).schema) as Json;
        expect(schema.required, status).toEqual(['error']);
        const error = resolve((schema.properties as Json).error) as Json;
        const type = resolve((error.properties as Json).type) as Json;
        expect(type.const, status).toBe(TYPE_OF_STATUS[status]);
        const props = Object.keys(error.properties as Json);
        const required = error.required as string[];
        if (TYPE_OF_STATUS[status] === 'invalid_request_error') expect(required, status).toContain('param');
        else expect(props, status).not.toContain('param');
        if (TYPE_OF_STATUS[status] === 'compliance_error') expect(required, status).toContain('stage');
        else expect(props, status).not.toContain('stage');
      }
    },
  );

  it('429 responses document Retry-After', () => {
    for (const { method, path, op } of v1) {
      const response = resolve((op.responses as Json)['429']) as Json;
      expect(Object.keys(response.headers as Json), `${method} ${path}`).toContain('Retry-After');
    }
  });
});

// ---------------------------------------------------------------------------------------------------
/**
 * Walks a response schema and lists every object schema that is open (neither
 * `additionalProperties: false` nor `unevaluatedProperties: false`). Subschemas of `allOf`, `oneOf`
 * and `anyOf` inside a closed schema are evaluated by it, so they count as closed; the properties
 * and items below them are walked on their own.
 */
function openObjects(schema: unknown, where: string, closedByParent = false, seen = new Set<unknown>()): string[] {
  const node = resolve(schema);
  const ref = isObject(schema) && typeof schema.$ref === 'string' ? ` (${schema.$ref})` : '';
  if (!isObject(node)) return [];
  const key = `${closedByParent}`;
  const visitKey = { node, key };
  for (const v of seen) if (isObject(v) && v.node === node && v.key === key) return [];
  seen.add(visitKey);

  const problems: string[] = [];
  const types = Array.isArray(node.type) ? node.type : node.type === undefined ? [] : [node.type];
  const isObjectSchema = types.includes('object') || isObject(node.properties);
  const closed = node.additionalProperties === false || node.unevaluatedProperties === false;
  if (isObjectSchema && !closed && !closedByParent) problems.push(`${where}${ref}`);

  for (const applicator of ['allOf', 'oneOf', 'anyOf'] as const) {
    const list = node[applicator];
    if (Array.isArray(list)) {
      list.forEach((sub, i) => problems.push(...openObjects(sub, `${where}.${applicator}[${i}]`, closed || closedByParent, seen)));
    }
  }
  if (isObject(node.properties)) {
    for (const [name, sub] of Object.entries(node.properties)) problems.push(...openObjects(sub, `${where}.${name}`, false, seen));
  }
  if (node.items !== undefined) problems.push(...openObjects(node.items, `${where}[]`, false, seen));
  if (isObject(node.additionalProperties)) problems.push(...openObjects(node.additionalProperties, `${where}{*}`, false, seen));
  return problems;
}

describe('openapi.yaml response schemas are closed', () => {
  const ops = [...operations('/v1/'), ...operations('/_sim/')];
  const cases: [string, unknown][] = [];
  for (const { method, path, op } of ops) {
    for (const [status, raw] of Object.entries(op.responses as Json)) {
      const response = resolve(raw) as Json;
      const content = response.content as Json | undefined;
      if (!content) continue;
      for (const [mediaType, media] of Object.entries(content)) {
        // The one deliberate exception: GET /_sim/scenario echoes the resolved scenario, whose
        // format is the scenario file's (validated by its own JSON schema in src/core/scenario/scenario.ts
        // and documented in docs/scenarios.md), not restated in the contract.
        if (path === '/_sim/scenario' && status === '200') continue;
        cases.push([`${method} ${path} ${status} ${mediaType}`, (media as Json).schema]);
      }
    }
  }

  it('there are response schemas under both /v1 and /_sim to check', () => {
    expect(cases.some(([n]) => n.includes(' /v1/'))).toBe(true);
    expect(cases.some(([n]) => n.includes(' /_sim/'))).toBe(true);
  });

  it.each(cases)('%s has additionalProperties or unevaluatedProperties false on every object, nested ones too', (name, schema) => {
    expect(openObjects(schema, name)).toEqual([]);
  });

  it('the walker itself flags an open nested object and accepts a closed allOf', () => {
    const open = { type: 'object', additionalProperties: false, properties: { inner: { type: 'object', properties: { a: {} } } } };
    expect(openObjects(open, 'x')).toEqual(['x.inner']);
    const closedAllOf = { allOf: [{ type: 'object', properties: { a: { type: 'string' } } }], unevaluatedProperties: false };
    expect(openObjects(closedAllOf, 'y')).toEqual([]);
    expect(openObjects({ allOf: [{ type: 'object', properties: {} }] }, 'z')).toEqual(['z.allOf[0]']);
  });
});
