/**
 * The Express app around a simulator: a thin adapter. Every request first passes the access checks
 * (Host, and for `/_sim` Origin and the control token: controlGuard.ts). It answers CORS preflights
 * of `/v1` and `/cdn` (never of `/_sim`), serves media files (`/cdn`) and the dashboard (`/_sim/`),
 * and hands every other request, read into a plain `ApiRequest`, to `handleRequest`, which holds the
 * order of checks; then it waits any injected latency and sends the answer.
 */
import cors from 'cors';
import express, { type Express, type Request, type Response } from 'express';
import type { Simulator } from '../core/simulator.js';
import { BODY_LIMIT_BYTES, type RawBody } from '../api/body.js';
import { pipeline } from 'node:stream';
import { handleRequest, type ApiAnswer, type ApiRequest, type ApiState, type Exchange, type StreamedBody } from '../api/handleRequest.js';
import { listBundledScenarios } from '../scenarios/load.js';
import type { RecordingStatus } from '../transcript/recorder.js';
import { compactedStateText } from '../state/snapshot.js';
import { textBody, type StateStatus } from '../state/store.js';
import { createControlGuard, isControlPath, type AccessPolicy } from './controlGuard.js';
import { createDashboardRouter } from './dashboard.js';
import { errorShapeHandler } from './errorAnswers.js';
import { createMediaRouter } from './media.js';

export interface AppOptions {
  /** Where errors that are the simulator's own bugs are reported. Default: stderr. */
  log?: (line: string) => void;
  /**
   * Waits for injected latency (realtime mode). Default: setTimeout. `signal` is aborted when the
   * app drains: a sleep may then end early (the app stops waiting for it either way).
   */
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
  /** Sees every /v1 request and every state-changing control request, once answered (recording). */
  onExchange?: (exchange: Exchange) => void;
  /** The transcript recorded so far (for `GET /_sim/transcript`, streamed); undefined when recording is off. */
  transcript?: () => StreamedBody | undefined;
  /** What `GET /_sim/health` shows of the recording; undefined when recording is off. */
  recording?: () => RecordingStatus | undefined;
  /** The state as a compacted state file (for `GET /_sim/state`). Default: the core's state now, with no overrides recorded. */
  state?: () => StreamedBody | undefined;
  /** What `GET /_sim/health` shows of the state file; undefined when state is off. */
  stateStatus?: () => StateStatus | undefined;
  /** Called once `POST /_sim/shutdown` has been answered. */
  onShutdown?: () => void;
  /** Who may talk to the simulator (read at every request). Default: the Host check on, no control token. */
  access?: AccessPolicy;
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
  /**
   * Stops waiting out injected latency while the server stops: the answers waiting now are sent at
   * once, later ones are not delayed, and each closes its connection. Returns the function that
   * ends the drain (once the server has closed).
   */
  drain(): () => void;
};

/** The request's client went away before its body was complete. */
const ABORTED = Symbol('aborted');

export function createApp(sim: Simulator, options: AppOptions = {}): SimulatorApp {
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const sleep = options.sleep ?? sleepUnlessAborted;
  // Aborted while the server stops: every wait for injected latency ends at once.
  let drain = new AbortController();
  const wait = (ms: number): Promise<void> => {
    const { signal } = drain;
    if (signal.aborted) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const done = (): void => {
        signal.removeEventListener('abort', done);
        resolve();
      };
      signal.addEventListener('abort', done, { once: true });
      sleep(ms, signal).then(done, done);
    });
  };
  const state: ApiState = {
    sim,
    log,
    responseFailures: [],
    onExchange: options.onExchange,
    control: {
      transcript: options.transcript ?? (() => undefined),
      recording: options.recording ?? (() => undefined),
      // Any simulator hands over its state as a file; one with --state says which run it continues.
      state: options.state ?? (() => textBody(compactedStateText(sim, {}, sim.clock.wallStartMs, 0))),
      stateStatus: options.stateStatus ?? (() => undefined),
      scenarios: listBundledScenarios,
    },
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
  const access = options.access ?? { checkHost: true, allowedHosts: [], ownOrigins: [], controlToken: undefined };
  app.use(createControlGuard(access, () => sim.nextRequestId()));
  // CORS on every answer but the control API's; a preflight ends here (204, without a key).
  app.use((req, res, next) => {
    const control = isControlPath(req.path);
    if ((req.method === 'OPTIONS' && !control) || !isApiPath(req.path)) res.setHeader('X-Request-Id', sim.nextRequestId());
    if (control) next();
    else allowCors(req, res, next);
  });

  app.use(
    '/cdn',
    createMediaRouter({
      videoFile(id) {
        const g = sim.findGeneration(id);
        return g && g.status === 'succeeded'
          ? { resolution: g.request.resolution, durationSeconds: g.request.duration_seconds, prompt: g.request.prompt }
          : undefined;
      },
      imageFile(id) {
        const image = sim.findImage(id);
        return image ? { aspectRatio: image.aspectRatio, prompt: image.prompt } : undefined;
      },
    }),
  );
  app.use('/_sim', createDashboardRouter());

  // Everything else is the JSON API: one plain request in, one plain answer out.
  app.use((req, res, next) => {
    void readRawBody(req).then(async (body) => {
      // A half-sent request is no request: it is not handled, so it leaves no trace.
      if (body === ABORTED) return;
      const queryAt = req.url.indexOf('?');
      const answer = handleRequest(state, {
        method: req.method,
        path: queryAt < 0 ? req.url : req.url.slice(0, queryAt),
        query: queryAt < 0 ? '' : req.url.slice(queryAt + 1),
        headers: req.headers as Record<string, string | undefined>,
        body,
      });
      if (answer.delayMs > 0) await wait(answer.delayMs);
      if (body === 'too_large' || drain.signal.aborted) res.setHeader('Connection', 'close');
      send(res, req.method, answer);
      if (answer.shutdown) res.once('finish', () => options.onShutdown?.());
    }).catch(next);
  });
  // Errors passed on by the routers above (the dashboard's and media's files), or thrown while
  // answering, answer in JSON too.
  app.use(errorShapeHandler(log));
  return Object.assign(app, {
    responseFailures: state.responseFailures,
    answer: (request: ApiRequest) => handleRequest(state, request),
    drain: () => {
      const current = drain;
      current.abort();
      return () => {
        if (drain === current) drain = new AbortController();
      };
    },
  });
}

function sleepUnlessAborted(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise<void>((resolve) => {
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
    function done(): void {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
  });
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
  if (answer.stream) {
    res.setHeader('Content-Length', answer.stream.length);
    if (method === 'HEAD') return void res.end();
    // A read that fails part-way cuts the answer short (the client sees fewer bytes than announced).
    return void pipeline(answer.stream.open(), res, () => {});
  }
  res.setHeader('Content-Length', Buffer.byteLength(answer.body));
  res.end(method === 'HEAD' ? undefined : answer.body);
}

/**
 * The request's body, up to 1 MiB: its bytes, null when it has none, 'too_large' (the rest is not
 * read: the connection is closed after the answer), or ABORTED when the client went away before
 * the body was complete. GET, HEAD and OPTIONS bodies are not read. Behind `express.raw()` (the
 * app mounted in another server), the body it read is taken as is.
 */
function readRawBody(req: Request): Promise<RawBody | typeof ABORTED> {
  if (req.method === 'GET' || req.method === 'HEAD' || req.method === 'OPTIONS') return Promise.resolve(null);
  // Mounted behind a raw body parser (express.raw()), the body has been read already.
  const read: unknown = req.body;
  if (Buffer.isBuffer(read)) return Promise.resolve(read.length > BODY_LIMIT_BYTES ? 'too_large' : read.length === 0 ? null : read);
  const declared = Number(req.headers['content-length']);
  if (declared > BODY_LIMIT_BYTES) return Promise.resolve('too_large');
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let length = 0;
    const done = (value: RawBody | typeof ABORTED): void => {
      req.removeListener('data', onData);
      req.removeListener('end', onEnd);
      req.removeListener('error', onAborted);
      req.removeListener('close', onAborted);
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
    // 'error' (ECONNRESET, "aborted") or 'close' before 'end': the body will never be complete.
    const onAborted = (): void => done(ABORTED);
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onAborted);
    req.on('close', onAborted);
  });
}
