// dependency-cruiser: the "Layers" table of docs/architecture.md as rules. LAYERS below is the
// table, row by row: its `layer` and `folder` columns as they stand, and the layers its `may import`
// column names. test/dependency-layers.test.ts holds LAYERS to the table, so a change to one that
// the other does not follow fails the tests. Run: `npm run lint:deps` (it gives dependency-cruiser
// TypeScript 6.0's parser: scripts/typescript-6.mjs).

/**
 * @typedef {object} Layer
 * @property {string} layer - the table's `layer`
 * @property {string[]} folders - the table's `folder`: a folder ends with `/`, a module is a file
 * @property {string[] | 'everything above'} mayImport - the layers its `may import` names
 * @property {string[]} [typesOnly] - layers below it whose types only it may import (the request
 *   path's one exception)
 */

/** @type {Layer[]} */
const LAYERS = [
  {
    layer: 'helpers',
    folders: ['src/closestMatch.ts', 'src/host.ts', 'src/hostClock.ts', 'src/hostNames.ts', 'src/jsonType.ts', 'src/jsonLine.ts', 'src/fileLock.ts', 'src/fileNames.ts', 'src/lockHolder.ts', 'src/fileRows.ts', 'src/version.ts', 'src/version.browser.ts'],
    mayImport: [],
  },
  { layer: 'API types', folders: ['src/api-types.ts'], mayImport: [] },
  { layer: 'control client', folders: ['src/control-client/'], mayImport: ['API types', 'helpers'] },
  { layer: 'core', folders: ['src/core/'], mayImport: [] },
  { layer: 'runtime', folders: ['src/runtime/'], mayImport: [] },
  { layer: 'media', folders: ['src/media/'], mayImport: ['core', 'runtime', 'helpers'] },
  { layer: 'scenarios', folders: ['src/scenarios/'], mayImport: ['core', 'helpers'] },
  { layer: 'request path', folders: ['src/request-path/'], mayImport: ['core', 'runtime', 'helpers'], typesOnly: ['transcript', 'persistence'] },
  { layer: 'transcript', folders: ['src/transcript/'], mayImport: ['control client', 'request path', 'core', 'scenarios', 'helpers'] },
  { layer: 'persistence', folders: ['src/persistence/'], mayImport: ['request path', 'core', 'scenarios', 'transcript', 'helpers'] },
  { layer: 'HTTP adapter', folders: ['src/http/'], mayImport: 'everything above' },
  { layer: 'MSW adapter', folders: ['src/msw/'], mayImport: ['request path', 'core', 'media', 'scenarios', 'control client', 'transcript', 'helpers'] },
  { layer: 'drift check', folders: ['src/drift/'], mayImport: ['request path', 'core', 'helpers'] },
  { layer: 'deploy', folders: ['src/deploy/'], mayImport: ['core', 'control client', 'helpers', 'HTTP adapter'] },
  {
    layer: 'entry points',
    folders: ['src/index.ts', 'src/createSimulator.ts', 'src/cli.ts', 'src/commands/', 'src/openapi.ts', 'src/testcontainers.ts', 'src/matchers.ts'],
    mayImport: 'everything above',
  },
];

/** What the build writes from openapi.yaml (src/generated/): data any layer may read. */
const GENERATED = ['src/generated/'];

const escapeRegExp = (text) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
/** A regular expression matching the modules of `folders`. */
const pathOf = (folders) => `^(?:${folders.map((f) => (f.endsWith('/') ? escapeRegExp(f) : `${escapeRegExp(f)}$`)).join('|')})`;
const byName = new Map(LAYERS.map((l) => [l.layer, l]));
const foldersOf = (names) => names.flatMap((name) => byName.get(name).folders);
const allowed = (l, i) => (l.mayImport === 'everything above' ? LAYERS.slice(0, i).map((a) => a.layer) : l.mayImport);

/** @type {import('dependency-cruiser').IForbiddenRuleType[]} */
const layerRules = LAYERS.flatMap((l, i) => {
  const may = allowed(l, i);
  const rules = [
    {
      name: `layer: ${l.layer}`,
      comment: `${l.layer} imports only from itself, ${may.length ? may.join(', ') : 'no other layer'} (docs/architecture.md, "Layers")`,
      severity: 'error',
      from: { path: pathOf(l.folders) },
      to: { path: '^src/', pathNot: pathOf([...l.folders, ...foldersOf(may), ...foldersOf(l.typesOnly ?? []), ...GENERATED]) },
    },
  ];
  if (l.typesOnly) {
    rules.push({
      name: `layer: ${l.layer}, types only`,
      comment: `${l.layer} imports only types from ${l.typesOnly.join(', ')} (docs/architecture.md, "Layers")`,
      severity: 'error',
      from: { path: pathOf(l.folders) },
      to: { path: pathOf(foldersOf(l.typesOnly)), dependencyTypesNot: ['type-only'] },
    });
  }
  return rules;
});

const NO_NODE = 'Node built-ins are not imported here (docs/architecture.md, "Layers")';

module.exports = {
  forbidden: [
    ...layerRules,
    {
      name: 'in no layer',
      comment: 'every module of src/ is in a row of the "Layers" table of docs/architecture.md',
      severity: 'error',
      from: { path: '^src/', pathNot: pathOf([...LAYERS.flatMap((l) => l.folders), ...GENERATED]) },
      to: {},
    },
    {
      name: 'core: shared modules',
      comment: "the modules at src/core/'s top (the error catalogue, random streams, hash, paging, path patterns) are used by every concept of the core and import none of its folders (docs/architecture.md, \"The core's folders\")",
      severity: 'error',
      from: { path: '^src/core/[^/]+$' },
      to: { path: '^src/core/[^/]+/' },
    },
    { name: 'core: no Node built-in', comment: `the core: ${NO_NODE}`, severity: 'error', from: { path: '^src/core/' }, to: { dependencyTypes: ['core'] } },
    { name: 'MSW adapter: no Node built-in', comment: `the MSW adapter: ${NO_NODE}`, severity: 'error', from: { path: '^src/msw/' }, to: { dependencyTypes: ['core'] } },
    { name: 'browser twin: no Node built-in', comment: `a .browser.ts twin: ${NO_NODE}`, severity: 'error', from: { path: '[.]browser[.]ts$' }, to: { dependencyTypes: ['core'] } },
    {
      name: 'no cycle',
      comment: 'no module imports itself back, by any path, `import type` included (test/import-cycles.test.ts holds it too)',
      severity: 'error',
      from: { path: '^src/' },
      to: { circular: true },
    },
  ],
  options: {
    // npm packages and Node built-ins are in the graph (the built-in rules need them), not followed.
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    // `import()` of the modules the browser bundle's esbuild plugin makes (scripts/build-msw.mjs).
    exclude: { path: '^video-service-sim-' },
  },
};

// For test/dependency-layers.test.ts; not enumerable, so dependency-cruiser's configuration
// schema does not see it.
Object.defineProperty(module.exports, 'LAYERS', { value: LAYERS, enumerable: false });
