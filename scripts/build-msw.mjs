// Build step (after tsc and the scenario steps): `video-service-sim/msw` as one browser bundle,
// dist/browser/msw.js (with its source map), by esbuild. It is the request path and the core as
// they are, for a page:
//   - `platform: 'browser'`: a Node built-in module anywhere in what the entry loads fails the build;
//   - a module with a twin named `X.browser.ts` beside it is replaced by the twin (src/runtime/: the
//     digests and the clips; the scenario validator; the version);
//   - the validators are the ones the build compiled (Ajv standalone code: no `new Function` at run
//     time, so a page with `Content-Security-Policy: script-src 'self'` runs it);
//   - the bundled scenarios are written in, as the build resolved them;
//   - each clip is a chunk of its own, loaded when a video's file is first asked for;
//   - `Buffer` is the `buffer` package's;
//   - msw itself stays outside (a peer dependency: the page's own copy answers).
// `--metafile FILE` writes esbuild's metafile (what each input adds).
import { build } from 'esbuild';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const { version } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const { listBundledScenarios } = await import(new URL('../dist/scenarios/load.js', import.meta.url).href);

/** Modules with a browser twin beside them, and the modules only the bundle has. */
const browserModules = {
  name: 'browser-modules',
  setup(b) {
    b.onResolve({ filter: /^\.\.?\// }, (args) => {
      if (!args.importer.startsWith(join(root, 'src'))) return undefined;
      const target = resolve(dirname(args.importer), args.path).replace(/\.js$/, '');
      const twin = `${target}.browser.ts`;
      return existsSync(twin) ? { path: twin } : undefined;
    });
    b.onResolve({ filter: /^video-service-sim-clips\// }, (args) => ({ path: args.path.split('/')[1], namespace: 'clip' }));
    b.onLoad({ filter: /.*/, namespace: 'clip' }, (args) => ({
      contents: `export const base64 = ${JSON.stringify(readFileSync(join(root, 'assets', `clip-${args.path}.mp4`)).toString('base64'))};`,
      loader: 'js',
    }));
    b.onResolve({ filter: /^video-service-sim-scenario-validator$/ }, () => ({ path: join(root, 'dist', 'scenarios', 'scenario-schema.cjs') }));
    b.onResolve({ filter: /^video-service-sim-bundled-scenarios$/ }, () => ({ path: 'bundled', namespace: 'scenarios' }));
    b.onLoad({ filter: /.*/, namespace: 'scenarios' }, () => ({
      contents: `export default ${JSON.stringify({
        scenarios: JSON.parse(readFileSync(join(root, 'dist', 'scenarios', 'bundled.json'), 'utf8')),
        list: listBundledScenarios(),
      })};`,
      loader: 'js',
    }));
  },
};

const metafile = process.argv.includes('--metafile') ? process.argv[process.argv.indexOf('--metafile') + 1] : undefined;
const result = await build({
  entryPoints: { msw: join(root, 'src', 'msw', 'index.ts') },
  outdir: join(root, 'dist', 'browser'),
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'browser',
  target: ['es2022'],
  minify: true,
  sourcemap: true,
  external: ['msw', 'msw/*'],
  inject: [join(root, 'scripts', 'buffer-shim.mjs')],
  define: { __SIMULATOR_VERSION__: JSON.stringify(version) },
  chunkNames: 'chunks/[name]-[hash]',
  plugins: [browserModules],
  metafile: metafile !== undefined,
  logLevel: 'warning',
  legalComments: 'none',
});
if (metafile !== undefined) writeFileSync(metafile, JSON.stringify(result.metafile));
