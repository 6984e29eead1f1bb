// Baseline: plain Express 5 with no validation, answering the same JSON body (env BENCH_BODY):
// GET /v1/videos/:id -> res.json(body), POST /v1/videos with express.json() -> res.json(body),
// GET / -> 200 (the health probe). Prints `listening on http://127.0.0.1:PORT`.
import { createServer } from 'node:http';
import express from 'express';
import { serve } from './serve.mjs';

const body = JSON.parse(process.env.BENCH_BODY ?? '{"status":"ok"}');

const app = express();
app.get('/', (_req, res) => res.json({ status: 'ok' }));
app.get('/v1/videos/:id', (_req, res) => res.json(body));
app.post('/v1/videos', express.json(), (_req, res) => res.json(body));

serve(createServer(app), 'plain express 5');
