// Build step: compiles openapi.yaml into what the simulator needs at run time, so that it never
// parses or compiles the contract when it starts:
//
//   src/generated/contract.cjs   Ajv standalone validators and the operation table (and the same
//   dist/generated/contract.cjs  beside the compiled code that loads it)
//
// Per operation (keyed by operationId) the module exports
//   <op>_params(object)   path parameters, query parameters and request headers, as
//                         { path: {...}, query: {...}, headers: {...} }
//   <op>_body(body)       the JSON request body (operations with one)
//   <op>_<status>(body)   each documented JSON response
// and `operations`: [{ method, path, operationId, statuses, bodyFields, integerQuery, headers,
// responseHeaders: { <status>: [required header names] } }].
//
// Run by `npm run build` (and so by `prepare` and `pretest`).
import { createRequire } from 'node:module';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { parse } from 'yaml';
import { openapiDocument } from './openapi-document.mjs';

const require = createRequire(import.meta.url);
const Ajv2020 = require('ajv/dist/2020').default;
const standaloneCode = require('ajv/dist/standalone').default;
const addFormats = require('ajv-formats');
const { _ } = require('ajv/dist/compile/codegen');

const root = new URL('../', import.meta.url);
const document = parse(readFileSync(new URL('openapi.yaml', root), 'utf8'));
const DOC = 'openapi.json';
const METHODS = ['get', 'post', 'delete', 'put', 'patch'];

const { deref, parameters: parametersOf } = openapiDocument(document);
const pointerOf = (...keys) => `#/${keys.map((k) => String(k).replace(/~/g, '~0').replace(/\//g, '~1')).join('/')}`;
// Schemas inside parameters keep their `#/components/...` references: rebased onto the document's id.
const rebase = (schema) => JSON.parse(JSON.stringify(schema ?? {}).replace(/"\$ref":"#\//g, `"$ref":"${DOC}#/`));

/**
 * Two compilers: the request validators' errors carry the offending value and its schema (`verbose`,
 * for messages that name what was expected); the response validators' only say that an answer of
 * the simulator's own is wrong (a 500 and a log line), so they leave both out and are compiled from
 * the document without its prose (descriptions and examples), which keeps the compiled code small
 * enough for a page (`video-service-sim/msw`).
 */
const compiler = (verbose) =>
  new Ajv2020({
    strict: false,
    allErrors: true,
    verbose,
    // The generated code requires ajv-formats' formats at load time (a dependency of the package).
    // `date-time` remembers the last text it found valid: answers check the same few instants again
    // and again (a video's `created_at` on every poll), and a format's verdict depends on the text
    // alone.
    code: {
      source: true,
      optimize: true,
      formats: _`((full) => {
      let valid;
      const dateTime = full["date-time"];
      return { ...full, "date-time": { ...dateTime, validate: (text) => text === valid || (dateTime.validate(text) && ((valid = text), true)) } };
    })(require("ajv-formats/dist/formats").fullFormats)`,
    },
  });
const PROSE = new Set(['description', 'examples', 'example', 'summary']);
const withoutProse = (node) => JSON.parse(JSON.stringify(node, (key, value) => ((PROSE.has(key) && typeof value !== 'object') || (key === 'examples' && Array.isArray(value)) || key.startsWith('x-') ? undefined : value)));
// The request validators keep the descriptions (some messages quote a field's), not the rest.
const withoutExtras = (node) => JSON.parse(JSON.stringify(node, (key, value) => ((key === 'examples' || key === 'example') && typeof value !== 'object') || (key === 'examples' && Array.isArray(value)) || key.startsWith('x-') ? undefined : value));
const ajv = compiler(true);
addFormats(ajv);
ajv.addSchema(withoutExtras(document), DOC);
const responsesAjv = compiler(false);
addFormats(responsesAjv);
responsesAjv.addSchema(withoutProse(document), DOC);

const ids = {};
const responseIds = {};
const operations = [];

for (const [path, item] of Object.entries(document.paths)) {
  for (const method of METHODS) {
    const operation = item[method];
    if (!operation) continue;
    const op = operation.operationId;
    const parameters = parametersOf(item, operation);
    const group = (where, lower) => {
      const ps = parameters.filter((p) => p.in === where);
      const name = (p) => (lower ? p.name.toLowerCase() : p.name);
      return {
        type: 'object',
        properties: Object.fromEntries(ps.map((p) => [name(p), rebase(p.schema)])),
        required: ps.filter((p) => p.required).map(name),
      };
    };
    ajv.addSchema({
      $id: `params-${op}`,
      type: 'object',
      properties: {
        path: group('path', false),
        // Unknown query parameters are refused; unknown headers are not (HTTP carries many).
        query: { ...group('query', false), additionalProperties: false },
        headers: group('header', true),
      },
    });
    ids[`${op}_params`] = `params-${op}`;

    const requestBody = deref(operation.requestBody);
    const body = requestBody?.content?.['application/json'];
    if (body) {
      const pointer = operation.requestBody.$ref
        ? `${operation.requestBody.$ref}/content/application~1json/schema`
        : pointerOf('paths', path, method, 'requestBody', 'content', 'application/json', 'schema');
      ajv.addSchema({ $id: `body-${op}`, $ref: `${DOC}${pointer}` });
      ids[`${op}_body`] = `body-${op}`;
    }

    const statuses = [];
    const responseHeaders = {};
    for (const [status, reference] of Object.entries(operation.responses)) {
      const response = deref(reference);
      statuses.push(Number(status));
      responseHeaders[status] = Object.entries(response.headers ?? {})
        .filter(([, h]) => deref(h).required)
        .map(([name]) => name);
      if (!response.content?.['application/json']) continue;
      // A shared response (`#/components/responses/NotFound`) is compiled once for every operation that answers it.
      const shared = reference.$ref ? `response-${reference.$ref.split('/').pop()}` : undefined;
      const id = shared ?? `response-${op}-${status}`;
      if (!responsesAjv.getSchema(id)) {
        const pointer = reference.$ref
          ? `${reference.$ref}/content/application~1json/schema`
          : pointerOf('paths', path, method, 'responses', status, 'content', 'application/json', 'schema');
        responsesAjv.addSchema({ $id: id, $ref: `${DOC}${pointer}` });
      }
      responseIds[`${op}_${status}`] = id;
    }
    operations.push({
      method: method.toUpperCase(),
      path,
      operationId: op,
      statuses,
      bodyFields: Object.keys(deref(body?.schema)?.properties ?? {}),
      integerQuery: parameters.filter((p) => p.in === 'query' && deref(p.schema)?.type === 'integer').map((p) => p.name),
      headers: parameters.filter((p) => p.in === 'header').map((p) => p.name),
      responseHeaders,
    });
  }
}

const started = performance.now();
for (const id of Object.values(ids)) ajv.getSchema(id);
for (const id of Object.values(responseIds)) responsesAjv.getSchema(id);
const code = [
  '"use strict";',
  '// Generated by scripts/build-contract.mjs from openapi.yaml. Do not edit.',
  // Each compiler's code in a scope of its own: both name their functions validate1, validate2...
  `(() => {\n${standaloneCode(ajv, ids)}\n})();`,
  `(() => {\n${standaloneCode(responsesAjv, responseIds)}\n})();`,
  `module.exports.operations = ${JSON.stringify(operations)};`,
].join('\n');
// Its declaration: src/request-path/router.ts imports it, and types what it reads of it there.
const declaration = '// Generated by scripts/build-contract.mjs. Do not edit.\ndeclare const contract: Record<string, unknown>;\nexport = contract;\n';
for (const dir of ['src/generated/', 'dist/generated/']) {
  mkdirSync(new URL(dir, root), { recursive: true });
  writeFileSync(new URL(`${dir}contract.cjs`, root), code);
  writeFileSync(new URL(`${dir}contract.d.cts`, root), declaration);
}
if (process.argv.includes('--verbose')) {
  process.stdout.write(
    `contract: ${operations.length} operations, ${Object.keys(ids).length} validators compiled in ${(performance.now() - started).toFixed(0)} ms, ${(code.length / 1024).toFixed(0)} KB\n`,
  );
}
