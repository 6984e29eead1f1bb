// Build step: src/drift/assumptions.yaml (what each of the simulator's assumptions says, and why
// the drift check cannot observe some) into src/generated/assumptions.json and
// dist/generated/assumptions.json, as a list in the order of openapi.yaml:
//
//   [{ "id": "pipeline-stages", "says": "...", "notObserved": "..." }, ...]
//
// Fails, naming the id, when the file and the `x-sim-assumption` ids of openapi.yaml differ (an id
// missing, extra or out of order) or an entry is not a `says` line with an optional `not_observed`.
// Run by `npm run build`.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { parse } from 'yaml';
import { markedNodes } from './assumptions-doc.mjs';

const root = new URL('../', import.meta.url);
const SOURCE = 'src/drift/assumptions.yaml';

function fail(message) {
  process.stderr.write(`${SOURCE}: ${message}\n`);
  process.exit(1);
}

/** The `x-sim-assumption` ids of openapi.yaml, in document order. */
function contractIds() {
  return markedNodes(parse(readFileSync(new URL('openapi.yaml', root), 'utf8'))).flatMap((node) => node.ids);
}

const table = parse(readFileSync(new URL(SOURCE, root), 'utf8'));
if (table === null || typeof table !== 'object' || Array.isArray(table)) fail('expected a map from assumption id to { says, not_observed }');
const expected = contractIds();
const listed = Object.keys(table);
for (const [i, id] of expected.entries()) {
  if (listed[i] === id) continue;
  fail(listed.includes(id) ? `${id} is out of order: openapi.yaml has it after ${expected[i - 1] ?? 'nothing'}` : `${id} (x-sim-assumption in openapi.yaml) is missing`);
}
if (listed.length > expected.length) fail(`${listed[expected.length]} is not an x-sim-assumption id of openapi.yaml`);

const assumptions = listed.map((id) => {
  const { says, not_observed: notObserved, ...rest } = table[id] ?? {};
  if (typeof says !== 'string' || says.trim() === '') fail(`${id}.says: expected a line saying what the simulator assumes`);
  if (notObserved !== undefined && (typeof notObserved !== 'string' || notObserved.trim() === '')) fail(`${id}.not_observed: expected a line saying why it cannot be observed`);
  const unknown = Object.keys(rest);
  if (unknown.length > 0) fail(`${id}.${unknown[0]}: unknown field (expected says and not_observed)`);
  return notObserved === undefined ? { id, says } : { id, says, notObserved };
});

const json = `${JSON.stringify(assumptions, null, 1)}\n`;
for (const dir of ['src/generated/', 'dist/generated/']) {
  mkdirSync(new URL(dir, root), { recursive: true });
  writeFileSync(new URL(`${dir}assumptions.json`, root), json);
}
