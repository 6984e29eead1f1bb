/**
 * The test suite's second opinion on the contract: express-openapi-validator, an independent
 * implementation, sees every request and response the suite exchanges with a simulator made by
 * `makeSim` (its `app` and what `listen` serves are wrapped). The simulator validates at run time
 * with its own validators compiled from openapi.yaml; the suite fails (test/setup.ts) when the two
 * disagree:
 *
 * - a response the simulator sent that express-openapi-validator rejects;
 * - a response the simulator rejected (it became a logged 500) — express-openapi-validator never
 *   sees the original, so every such rejection counts, except where a test plants one on purpose
 *   and takes it back with `takeResponseFailures`;
 * - a request express-openapi-validator rejects as malformed that the simulator answered with a
 *   success.
 */
import express, { type ErrorRequestHandler, type Express, type RequestHandler } from 'express';
import * as OpenApiValidator from 'express-openapi-validator';
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import type { SimulatorHandle } from '../src/index.js';

/** Disagreements found so far in this test file. */
const disagreements: string[] = [];

const watchedApps = new Set<SimulatorHandle['app']>();

let validator: RequestHandler[] | undefined;

function openapiValidator(): RequestHandler[] {
  validator ??= OpenApiValidator.middleware({
    apiSpec: parse(readFileSync(new URL('../openapi.yaml', import.meta.url), 'utf8')),
    validateApiSpec: true,
    fileUploader: false,
    validateRequests: { allErrors: true, allowUnknownQueryParameters: false },
    validateResponses: true,
    validateSecurity: false,
    validateFormats: true,
  }) as RequestHandler[];
  return validator;
}

const VERDICT = Symbol('express-openapi-validator verdict on the request');
const RAW = Symbol('raw body');

type Checked = { [VERDICT]?: { status?: number; message?: string }; [RAW]?: Buffer };

/** Paths the contract describes (media and the dashboard are described in docs/media.md and docs/dashboard.md only). */
function isContractPath(path: string, method = 'GET'): boolean {
  if (method === 'OPTIONS') return false; // preflights are the CORS layer's
  return path.startsWith('/v1') || (path.startsWith('/_sim/') && !path.startsWith('/_sim/ui/') && path !== '/_sim/');
}

/** `sim` with its `app` (and so what `listen` serves) behind express-openapi-validator. */
export function crossChecked<T extends SimulatorHandle>(sim: T): T {
  const inner = sim.app;
  watchedApps.add(inner);
  const outer: Express = express();
  outer.disable('x-powered-by');
  outer.set('etag', false);
  // The body is read once, here; the simulator's app takes the bytes as they were sent.
  outer.use(express.raw({ type: () => true, limit: '4mb' }));
  outer.use((req, _res, next) => {
    const raw = Buffer.isBuffer(req.body) ? (req.body) : undefined;
    (req as Checked)[RAW] = raw;
    req.body = undefined;
    if (raw && raw.length > 0) {
      try {
        req.body = JSON.parse(raw.toString('utf8'));
      } catch {
        req.body = undefined;
      }
    }
    next();
  });
  const checks = openapiValidator();
  outer.use((req, res, next) => {
    if (!isContractPath(req.path, req.method)) return next();
    let i = 0;
    const step = (err?: unknown): void => {
      if (err) {
        const e = err as { status?: number; message?: string };
        (req as Checked)[VERDICT] = { status: e.status, message: e.message };
        return next();
      }
      const middleware = checks[i++];
      if (!middleware) return next();
      void middleware(req, res, step);
    };
    step();
  });
  const forward: RequestHandler = (req, res) => {
    const verdict = (req as Checked)[VERDICT];
    req.body = (req as Checked)[RAW];
    const writeHead = res.writeHead;
    // The simulator sends an answer's status and headers at once, `res.writeHead(status, [name,
    // value, ...])`: they are set one by one instead (in the same order), so that the answer
    // reaches res.json below as set. Any other call (Node's own, when a body is written) goes
    // through.
    res.writeHead = function (this: typeof res, status: number, ...rest: unknown[]) {
      res.writeHead = writeHead;
      const [headers] = rest;
      if (rest.length !== 1 || !Array.isArray(headers)) return (writeHead as (...args: unknown[]) => typeof res).call(this, status, ...rest);
      res.statusCode = status;
      for (let i = 0; i < headers.length; i += 2) res.setHeader(String(headers[i]), headers[i + 1] as string);
      return res;
    } as typeof res.writeHead;
    const end = res.end;
    // The simulator writes its JSON answer with res.end; it is handed to res.json instead, which
    // express-openapi-validator hooks to validate the response before it is sent.
    res.end = function (this: typeof res, chunk?: unknown, ...rest: unknown[]) {
      res.end = end;
      const type = String(res.getHeader('content-type') ?? '');
      if (verdict && verdict.status !== undefined && verdict.status < 500 && res.statusCode < 300 && isContractPath(req.path)) {
        disagreements.push(`${req.method} ${req.originalUrl}: express-openapi-validator refused the request (${verdict.status} ${verdict.message}) but the simulator answered ${res.statusCode}`);
      }
      if (typeof chunk === 'string' && type.startsWith('application/json') && isContractPath(req.path) && typeof res.json === 'function') {
        res.removeHeader('Content-Length');
        return res.json(JSON.parse(chunk));
      }
      return (end as (...args: unknown[]) => typeof res).call(this, chunk, ...rest);
    } as typeof res.end;
    inner(req, res);
  };
  outer.use(forward);
  const onResponseRejected: ErrorRequestHandler = (err: { message?: string }, req, res, _next) => {
    disagreements.push(`${req.method} ${req.originalUrl}: express-openapi-validator rejected the simulator's ${res.statusCode} response: ${err.message}`);
    if (!res.headersSent) res.status(500).json({ error: { type: 'api_error', code: 'internal_error', message: String(err.message) } });
  };
  outer.use(onResponseRejected);
  // `answer` (the request path in process, no HTTP) stays the simulator's own: nothing to cross-check there.
  Object.defineProperty(sim, 'app', { value: Object.assign(outer, { responseFailures: inner.responseFailures, answer: inner.answer }), configurable: true });
  return sim;
}

/** Takes back the responses the simulator rejected in `sim` (a test that plants them on purpose). */
export function takeResponseFailures(sim: SimulatorHandle): SimulatorHandle['app']['responseFailures'] {
  return sim.app.responseFailures.splice(0);
}

/**
 * Forgets this file's simulators and disagreements, once they have been checked (test/setup.ts):
 * a worker that runs several files keeps this module, and each file answers for its own.
 */
export function forgetContractChecks(): void {
  disagreements.length = 0;
  watchedApps.clear();
}

/** What went wrong in every simulator of this file: disagreements and rejected responses. */
export function contractProblems(): string[] {
  const rejected = [...watchedApps].flatMap((app) =>
    app.responseFailures.map((f) => `${f.method} ${f.path}: the simulator rejected its own ${f.status} response: ${f.message}`),
  );
  return [...disagreements, ...rejected];
}
