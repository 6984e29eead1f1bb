// Build step (after tsc and the scenario steps): the command line and the library as one ES module
// each, by esbuild, so that a start compiles one file instead of finding, reading and linking some
// hundred modules (and Node 20 no longer scans the 650 KB of compiled validators for their exports):
//
//   dist/index.js         the package's entry (src/index.ts) with everything it imports
//   dist/bundle/cli.js    the `sim` command (src/cli.ts) with everything it imports
//   dist/bundle/yaml.cjs  the `yaml` package as one file, loaded when a scenario file is first read
//   dist/cli.js           the bin: turns Node's compile cache on (module.enableCompileCache, Node 22.1
//                         and later; NODE_COMPILE_CACHE chooses its folder, NODE_DISABLE_COMPILE_CACHE=1
//                         turns it off), then imports bundle/cli.js
//
// each with its source map. tsc's own output stays beside them: the declarations the package's types
// name, and the modules the Testcontainers module and the scripts import. The bundles leave out, and
// load when first needed as the modules did, Express (the media and the dashboard), Ajv (a validator
// compiled at run time) and the files the modules find beside themselves (the bundled scenarios, the
// scenario file's validator, the contract's YAML, the dashboard, the clips): `import.meta.url` in
// each source is the URL its tsc output has, so every path, `createRequire` included, resolves as it
// did. What no first answer needs is run when first used: Node's built-in `crypto` and
// `child_process`, and the packages that make the PNGs (fflate, crc-32). Built-in modules are taken
// with `process.getBuiltinModule` rather than imported: an `import` of `node:http` reads every
// export of the module, and on Node 24 that loads undici (for its WebSocket export), about 25 ms.
// `__SIM_BUNDLE_ID__` is a hash of what was built, for the scenario files' cache
// (src/scenarios/fileReading.ts). What each of these took off a start: bench/README.md, "Start-up".
//
// `--metafile FILE` writes esbuild's metafile (what each input adds).
import { build } from 'esbuild';
import { builtinModules } from 'node:module';
import { createHash } from 'node:crypto';
import { chmodSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const src = join(root, 'src');
const dist = join(root, 'dist');

/**
 * `import.meta.url` in a source is the URL of its tsc output (dist/<path>.js), from the bundle's:
 * `up` is the way from the bundle's folder to dist/.
 */
const moduleUrls = (up) => ({
  name: 'module-urls',
  setup(b) {
    b.onLoad({ filter: /\.ts$/ }, (args) => {
      const text = readFileSync(args.path, 'utf8');
      if (!args.path.startsWith(src) || !text.includes('import.meta.url')) return undefined;
      const emitted = `${up}${relative(src, args.path).replace(/\.ts$/, '.js')}`;
      return { contents: text.replaceAll('import.meta.url', `new URL(${JSON.stringify(emitted)}, import.meta.url).href`), loader: 'ts' };
    });
  },
});

/**
 * Node's built-in modules over `process.getBuiltinModule`, never through an ES module import. The
 * project's own imports of one (`import { readFileSync } from 'node:fs'`) take the names they
 * import from a module that reads just those off it; the bundled CommonJS packages' `require` gets
 * the module itself. The modules of `LAZY`, which no first answer needs, are loaded when first
 * used: a function imported from one (lower-case, not a class) calls through to it, and a package
 * gets a proxy of it (commander's `child_process`, for its executable subcommands; seedrandom's
 * `crypto`, for a seed of its own choosing, which the simulator never asks for).
 */
const LAZY = new Set(['node:crypto', 'node:child_process']);
const builtins = {
  name: 'builtins',
  setup(b) {
    const names = new Set(builtinModules);
    const imported = namesImportedFromBuiltins();
    b.onResolve({ filter: /^(node:)?[a-z_/]+$/ }, (args) => {
      const name = args.path.replace(/^node:/, '');
      if (!names.has(name) && !args.path.startsWith('node:')) return undefined;
      const own = args.kind === 'import-statement' && args.importer.startsWith(src);
      return { path: `node:${name}`, namespace: own ? 'builtin-names' : 'builtin' };
    });
    b.onLoad({ filter: /.*/, namespace: 'builtin' }, ({ path }) => ({
      contents: LAZY.has(path)
        ? `let m; const load = () => (m ??= process.getBuiltinModule(${JSON.stringify(path)}));
module.exports = new Proxy({}, {
  get: (_, key) => load()[key],
  has: (_, key) => key in load(),
  ownKeys: () => Reflect.ownKeys(load()),
  getOwnPropertyDescriptor: (_, key) => { const d = Reflect.getOwnPropertyDescriptor(load(), key); return d && { ...d, configurable: true }; },
});`
        : `module.exports = process.getBuiltinModule(${JSON.stringify(path)});`,
      loader: 'js',
    }));
    b.onLoad({ filter: /.*/, namespace: 'builtin-names' }, ({ path }) => {
      const wanted = [...(imported.get(path) ?? [])];
      const actual = process.getBuiltinModule(path);
      const callable = (n) => /^[a-z]/.test(n) && typeof actual[n] === 'function';
      const lazy = LAZY.has(path) && wanted.every(callable);
      const lines = lazy
        ? [
            `let m; const load = () => (m ??= process.getBuiltinModule(${JSON.stringify(path)}));`,
            ...wanted.map((n) => `export function ${n}(...args) { return load().${n}(...args); }`),
          ]
        : [`const m = process.getBuiltinModule(${JSON.stringify(path)});`, 'export default m;', ...wanted.map((n) => `export const ${n} = m.${n};`)];
      return { contents: lines.join('\n'), loader: 'js' };
    });
  },
};

/**
 * The packages that make the PNGs, loaded with the first one (a media file, never a first create):
 * fflate (its browser build: the same code for the synchronous compression the PNGs use, without
 * the node build's `worker_threads`, loaded at import for its asynchronous functions) and crc-32.
 * Both build tables when they load, a few milliseconds at start otherwise. Each is bundled as it
 * is, behind a module whose functions load it on first call (`require` inside a function: esbuild
 * bundles the package and runs it then).
 */
const LAZY_PACKAGES = {
  fflate: join(root, 'node_modules', 'fflate', 'esm', 'browser.js'),
  'crc-32': join(root, 'node_modules', 'crc-32', 'crc32.js'),
};
const lazyPackages = {
  name: 'lazy-packages',
  setup(b) {
    const imported = namesImported(Object.keys(LAZY_PACKAGES));
    const filter = new RegExp(`^(${Object.keys(LAZY_PACKAGES).map((n) => n.replace(/[-/.]/g, '\\$&')).join('|')})$`);
    b.onResolve({ filter }, (args) =>
      args.importer.startsWith(src) && args.kind === 'import-statement' ? { path: args.path, namespace: 'lazy-package' } : undefined,
    );
    b.onLoad({ filter: /.*/, namespace: 'lazy-package' }, ({ path }) => {
      const { names, defaultImport } = imported.get(path);
      const lines = [
        `let m; const load = () => (m ??= require(${JSON.stringify(LAZY_PACKAGES[path])}));`,
        ...[...names].map((n) => `export function ${n}(...args) { return load().${n}(...args); }`),
        ...(defaultImport ? ['export default new Proxy({}, { get: (_, key) => load()[key] });'] : []),
      ];
      return { contents: lines.join('\n'), loader: 'js', resolveDir: root };
    });
  },
};

/** Each built-in module's names that the sources import (`node:fs` → readFileSync, ...). */
function namesImportedFromBuiltins() {
  const imported = new Map();
  for (const [from, { names }] of namesImported()) {
    if (!/^[a-z_/:]+$/.test(from) || (!from.startsWith('node:') && !builtinModules.includes(from))) continue;
    const key = `node:${from.replace(/^node:/, '')}`;
    imported.set(key, new Set([...(imported.get(key) ?? []), ...names]));
  }
  return imported;
}

/**
 * What the sources import of each module (`import x, { a, b as c } from 'm'`, types left out):
 * `names` the named imports, `defaultImport` whether one takes its default. Only `modules`, if given.
 */
function namesImported(modules) {
  const imported = new Map();
  const sources = readdirSync(src, { recursive: true }).filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts') && !f.endsWith('.browser.ts'));
  for (const file of sources) {
    for (const [, clause, from] of readFileSync(join(src, file), 'utf8').matchAll(/^import\s+(?!type\s)([^;]*?)\s+from\s+'([^']+)'/gm)) {
      if (modules && !modules.includes(from)) continue;
      const entry = imported.get(from) ?? { names: new Set(), defaultImport: false };
      imported.set(from, entry);
      if (/^[\w$]+/.test(clause.trim())) entry.defaultImport = true;
      for (const spec of /\{([^}]*)\}/.exec(clause)?.[1].split(',') ?? []) {
        const name = spec.trim().split(/\s+as\s+/)[0];
        if (name && !name.startsWith('type ')) entry.names.add(name);
      }
    }
  }
  for (const name of modules ?? []) if (!imported.has(name)) imported.set(name, { names: new Set(), defaultImport: false });
  return imported;
}

/**
 * What the bundles were built from, as a hash: every source, the scenario file's validator and the
 * `yaml` package's version. The scenario files' cache keys on it (src/scenarios/fileReading.ts).
 */
function bundleId() {
  const hash = createHash('sha256');
  const files = readdirSync(src, { recursive: true }).filter((f) => statSync(join(src, f)).isFile()).sort();
  for (const file of files) hash.update(`${file}\0`).update(readFileSync(join(src, file))).update('\0');
  hash.update(readFileSync(join(dist, 'scenarios', 'scenario-schema.cjs')));
  hash.update(readFileSync(join(root, 'node_modules', 'yaml', 'package.json')));
  return hash.digest('hex').slice(0, 32);
}

const options = {
  bundle: true,
  format: 'esm',
  platform: 'node',
  target: ['node20'],
  // Loaded on first use, from node_modules, as before (and never bundled should one be imported).
  external: ['express', 'yaml', 'testcontainers', 'msw'],
  // Whitespace and syntax only: names stay as written, for stack traces; the maps give the places.
  minifyWhitespace: true,
  minifySyntax: true,
  sourcemap: true,
  sourcesContent: false,
  logLevel: 'warning',
  legalComments: 'eof',
  define: { __SIM_BUNDLE_ID__: JSON.stringify(bundleId()) },
};
// A chunk of an earlier build (another hash) would linger there.
rmSync(join(dist, 'bundle'), { recursive: true, force: true });
const metafile = process.argv.includes('--metafile') ? process.argv[process.argv.indexOf('--metafile') + 1] : undefined;
const results = await Promise.all([
  // The library: one file, where the package's exports name it.
  build({ ...options, entryPoints: { index: join(src, 'index.ts') }, outdir: dist, plugins: [moduleUrls('./'), builtins, lazyPackages], metafile: metafile !== undefined }),
  // The command line. What its commands import when they run (drift, replay) is in it too, evaluated
  // then: as chunks of their own, the modules they share with a start would be files of their own.
  build({ ...options, entryPoints: { cli: join(src, 'cli.ts') }, outdir: join(dist, 'bundle'), plugins: [moduleUrls('../'), builtins, lazyPackages], metafile: metafile !== undefined }),
  // The YAML parser for a scenario file, one CommonJS file loaded when the first is read.
  build({
    ...options,
    define: {},
    entryPoints: [join(root, 'node_modules', 'yaml', 'dist', 'index.js')],
    outfile: join(dist, 'bundle', 'yaml.cjs'),
    format: 'cjs',
    plugins: [builtins],
    metafile: metafile !== undefined,
  }),
]);
if (metafile !== undefined) {
  const merged = { inputs: {}, outputs: {} };
  for (const { metafile: m } of results) {
    Object.assign(merged.inputs, m.inputs);
    Object.assign(merged.outputs, m.outputs);
  }
  writeFileSync(metafile, JSON.stringify(merged));
}

// The bin. A file of its own, because the cache applies to what is compiled after it is on.
const bin = join(dist, 'cli.js');
writeFileSync(
  bin,
  [
    '#!/usr/bin/env node',
    '// The `sim` command (src/cli.ts, bundled into bundle/cli.js by scripts/build-node.mjs). Node 22.1 and later',
    "// keep the compiled bundle in their compile cache (os.tmpdir()'s node-compile-cache, or NODE_COMPILE_CACHE;",
    '// NODE_DISABLE_COMPILE_CACHE=1 turns it off), so a start after the first does not compile it again.',
    "process.getBuiltinModule('node:module').enableCompileCache?.();",
    "await import('./bundle/cli.js');",
    '',
  ].join('\n'),
);
chmodSync(bin, 0o755);
rmSync(`${bin}.map`, { force: true });
