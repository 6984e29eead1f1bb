// Baseline: plain Express 5 with no validation, answering the same JSON body (env BENCH_BODY):
// GET /v1/videos/:id -> res.json(body), POST /v1/videos with express.json() -> res.json(body).
// Started like the simulator (`--port N`); prints `listening on http://127.0.0.1:PORT`.
// Hosted by `http.createServer(app)`, as Express's own `app.listen` does: the baseline for
// start-up and throughput alike. (The simulator answers its JSON API on `node:http` and hands only
// its files to Express: src/http/server.ts.)
import express from 'express';
import { createServer } from 'node:http';
import { serve } from './serve.mjs';

const body = JSON.parse(process.env.BENCH_BODY ?? '{"status":"ok"}');

const app = express();
app.get('/v1/videos/:id', (_req, res) => res.json(body));
app.post('/v1/videos', express.json(), (_req, res) => res.json(body));

serve(createServer(app), 'plain express 5');
