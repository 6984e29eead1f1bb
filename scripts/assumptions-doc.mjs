// Writes docs/assumptions.md, the list of the simulator's assumptions about the real service, from
// the one place they are stated: the `Simulator assumption:` descriptions in openapi.yaml and the
// `x-sim-assumption` ids beside them (in the order of that file), with what `sim drift` does about
// each id (from the built drift check's probe table, dist/drift/probes.js: run `npm run build` first).
//
//   node scripts/assumptions-doc.mjs                   writes docs/assumptions.md
//   node scripts/assumptions-doc.mjs --check           exit 1 when docs/assumptions.md is not what it would write
//   node scripts/assumptions-doc.mjs --out FILE [...]  another file instead of docs/assumptions.md
//
// `npm run docs:assumptions` builds, then writes the page; test/assumptions-doc.test.ts runs --check.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const MARK = 'Simulator assumption:';
/** The mark where an assumption starts (not a mention of the mark in bold, as in `info`). */
const MARK_AT = /(?<!\*\*)Simulator assumption:/;
const WIDTH = 100;

/** Every node of the document that carries `x-sim-assumption`, in document order, with its path. */
export function markedNodes(document) {
  const found = [];
  (function walk(node, path) {
    if (Array.isArray(node)) return node.forEach((value, i) => walk(value, [...path, i]));
    if (node === null || typeof node !== 'object') return;
    if (node['x-sim-assumption'] !== undefined) found.push({ path, node, ids: [].concat(node['x-sim-assumption']).map(String) });
    for (const [key, value] of Object.entries(node)) walk(value, [...path, key]);
  })(document, []);
  return found;
}

/** Where in openapi.yaml a marked node is, in words. */
function placeOf(path, node) {
  const [top, a, b, c, d] = path;
  if (top === 'info') return 'The service (`info`)';
  if (top === 'paths') {
    const operation = `\`${String(b).toUpperCase()} ${a}\``;
    if (c === undefined) return operation;
    if (c === 'responses') return `${operation}, response ${d}`;
    if (c === 'parameters') return `${operation}, parameter \`${node.name}\``;
    return `${operation}, ${path.slice(2).join('.')}`;
  }
  if (top === 'components') {
    const rest = path.slice(3).filter((p) => p !== 'properties');
    const name = [b, ...rest].join('.');
    switch (a) {
      case 'securitySchemes':
        return `Authentication (\`${b}\`)`;
      case 'parameters':
        return `Parameter \`${node.name ?? b}\``;
      case 'headers':
        return `Header \`${b}\``;
      case 'responses':
        return `Response \`${b}\``;
      case 'schemas':
        return rest.length ? `Field \`${name}\`` : `Schema \`${b}\``;
    }
  }
  return `\`${path.join('.')}\``;
}

/** Words wrapped at WIDTH columns. */
function wrap(text) {
  const lines = [];
  let line = '';
  for (const word of text.split(/\s+/).filter(Boolean)) {
    if (line && line.length + 1 + word.length > WIDTH) {
      lines.push(line);
      line = word;
    } else line = line ? `${line} ${word}` : word;
  }
  if (line) lines.push(line);
  return lines.join('\n');
}

/** The assumption part of a description (from "Simulator assumption:" on), paragraphs rewrapped. */
function assumptionText(description, where) {
  const at = typeof description === 'string' ? description.search(MARK_AT) : -1;
  if (at < 0) throw new Error(`openapi.yaml: ${where} has x-sim-assumption but no "${MARK}" in its description`);
  return description
    .slice(at + MARK.length)
    .trim()
    .split(/\n\s*\n/)
    .map((paragraph, i) => wrap(i === 0 ? `${paragraph.charAt(0).toUpperCase()}${paragraph.slice(1)}` : paragraph))
    .join('\n\n');
}

/** What `sim drift` does about an assumption, from its probe table entry. */
function driftCheck(entry) {
  if (entry.notObserved !== undefined) return `not observed by \`sim drift\`: ${entry.notObserved}`;
  const by = entry.observedBy.join(' ');
  if (/free probe/.test(by)) return 'put to the service by `sim drift`';
  if (/paid/.test(by)) return 'put to the service by a paid probe of `sim drift` (within `--spend-limit-cents`)';
  if (/every answer/.test(by)) return 'checked by `sim drift` on every answer it gets (observed when an answer shows it)';
  return 'seen by `sim drift` only on videos the account already has';
}

/**
 * The page, from openapi.yaml's text and the drift check's probe table (`[{ id, observedBy,
 * notObserved? }]`, `probeTable()` of src/drift/probes.ts).
 */
export function renderAssumptionsPage(openapiText, driftTable) {
  const drift = new Map(driftTable.map((a) => [a.id, a]));
  const sections = markedNodes(parse(openapiText)).map(({ path, node, ids }) => {
    const place = placeOf(path, node);
    const rows = ids.map((id) => {
      const entry = drift.get(id);
      if (!entry) throw new Error(`openapi.yaml: assumption ${id} is not in the drift table (src/drift/assumptions.yaml)`);
      return `- <a id="${id}"></a>\`${id}\`: ${driftCheck(entry)}.`;
    });
    return `## ${place}\n\n${assumptionText(node.description, place)}\n\n${rows.join('\n')}\n`;
  });
  const count = sections.length;
  return `# The simulator's assumptions

<!-- Generated from openapi.yaml by scripts/assumptions-doc.mjs (npm run docs:assumptions); do not edit. -->

Where the service's interface document is silent, the simulator still has to answer, so it fills
the gap with an assumption: a bet about what the real service does, which the real service may
answer differently. Each is stated once, in [\`openapi.yaml\`](../openapi.yaml), as a description
that says **Simulator assumption:**, with a stable id in the extension \`x-sim-assumption\`
beside it. This page lists them in the order of that file (${count} places), each id with what
[\`sim drift\`](drift.md) does about it: put to a real service, or why it cannot be observed
cheaply.

${sections.join('\n')}`;
}

async function main(args) {
  const check = args.includes('--check');
  const outAt = args.indexOf('--out');
  const out = outAt >= 0 ? args[outAt + 1] : `${ROOT}docs/assumptions.md`;
  if (!out) throw new Error('--out needs a file');
  const built = `${ROOT}dist/drift/probes.js`;
  if (!existsSync(built)) throw new Error(`${built} is missing: run "npm run build" first`);
  const { probeTable } = await import(new URL('../dist/drift/probes.js', import.meta.url).href);
  const page = renderAssumptionsPage(readFileSync(`${ROOT}openapi.yaml`, 'utf8'), probeTable());
  if (!check) {
    writeFileSync(out, page);
    return 0;
  }
  const current = existsSync(out) ? readFileSync(out, 'utf8') : '';
  if (current === page) return 0;
  process.stderr.write(`${out} is not up to date with openapi.yaml: run "npm run docs:assumptions" and commit it.\n`);
  return 1;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (e) => {
      process.stderr.write(`assumptions-doc: ${e.message}\n`);
      process.exit(2);
    },
  );
}
