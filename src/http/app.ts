/**
 * The Express app around a simulator: a thin adapter. It answers CORS preflights, serves media
 * files (`/cdn`) and the dashboard (`/_sim/`), and hands every other request, read into a plain
 * `ApiRequest`, to `handleRequest`, which holds the order of checks; then it waits any injected
 * latency and sends the answer.
 */
import cors from 'cors';
import express, { type Express, type Request, type Response } from 'express';
import type { Simulator } from '../core/simulator.js';
import { BODY_LIMIT_BYTES, type RawBody } from '../api/body.js';
import { handleRequest, type ApiAnswer, type ApiRequest, type ApiState, type Exchange } from '../api/handleRequest.js';
import { listBundledScenarios } from '../scenarios/load.js';
import { createDashboardRouter } from './dashboard.js';
import { createMediaRouter } from './media.js';

export interface AppOptions {
  /** Where errors that are the simulator's own bugs are reported. Default: stderr. */
  log?: (line: string) => void;
  /** Waits for injected latency (realtime mode). Default: setTimeout. */
  sleep?: (ms: number) => Promise<void>;
  /** Sees every /v1 request and every state-changing control request, once answered (recording). */
  onExchange?: (exchange: Exchange) => void;
  /** The transcript recorded so far (for `GET /_sim/transcript`); undefined when recording is off. */
  transcript?: () => string | undefined;
  /** Called once `POST /_sim/shutdown` has been answered. */
  onShutdown?: () => void;
}

export const EXPOSED_HEADERS = [
  'X-Request-Id',
  'X-RateLimit-Limit',
  'X-RateLimit-Remaining',
  'X-RateLimit-Reset',
  'Retry-After',
  'Idempotent-Replayed',
];

/**
 * An Express app, with the answers that failed validation against openapi.yaml (each became a 500),
 * and its request path without HTTP (`answer`), which the in-process control methods call.
 */
export type SimulatorApp = Express & {
  readonly responseFailures: ApiState['responseFailures'];
  /** Answers one request as the app would (recorded like one), synchronously, without waiting any injected latency. */
  readonly answer: (request: ApiRequest) => ApiAnswer;
};

export function createApp(sim: Simulator, options: AppOptions = {}): SimulatorApp {
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const state: ApiState = {
    sim,
    log,
    responseFailures: [],
    onExchange: options.onExchange,
    control: { transcript: options.transcript ?? (() => undefined), scenarios: listBundledScenarios },
  };
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);

  const allowCors = cors({
    origin: '*',
    methods: ['GET', 'HEAD', 'POST', 'DELETE', 'OPTIONS'],
    allowedHeaders: ['Authorization', 'Content-Type', 'Idempotency-Key', 'Range', 'If-None-Match'],
    exposedHeaders: [...EXPOSED_HEADERS, 'Content-Range', 'Content-Length', 'Accept-Ranges', 'ETag'].join(','),
    maxAge: 600,
    optionsSuccessStatus: 204,
  });
  // CORS on every answer; a preflight ends here (204, without a key).
  app.use((req, res, next) => {
    if (req.method === 'OPTIONS' || !isApiPath(req.path)) res.setHeader('X-Request-Id', sim.nextRequestId());
    allowCors(req, res, next);
  });

  app.use(
    '/cdn',
    createMediaRouter({
      videoFile(id) {
        const g = sim.findGeneration(id);
        return g && g.status === 'succeeded' ? { resolution: g.request.resolution, prompt: g.request.prompt } : undefined;
      },
      imageFile(id) {
        const image = sim.findImage(id);
        return image ? { aspectRatio: image.aspectRatio, prompt: image.prompt } : undefined;
      },
    }),
  );
  app.use('/_sim', createDashboardRouter());

  // Everything else is the JSON API: one plain request in, one plain answer out.
  app.use((req, res) => {
    void readRawBody(req).then(async (body) => {
      const queryAt = req.url.indexOf('?');
      const answer = handleRequest(state, {
        method: req.method,
        path: queryAt < 0 ? req.url : req.url.slice(0, queryAt),
        query: queryAt < 0 ? '' : req.url.slice(queryAt + 1),
        headers: req.headers as Record<string, string | undefined>,
        body,
      });
      if (answer.delayMs > 0) await sleep(answer.delayMs);
      if (body === 'too_large') res.setHeader('Connection', 'close');
      send(res, req.method, answer);
      if (answer.shutdown) res.once('finish', () => options.onShutdown?.());
    });
  });
  return Object.assign(app, { responseFailures: state.responseFailures, answer: (request: ApiRequest) => handleRequest(state, request) });
}

/** Paths whose answers (and request ids) come from `handleRequest`: all but media and the dashboard. */
function isApiPath(path: string): boolean {
  return !path.startsWith('/cdn/') && path !== '/_sim' && path !== '/_sim/' && !path.startsWith('/_sim/ui/');
}

function send(res: Response, method: string, answer: ApiAnswer): void {
  if (res.headersSent || res.destroyed) {
    // The client has gone (a timeout, a dropped connection): it got no answer.
    if (answer.journaled) answer.journaled.undelivered = true;
    return;
  }
  res.statusCode = answer.status;
  for (const name in answer.headers) res.setHeader(name, answer.headers[name] as string);
  res.setHeader('Content-Type', answer.contentType);
  res.setHeader('Content-Length', Buffer.byteLength(answer.body));
  res.end(method === 'HEAD' ? undefined : answer.body);
}

/**
 * The request's body, up to 1 MiB: its bytes, null when it has none, or 'too_large' (the rest is
 * not read: the connection is closed after the answer). GET, HEAD and OPTIONS bodies are not read.
 * Behind `express.raw()` (the app mounted in another server), the body it read is taken as is.
 */
function readRawBody(req: Request): Promise<RawBody> {
  if (req.method === 'GET' || req.method === 'HEAD' || req.method === 'OPTIONS') return Promise.resolve(null);
  // Mounted behind a raw body parser (express.raw()), the body has been read already.
  const read: unknown = req.body;
  if (Buffer.isBuffer(read)) return Promise.resolve(read.length > BODY_LIMIT_BYTES ? 'too_large' : read.length === 0 ? null : read);
  const declared = Number(req.headers['content-length']);
  if (declared > BODY_LIMIT_BYTES) return Promise.resolve('too_large');
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let length = 0;
    const done = (value: RawBody): void => {
      req.removeListener('data', onData);
      req.removeListener('end', onEnd);
      resolve(value);
    };
    const onData = (chunk: Buffer): void => {
      length += chunk.length;
      if (length > BODY_LIMIT_BYTES) {
        req.pause();
        return done('too_large');
      }
      chunks.push(chunk);
    };
    const onEnd = (): void => done(length === 0 ? null : chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, length));
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', () => done(null));
  });
}
