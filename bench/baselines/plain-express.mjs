// Baseline: plain Express 5 with no validation, answering the same JSON body (env BENCH_BODY):
// GET /v1/videos/:id -> res.json(body), POST /v1/videos with express.json() -> res.json(body),
// GET / -> 200 (the health probe). Prints `listening on http://127.0.0.1:PORT`.
// Hosted by `http.createServer(app)`, as Express's own `app.listen` does (the baseline);
// with `--app-prototypes`, as the simulator hosts its app (src/http/server.ts), which spares
// Express its per-request `setPrototypeOf`: the framework's ceiling for the simulator's hosting.
import express from 'express';
import { serveApp } from './serve-app.mjs';

const body = JSON.parse(process.env.BENCH_BODY ?? '{"status":"ok"}');

const app = express();
app.get('/', (_req, res) => res.json({ status: 'ok' }));
app.get('/v1/videos/:id', (_req, res) => res.json(body));
app.post('/v1/videos', express.json(), (_req, res) => res.json(body));

const appPrototypes = process.argv.includes('--app-prototypes');
serveApp(app, appPrototypes ? "plain express 5 on the app's prototypes" : 'plain express 5', { expressDefault: !appPrototypes });
