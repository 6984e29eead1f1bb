// Baseline: the chosen stack's floor. Express 5 with the simulator's own request and response
// validation (express-openapi-validator on openapi.yaml, imported from the built code so that it is
// configured exactly as in the simulator) in front of trivial handlers answering fixed bodies:
// GET /v1/videos/:id and POST /v1/videos (body parsed by express.json()) -> res.json(BENCH_BODY),
// GET /_sim/health -> res.json(BENCH_HEALTH). Nothing of the simulator runs but the validator, so
// the distance from plain-express.mjs to this server is what validation alone costs, and the
// distance from this server to the simulator is what the simulator's own work costs.
// Hosted as the simulator hosts its app (src/http/server.ts). Started like the simulator
// (`--port N`); prints `listening on http://127.0.0.1:PORT`.
import express from 'express';
import { contractValidator } from '../../dist/http/contractValidator.js';
import { serveApp } from './serve-app.mjs';

const body = JSON.parse(process.env.BENCH_BODY ?? 'null');
const health = JSON.parse(
  process.env.BENCH_HEALTH ?? '{"status":"ok","scenario":"default","seed":42,"clock":{"mode":"manual","now":"2026-01-01T00:00:00.000Z","speed":1}}',
);

const app = express();
app.disable('x-powered-by');
app.set('etag', false);
app.use(express.json());
app.use(contractValidator());
app.get('/_sim/health', (_req, res) => res.json(health));
app.get('/v1/videos/:id', (_req, res) => res.json(body));
app.post('/v1/videos', (_req, res) => res.json(body));
// A request or response that fails validation is a bug of the bench: say so loudly.
app.use((err, req, res, _next) => {
  process.stderr.write(`express-validator baseline: ${req.method} ${req.url}: ${err.status ?? 500} ${err.message}\n`);
  res.status(err.status ?? 500).json({ error: { message: String(err.message) } });
});

serveApp(app, 'express + express-openapi-validator');
