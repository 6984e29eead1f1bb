// Baseline: plain Express 5 with no validation, answering the same JSON body (env BENCH_BODY):
// GET /v1/videos/:id -> res.json(body), POST /v1/videos with express.json() -> res.json(body).
// Started like the simulator (`--port N`); prints `listening on http://127.0.0.1:PORT`.
// Hosted by `http.createServer(app)`, as Express's own `app.listen` does (the start-up baseline);
// with `--app-prototypes`, as the simulator hosts its app (src/http/server.ts: requests and
// responses built on the app's prototypes, which spares Express its per-request `setPrototypeOf`),
// the framework's ceiling for the simulator's hosting (the throughput baseline).
import express from 'express';
import { createServer } from 'node:http';
import { serve } from './serve.mjs';

const body = JSON.parse(process.env.BENCH_BODY ?? '{"status":"ok"}');

const app = express();
app.get('/v1/videos/:id', (_req, res) => res.json(body));
app.post('/v1/videos', express.json(), (_req, res) => res.json(body));

if (process.argv.includes('--app-prototypes')) {
  // Loaded only here, so that the start-up baseline loads nothing of the simulator.
  const { createAppServer } = await import('../../dist/http/server.js');
  serve(createAppServer(app), "plain express 5 on the app's prototypes");
} else {
  serve(createServer(app), 'plain express 5');
}
