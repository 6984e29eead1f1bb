// Builds the page into dist/: the app bundled by esbuild (ES modules, split so the simulator's
// clips load only when a video is played), its HTML and CSS, and msw's service worker script.
import { build } from 'esbuild';
import { copyFileSync, mkdirSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

const out = 'dist';
rmSync(out, { recursive: true, force: true });
mkdirSync(out);
await build({
  entryPoints: ['src/app.ts'],
  outdir: out,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'browser',
  target: ['es2022'],
  chunkNames: 'chunks/[name]-[hash]',
  minify: true,
  sourcemap: true,
  logLevel: 'warning',
});
copyFileSync('src/index.html', join(out, 'index.html'));
copyFileSync('src/app.css', join(out, 'app.css'));
// What `npx msw init dist` copies: the worker script of the installed msw (its version must match).
const msw = dirname(createRequire(import.meta.url).resolve('msw/package.json'));
copyFileSync(join(msw, 'lib', 'mockServiceWorker.js'), join(out, 'mockServiceWorker.js'));
console.log('built dist/');
