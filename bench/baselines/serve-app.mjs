// `serveApp`: serve.mjs for an Express app, hosted as the simulator hosts its own
// (src/http/server.ts: requests built on the app's prototypes) or, with `{ expressDefault: true }`,
// as `http.createServer(app)` (Express re-prototypes each request).
import { createServer } from 'node:http';
import { createAppServer } from '../../dist/http/server.js';
import { serve } from './serve.mjs';

/** Serves an Express app: on the app's prototypes, as the simulator does, unless `expressDefault`. */
export function serveApp(app, label, { expressDefault = false } = {}) {
  return serve(expressDefault ? createServer(app) : createAppServer(app), label);
}
