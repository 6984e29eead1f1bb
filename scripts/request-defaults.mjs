// Build step: generates src/generated/request-defaults.ts, the defaults of openapi.yaml's request
// fields (the `default:` of a query parameter's or a JSON body property's schema), by operationId.
// The core applies them from this table, so each default is written once, in openapi.yaml, and the
// request itself is kept as the client sent it (idempotency, the journal and the client report see
// what was sent). The file is not committed: `npm run build` and `npm run typecheck` write it first.
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { openapiDocument } from './openapi-document.mjs';
import { writeGenerated } from './write-generated.mjs';

const root = new URL('../', import.meta.url);
const document = parse(readFileSync(new URL('openapi.yaml', root), 'utf8'));
const target = new URL('src/generated/request-defaults.ts', root);
const { deref, parameters } = openapiDocument(document);

const defaults = {};
for (const item of Object.values(document.paths)) {
  for (const operation of Object.values(item)) {
    if (!operation?.operationId) continue;
    const fields = {};
    const add = (name, schema) => {
      const s = deref(schema);
      if (s?.default === undefined) return;
      if (Object.hasOwn(fields, name)) throw new Error(`${operation.operationId}: '${name}' has a default twice`);
      fields[name] = s.default;
    };
    for (const p of parameters(item, operation)) {
      if (p.in === 'query') add(p.name, p.schema);
    }
    const body = deref(deref(operation.requestBody)?.content?.['application/json']?.schema);
    for (const [name, schema] of Object.entries(body?.properties ?? {})) add(name, schema);
    if (Object.keys(fields).length > 0) defaults[operation.operationId] = fields;
  }
}

const text = `/**
 * The defaults of openapi.yaml's request fields, by operationId, generated at build time
 * (scripts/request-defaults.mjs). Not committed; do not edit: change openapi.yaml and rebuild.
 */
export const REQUEST_DEFAULTS = ${JSON.stringify(defaults, null, 2)} as const;
`;
writeGenerated(target, text);
