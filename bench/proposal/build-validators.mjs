// The proposal of bench/README (issue 6), measured rather than argued: validators for every
// operation of openapi.yaml compiled ahead of time with Ajv (standalone code), instead of
// express-openapi-validator preparing them at start and walking its middlewares on every request.
// Bench-only: the simulator does not use this. `node bench/proposal/build-validators.mjs` writes
// bench/proposal/validators.generated.cjs from the built dist/openapi.json (`npm run build` first).
//
// Per operation (keyed by operationId) it exports:
//   <op>_request({ params, query }) with type coercion, unknown query parameters refused
//   <op>_body(body)                 without coercion (only for operations with a request body)
//   <op>_<status>(body)             one per documented JSON response
// and `operations`, a table of { method, path, operationId, statuses } the server routes from.
import { createRequire } from 'node:module';
import { readFileSync, writeFileSync } from 'node:fs';

const require = createRequire(import.meta.url);
const Ajv2020 = require('ajv/dist/2020').default;
const standaloneCode = require('ajv/dist/standalone').default;
const addFormats = require('ajv-formats');

const OUT = new URL('./validators.generated.cjs', import.meta.url);
const document = JSON.parse(readFileSync(new URL('../../dist/openapi.json', import.meta.url), 'utf8'));
const DOC = 'openapi.json';
const METHODS = ['get', 'post', 'delete', 'put', 'patch'];

const deref = (node) => {
  let n = node;
  while (n && n.$ref) n = n.$ref.slice(2).split('/').reduce((o, k) => o[k.replace(/~1/g, '/').replace(/~0/g, '~')], document);
  return n;
};
// Schemas inside the document keep their `#/components/...` references: they resolve against the
// document, which Ajv holds under the id `openapi.json`.
const pointerOf = (...keys) => `#/${keys.map((k) => String(k).replace(/~/g, '~0').replace(/\//g, '~1')).join('/')}`;

function compileAll(coerce) {
  const ajv = new Ajv2020({
    strict: false,
    allErrors: true,
    coerceTypes: coerce,
    code: { source: true, optimize: true },
  });
  addFormats(ajv);
  ajv.addSchema(document, DOC);
  return ajv;
}

const withCoercion = compileAll(true);
const plain = compileAll(false);
const coercedIds = {};
const plainIds = {};
const operations = [];

for (const [path, item] of Object.entries(document.paths)) {
  for (const method of METHODS) {
    const operation = item[method];
    if (!operation) continue;
    const op = operation.operationId;
    const parameters = [...(item.parameters ?? []), ...(operation.parameters ?? [])].map(deref);
    const group = (where) => {
      const ps = parameters.filter((p) => p.in === where);
      return {
        type: 'object',
        properties: Object.fromEntries(ps.map((p) => [p.name, p.schema])),
        required: ps.filter((p) => p.required).map((p) => p.name),
      };
    };
    const requestSchema = {
      $id: `request-${op}`,
      type: 'object',
      properties: {
        params: group('path'),
        query: { ...group('query'), additionalProperties: false },
      },
    };
    // Parameter schemas may hold document references: rewrite them to the document's id.
    const rebased = JSON.parse(JSON.stringify(requestSchema).replace(/"\$ref":"#\//g, `"$ref":"${DOC}#/`));
    withCoercion.addSchema(rebased);
    coercedIds[`${op}_request`] = rebased.$id;

    const body = deref(operation.requestBody)?.content?.['application/json'];
    if (body) {
      const id = `body-${op}`;
      const pointer = operation.requestBody.$ref
        ? `${operation.requestBody.$ref}/content/application~1json/schema`
        : pointerOf('paths', path, method, 'requestBody', 'content', 'application/json', 'schema');
      plain.addSchema({ $id: id, $ref: `${DOC}${pointer}` });
      plainIds[`${op}_body`] = id;
    }
    const statuses = [];
    for (const [status, response] of Object.entries(operation.responses)) {
      const content = deref(response).content?.['application/json'];
      if (!content) continue;
      const id = `response-${op}-${status}`;
      const pointer = response.$ref
        ? `${response.$ref}/content/application~1json/schema`
        : pointerOf('paths', path, method, 'responses', status, 'content', 'application/json', 'schema');
      plain.addSchema({ $id: id, $ref: `${DOC}${pointer}` });
      plainIds[`${op}_${status}`] = id;
      statuses.push(Number(status));
    }
    operations.push({ method: method.toUpperCase(), path, operationId: op, hasBody: Boolean(body), statuses });
  }
}

const started = performance.now();
for (const id of Object.values(coercedIds)) withCoercion.getSchema(id);
for (const id of Object.values(plainIds)) plain.getSchema(id);
const code = [
  '"use strict";',
  `const coerced = (() => { const module = { exports: {} }; const exports = module.exports; ${standaloneCode(withCoercion, coercedIds)}; return module.exports; })();`,
  `const plain = (() => { const module = { exports: {} }; const exports = module.exports; ${standaloneCode(plain, plainIds)}; return module.exports; })();`,
  'module.exports = { ...coerced, ...plain };',
  `module.exports.operations = ${JSON.stringify(operations)};`,
].join('\n');
writeFileSync(OUT, code);
process.stdout.write(
  `proposal: ${operations.length} operations, ${Object.keys(coercedIds).length + Object.keys(plainIds).length} validators compiled in ${(performance.now() - started).toFixed(0)} ms, ${(code.length / 1024).toFixed(0)} KB -> ${OUT.pathname}\n`,
);
