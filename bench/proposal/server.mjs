// The proposal's floor (bench-only; see build-validators.mjs): Express 5 in front of the same
// trivial handlers as bench/baselines/express-validator.mjs, validating every request and response
// with the validators compiled ahead of time instead of express-openapi-validator. The routes the
// bench drives are registered (health, retrieve and create a video: the three the floor and plain
// Express have), each behind one validating middleware; responses are checked in res.json (one
// override on Express's response prototype, nothing allocated per request).
// Hosted as the simulator hosts its app (src/http/server.ts). Started like the simulator
// (`--port N`); prints `listening on http://127.0.0.1:PORT`.
import { createRequire } from 'node:module';
import express from 'express';
import { serveApp } from '../baselines/serve-app.mjs';

const require = createRequire(import.meta.url);
const validators = require('./validators.generated.cjs');

const body = JSON.parse(process.env.BENCH_BODY ?? 'null');
const health = JSON.parse(
  process.env.BENCH_HEALTH ?? '{"status":"ok","scenario":"default","seed":42,"clock":{"mode":"manual","now":"2026-01-01T00:00:00.000Z","speed":1}}',
);
const HANDLERS = {
  'GET /_sim/health': (_req, res) => res.json(health),
  'GET /v1/videos/{id}': (_req, res) => res.json(body),
  'POST /v1/videos': (_req, res) => res.json(body),
};

class ValidationError extends Error {
  constructor(status, errors) {
    super(errors.map((e) => `${e.instancePath || '/'} ${e.message}`).join(', '));
    this.status = status;
  }
}

const app = express();
app.disable('x-powered-by');
app.set('etag', false);
app.use(express.json());

const sendJson = app.response.json;
app.response.json = function json(value) {
  const operation = this.req.operation;
  if (operation) {
    const validate = validators[`${operation}_${this.statusCode}`];
    if (!validate) throw new ValidationError(500, [{ instancePath: '', message: `status ${this.statusCode} is not documented` }]);
    if (!validate(value)) throw new ValidationError(500, validate.errors);
  }
  return sendJson.call(this, value);
};

for (const { method, path, operationId, hasBody } of validators.operations) {
  const handler = HANDLERS[`${method} ${path}`];
  if (!handler) continue;
  const request = validators[`${operationId}_request`];
  const requestBody = hasBody ? validators[`${operationId}_body`] : undefined;
  const check = (req, _res, next) => {
    req.operation = operationId;
    // Express 5's req.query is a getter: validate (and coerce) a copy.
    const input = { params: req.params, query: { ...req.query } };
    if (!request(input)) return next(new ValidationError(400, request.errors));
    if (requestBody && !requestBody(req.body)) return next(new ValidationError(400, requestBody.errors));
    next();
  };
  app[method.toLowerCase()](path.replace(/\{([^}]+)\}/g, ':$1'), check, handler);
}

app.use((err, req, res, _next) => {
  process.stderr.write(`proposal server: ${req.method} ${req.url}: ${err.status ?? 500} ${err.message}\n`);
  req.operation = undefined;
  res.status(err.status ?? 500).json({ error: { message: String(err.message) } });
});

serveApp(app, 'express + validators compiled ahead of time');
