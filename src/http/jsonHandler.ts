/**
 * The JSON API (`/v1` and the control API under `/_sim`: every path but the media and dashboard
 * files) as one plain `node:http` request handler, on Node's own request and response objects:
 * the access checks (accessGuard.ts), CORS for `/v1` (never for `/_sim`), the raw body,
 * `handleRequest` (which holds the order of checks), any injected latency, then the answer (or a
 * network fault the core drew in its place, carried out on the socket by network.ts). The
 * server calls it directly for API paths (server.ts says why); the Express app (app.ts) mounts it
 * as its fallback, so that the app alone answers alike.
 */
import cors from 'cors';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { pipeline } from 'node:stream';
import { setMaxListeners } from 'node:events';
import { NETWORK } from '../core/faults/network.js';
import { RATE_LIMIT_HEADERS } from '../core/accounts/rateLimit.js';
import type { Simulator } from '../core/simulator/simulator.js';
import { BODY_LIMIT_BYTES } from '../request-path/body.js';
import type { RawBody } from '../request-path/exchange.js';
import { handleRequest, requestPathDeps, type ApiAnswer, type ApiRequest, type RequestPathDeps, type Exchange, type StreamedBody } from '../request-path/handleRequest.js';
import { WaitRoom } from '../request-path/waits.js';
import { logToStderr } from '../host.js';
import { sleep as sleepOn, systemClock, type HostClock } from '../hostClock.js';
import { listBundledScenarios } from '../scenarios/load.js';
import type { RecordingStatus } from '../transcript/recorder.js';
import type { MediaFaultTaken } from '../persistence/stateLines.js';
import type { StateStatus } from '../persistence/stateStore.js';
import { createAccessGuard, hostNameOf, type AccessPolicy } from './accessGuard.js';
import { answerInternalError } from './errorAnswers.js';
import { loseAnswer, type NetworkHooks } from './network.js';
import { writeAtEndOfTurn } from './turnWrites.js';
import { allowsCors, isApiPath, pathOf } from './paths.js';

export interface ApiOptions {
  /** Where errors that are the simulator's own bugs are reported. Default: stderr. */
  log?: (line: string) => void;
  /**
   * The host clock every wait of the adapter runs on: injected latency (unless `sleep` is given),
   * network `hang_ms` and `slow` bodies, waits for requests. Default: `systemClock`.
   */
  hostClock?: HostClock;
  /**
   * Waits for injected latency in place of the host clock (kept for callers that gave one before
   * `hostClock`). `signal` is aborted when the app drains: a sleep may then end early (the app
   * stops waiting for it either way).
   */
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
  /** Sees every /v1 request and every state-changing control request, once answered (recording). */
  onExchange?: (exchange: Exchange) => void;
  /** Told when a download takes one shot of a queued media fault (the state file keeps it). */
  onMediaFault?: (download: MediaFaultTaken) => void;
  /** The transcript recorded so far (for `GET /_sim/transcript`, streamed); undefined when recording is off. */
  transcript?: () => StreamedBody | undefined;
  /** What `GET /_sim/health` shows of the recording; undefined when recording is off. */
  recording?: () => RecordingStatus | undefined;
  /** The state as a compacted state file (for `GET /_sim/state`): any simulator hands over its state, kept in a file or not. */
  snapshot: () => StreamedBody;
  /** What `GET /_sim/health` shows of the state file; undefined when state is off. */
  stateStatus?: () => StateStatus | undefined;
  /**
   * While the state file's lines wait for room (a full disk), a promise that settles once they are
   * written (true) or never will be (false); undefined when none waits (`StateStore.whenWritten`).
   */
  whenWritten?: () => Promise<boolean> | undefined;
  /** Called once `POST /_sim/shutdown` has been answered. */
  onShutdown?: () => void;
  /** Who may talk to the simulator (read at every request). Default: the Host check on, no control token. */
  access?: AccessPolicy;
  /**
   * Whether the addresses written into answers follow the `Host` each request used (read at every
   * request): on while listening without a base or media URL given, so that a client that reaches
   * the simulator through a remapped port (`docker run -p 18081:8080`) gets URLs it can fetch.
   * Default: off (the simulator's own media address).
   */
  followsHost?: () => boolean;
}

/** The answers' headers a web page may read (CORS), beside those of the media files. */
const EXPOSED_HEADERS = ['X-Request-Id', ...RATE_LIMIT_HEADERS, 'Retry-After', 'Idempotent-Replayed'];

/** A request handler on Node's own objects, as `http.createServer` takes one. */
type RequestHandler = (req: IncomingMessage, res: ServerResponse) => void;

/** The first step of every request (API and files alike): it either answers, or calls `next`. */
type Admission = (req: IncomingMessage, res: ServerResponse, next: () => void) => void;

export interface Api {
  /** Answers one API request (never calls on: every answer, a 404 included, is its own). */
  readonly handle: RequestHandler;
  /**
   * The access checks, the `X-Request-Id` of answers `handleRequest` does not give (preflights,
   * files) and CORS (a preflight ends here, 204). `handle` runs it for API paths; the Express app
   * runs it for the file paths.
   */
  readonly admit: Admission;
  /** Answers one request as `handle` would (recorded like one), synchronously, without waiting any injected latency. */
  readonly answer: (request: ApiRequest) => ApiAnswer;
  /**
   * Answers one request as `answer` does, but a wait for requests is held until it is answered
   * (the in-process handle's `waitForRequest`): then a promise.
   */
  readonly answerHeld: (request: ApiRequest) => ApiAnswer | Promise<ApiAnswer>;
  /** The answers that failed validation against openapi.yaml (each became a 500). */
  readonly responseFailures: RequestPathDeps['responseFailures'];
  /**
   * Stops waiting out injected latency while the server stops: the answers waiting now are sent at
   * once, later ones are not delayed, and each closes its connection; connections held by a network
   * `hang` are closed at once, and slow answers sent whole. Returns the function that ends the drain
   * (once the server has closed).
   */
  drain(): () => void;
  /**
   * The `X-Request-Id` of an answer made outside the request path (refused by the access checks,
   * a preflight, a file, a request too malformed to parse): the simulator's next global id.
   */
  readonly requestId: () => string;
  /**
   * A media download's queued network fault, if one matches it (`/cdn/...` faults): after its
   * latency, the fault is carried out, on the file answer the next handler makes for `truncate`
   * and `slow`. Without one, calls `next` at once.
   */
  readonly mediaFaults: Admission;
}

/** The request's client went away before its body was complete. */
const ABORTED = Symbol('aborted');

export function createApi(sim: Simulator, options: ApiOptions): Api {
  const log = options.log ?? logToStderr;
  const hostClock = options.hostClock ?? systemClock;
  const followsHost = options.followsHost ?? ((): boolean => false);
  // The one issuer of the ids of answers made outside the request path.
  const requestId = (): string => sim.nextRequestId();
  // Aborted while the server stops: every wait for injected latency ends at once.
  let drain = drainController();
  // Waits for requests held (over HTTP, or in-process): a stop ends them at once.
  const waits = new WaitRoom(sim, hostClock);
  // The host clock's sleep ends at the stop's abort; a sleep given may not heed it, so it is raced with it.
  const { sleep } = options;
  const wait =
    sleep === undefined
      ? (ms: number): Promise<void> => sleepOn(hostClock, ms, drain.signal)
      : (ms: number): Promise<void> => {
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
  const deps = requestPathDeps(sim, {
    log,
    onExchange: options.onExchange,
    onSocket: (fault) => sim.onSocket(fault),
    app: {
      transcript: options.transcript,
      recording: options.recording,
      snapshot: options.snapshot,
      stateStatus: options.stateStatus,
      scenarios: listBundledScenarios,
    },
  });

  const exposedHeaders = [...EXPOSED_HEADERS, 'Content-Range', 'Content-Length', 'Accept-Ranges', 'ETag'].join(',');
  // The two headers `cors` would set on any answer but a preflight (any origin, the exposed
  // headers), as name, value pairs.
  const corsHead: readonly string[] = ['Access-Control-Allow-Origin', '*', 'Access-Control-Expose-Headers', exposedHeaders];
  const preflight = cors({
    origin: '*',
    methods: ['GET', 'HEAD', 'POST', 'DELETE', 'OPTIONS'],
    allowedHeaders: ['Authorization', 'Content-Type', 'Idempotency-Key', 'Range', 'If-None-Match'],
    exposedHeaders,
    maxAge: 600,
    optionsSuccessStatus: 204,
  });
  // Any other request gets the two headers `cors` would set for it, set here directly: the
  // middleware copies its options and makes closures per request.
  const allowCors: Admission = (req, res, next) => {
    if (req.method?.toUpperCase() === 'OPTIONS') return preflight(req, res, next);
    setHeaders(res, corsHead);
    next();
  };
  const access = options.access ?? { checkHost: true, allowedHosts: [], ownOrigins: [], controlOrigins: [], controlToken: undefined };
  const guard = createAccessGuard(access, requestId);
  const admit: Admission = (req, res, next) => {
    guard(req, res, () => {
      const path = pathOf(req.url);
      const cors = allowsCors(path);
      if ((req.method === 'OPTIONS' && cors) || !isApiPath(path)) res.setHeader('X-Request-Id', requestId());
      if (cors) allowCors(req, res, next);
      else next();
    });
  };

  // One plain request in, one plain answer out. A request without a body to read (GET, HEAD,
  // OPTIONS) is answered at once, without a promise; injected latency waits in any case. `cors`:
  // the CORS headers of the answer, when they are not set on `res` already (see `handle`).
  const answerRequest = (req: IncomingMessage, res: ServerResponse, cors: readonly string[]): Promise<void> | void => {
    if (takesNoBody(req.method)) return respond(req, res, null, cors);
    readRawBody(req, (body) => {
      // A half-sent request is no request: it is not handled, so it leaves no trace.
      if (body === ABORTED) return;
      try {
        respond(req, res, body, cors)?.catch((err: unknown) => fail(req, res, err, cors));
      } catch (err) {
        fail(req, res, err, cors);
      }
    });
  };
  const respond = (req: IncomingMessage, res: ServerResponse, body: RawBody, cors: readonly string[]): Promise<void> | void => {
    const url = req.url ?? '/';
    const method = req.method ?? 'GET';
    const queryAt = url.indexOf('?');
    const answer = handleRequest(deps, {
      method,
      path: queryAt < 0 ? url : url.slice(0, queryAt),
      query: queryAt < 0 ? '' : url.slice(queryAt + 1),
      headers: req.headers as Record<string, string | undefined>,
      body,
      mediaHost: followsHost() ? usableHost(req.headers.host) : undefined,
    });
    // Only whether the body was too large is read later: its bytes go with the request, not with
    // the answer (written at the end of its turn, perhaps after a collection or two).
    const tooLarge = body === 'too_large';
    if (answer.wait) return holdWait(res, answer.wait).then((held) => held && afterLatency(req, res, method, tooLarge, held, cors));
    // A state-changing request is acknowledged only once its line is in the state file: while the
    // file's lines wait for room, its answer waits for them, and is never sent if they never are.
    // A shutdown changes no state, and its answer is what stops the simulator: it does not wait.
    if (method !== 'GET' && method !== 'HEAD' && !answer.shutdown) {
      const written = options.whenWritten?.();
      if (written) return written.then((kept) => (kept ? afterLatency(req, res, method, tooLarge, answer, cors) : unanswered(res, answer)));
    }
    return afterLatency(req, res, method, tooLarge, answer, cors);
  };
  const afterLatency = (req: IncomingMessage, res: ServerResponse, method: string, tooLarge: boolean, answer: ApiAnswer, cors: readonly string[]): Promise<void> | void => {
    if (answer.delayMs > 0) return wait(answer.delayMs).then(() => deliver(req, res, method, tooLarge, answer, cors));
    deliver(req, res, method, tooLarge, answer, cors);
  };
  // An answer is sent with the others of its event-loop turn (turnWrites.ts says why); one a
  // network fault loses is carried out at once.
  const deliver = (req: IncomingMessage, res: ServerResponse, method: string, tooLarge: boolean, answer: ApiAnswer, cors: readonly string[]): void => {
    if (answer.network) return sendLost(res, method, answer, cors, closes(tooLarge), networkHooks());
    if (answer.shutdown) res.once('finish', () => options.onShutdown?.());
    writeAtEndOfTurn(() => {
      try {
        send(res, method, answer, cors, closes(tooLarge));
      } catch (err) {
        fail(req, res, err, cors);
      }
    }, res.socket);
  };
  // A wait for requests, held until it is answered; let go (nothing sent) when the client goes first.
  const holdWait = (res: ServerResponse, wait: NonNullable<ApiAnswer['wait']>): Promise<ApiAnswer | undefined> => {
    const gone = new AbortController();
    const onClose = (): void => gone.abort();
    res.once('close', onClose);
    return waits.hold(wait, gone.signal).finally(() => res.removeListener('close', onClose));
  };
  // Whether an answer, as it is written, closes its connection: after a body too large to read
  // whole, or while the server stops.
  const closes = (tooLarge: boolean): boolean => tooLarge || drain.signal.aborted;
  // Answered without a socket (`answer`): a network hang holds no connection.
  const socketless: RequestPathDeps = { ...deps, onSocket: undefined };
  const networkHooks = (): NetworkHooks => ({ stopping: drain.signal, released: () => sim.held.release(), hostClock });

  const mediaFaults: Admission = (req, res, next) => {
    const download = { method: req.method ?? 'GET', path: pathOf((req as { originalUrl?: string }).originalUrl ?? req.url) };
    const queued = sim.faults.takeMedia(download.method, download.path);
    if (queued === undefined) return next();
    options.onMediaFault?.(download);
    const go = (): void => {
      if (queued.network === null) return next();
      const fault = sim.onSocket(queued.network);
      // A fault that delivers none of the answer is carried out at once.
      if (!NETWORK[fault.kind].delivers) return loseAnswer(res, fault, EMPTY, networkHooks());
      // The file router answers with `res.end(body)`: that answer is the one lost. `end` is put back
      // on `res` before it is called, so it runs bound to it.
      // oxlint-disable-next-line typescript/unbound-method
      const end = res.end;
      res.end = function (this: ServerResponse, chunk?: unknown, encoding?: unknown) {
        res.end = end;
        const body = req.method === 'HEAD' || chunk == null || typeof chunk === 'function' ? EMPTY : toBuffer(chunk, encoding);
        loseAnswer(res, fault, body, networkHooks());
        return res;
      } as ServerResponse['end'];
      next();
    };
    if (queued.latencyMs > 0) void wait(queued.latencyMs).then(go);
    else go();
  };
  // `cors`: the CORS headers the answer would have had, which the error answer keeps.
  const fail = (req: IncomingMessage, res: ServerResponse, err: unknown, cors: readonly string[] = NO_HEADERS): void => {
    if (!res.headersSent) setHeaders(res, cors);
    answerInternalError(req, res, err, log);
  };

  const answer = (req: IncomingMessage, res: ServerResponse, cors: readonly string[]): void => {
    try {
      answerRequest(req, res, cors)?.catch((err: unknown) => fail(req, res, err, cors));
    } catch (err) {
      fail(req, res, err, cors);
    }
  };
  // `admit` for an API path, but for the CORS headers of an answer the request path makes: they
  // go out with the answer's own headers, all at once (see `send`).
  const admitApi = (req: IncomingMessage, res: ServerResponse): void => {
    if (!allowsCors(pathOf(req.url))) return answer(req, res, NO_HEADERS);
    if (req.method?.toUpperCase() !== 'OPTIONS') return answer(req, res, corsHead);
    res.setHeader('X-Request-Id', requestId());
    preflight(req, res, () => answer(req, res, NO_HEADERS));
  };

  const handle: RequestHandler = (req, res) => {
    try {
      // A file path reaches this only from the Express app, when no file router answered it:
      // the app admitted it already.
      if (isApiPath(pathOf(req.url))) guard(req, res, () => admitApi(req, res));
      else answer(req, res, NO_HEADERS);
    } catch (err) {
      fail(req, res, err);
    }
  };

  return {
    handle,
    admit,
    answer: (request) => handleRequest(socketless, request),
    answerHeld: (request) => {
      const answer = handleRequest(socketless, request);
      return answer.wait ? waits.hold(answer.wait).then((held) => held as ApiAnswer) : answer;
    },
    requestId,
    responseFailures: deps.responseFailures,
    mediaFaults,
    drain: () => {
      const current = drain;
      current.abort();
      waits.stop();
      return () => {
        if (drain === current) {
          drain = drainController();
          waits.resume();
        }
      };
    },
  };
}

/**
 * The signal of a drain: every latency wait, held connection and slow answer listens to it (up to
 * `limits.max_hung_connections` of them, far past the 10 after which Node warns of a leak).
 */
function drainController(): AbortController {
  const controller = new AbortController();
  setMaxListeners(0, controller.signal);
  return controller;
}

/** A `Host` header a URL can be written on (`host[:port]`, parsed strictly), else undefined. */
function usableHost(host: string | undefined): string | undefined {
  return host !== undefined && hostNameOf(host) !== undefined ? host : undefined;
}

const NO_HEADERS: readonly string[] = [];

/**
 * Sends an answer: its status and every header at once (`cors` first, then `Connection: close`
 * when `close`, the answer's own headers, its content type and length), then its body.
 */
function send(res: ServerResponse, method: string, answer: ApiAnswer, cors: readonly string[], close: boolean): void {
  if (res.headersSent || res.destroyed) {
    // The client has gone (a timeout, a dropped connection): it got no answer.
    if (answer.journaled) answer.journaled.undelivered = true;
    return;
  }
  const head = answerHead(answer, cors, close);
  // A body made as it is sent has no length yet: Node sends it chunked.
  const length = answer.stream ? answer.stream.length : Buffer.byteLength(answer.body);
  if (length !== undefined) head.push('Content-Length', String(length));
  writeHead(res, answer.status, head);
  if (answer.stream) {
    if (method === 'HEAD') return void res.end();
    // A read that fails part-way cuts the answer short (the client sees fewer bytes than announced).
    return void pipeline(answer.stream.open(), res, () => {});
  }
  res.end(method === 'HEAD' ? undefined : answer.body);
}

/** The headers of an answer but its length, as name, value pairs, in the order they are sent. */
function answerHead(answer: ApiAnswer, cors: readonly string[], close: boolean): string[] {
  const head = cors.slice();
  if (close) head.push('Connection', 'close');
  for (const name in answer.headers) head.push(name, answer.headers[name] as string);
  head.push('Content-Type', answer.contentType);
  return head;
}

/**
 * Sets `status` and `head` on `res`. With no header set on it before, by one `writeHead` (which
 * checks each header as `setHeader` would, without keeping them in a map of its own); else one
 * header after the other, as `setHeader` keeps them (one set again keeps its place).
 */
function writeHead(res: ServerResponse, status: number, head: readonly string[]): void {
  if (res.getHeaderNames().length === 0) return void res.writeHead(status, head as string[]);
  res.statusCode = status;
  setHeaders(res, head);
}

/** Sets the headers of `head` (name, value pairs) on `res`, one after the other. */
function setHeaders(res: ServerResponse, head: readonly string[]): void {
  for (let i = 0; i < head.length; i += 2) res.setHeader(head[i] as string, head[i + 1] as string);
}

const EMPTY = Buffer.alloc(0);

/** An answer that must not be sent (what it acknowledges was not kept): its connection is closed instead. */
function unanswered(res: ServerResponse, answer: ApiAnswer): void {
  if (answer.journaled) answer.journaled.undelivered = true;
  res.destroy();
}

/** What a file router passed to `res.end`, as bytes. */
function toBuffer(chunk: unknown, encoding: unknown): Buffer {
  if (Buffer.isBuffer(chunk)) return chunk;
  if (chunk instanceof Uint8Array) return Buffer.from(chunk);
  return Buffer.from(String(chunk), typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8');
}

/**
 * An answer a network fault loses: the service's answer set on the response (when the request
 * reached it), then the fault carried out on the socket. (`/v1` answers are never streamed.)
 */
function sendLost(res: ServerResponse, method: string, answer: ApiAnswer, cors: readonly string[], close: boolean, hooks: NetworkHooks): void {
  const { fault } = answer.network as NonNullable<ApiAnswer['network']>;
  const body = method === 'HEAD' ? Buffer.alloc(0) : Buffer.from(answer.body);
  if (res.headersSent) return loseAnswer(res, fault, body, hooks);
  // A gateway's page keeps the CORS headers set on the response.
  if (fault.phase !== 'after') {
    setHeaders(res, cors);
    if (close) res.setHeader('Connection', 'close');
  } else {
    res.statusCode = answer.status;
    setHeaders(res, answerHead(answer, cors, close));
    res.setHeader('Content-Length', Buffer.byteLength(answer.body));
  }
  loseAnswer(res, fault, body, hooks);
}

/** GET, HEAD and OPTIONS requests: their bodies, if any, are not read. */
function takesNoBody(method: string | undefined): boolean {
  return method === 'GET' || method === 'HEAD' || method === 'OPTIONS';
}

/**
 * Reads the request's body, up to 1 MiB, and calls `then` once with it: its bytes, null when it
 * has none, 'too_large' (the rest is not read: the connection is closed after the answer), or
 * ABORTED when the client went away before the body was complete (GET, HEAD and OPTIONS bodies
 * are not read: see `takesNoBody`). Behind `express.raw()` (the app mounted in another server),
 * the body it read is taken as is. No promise: a create is answered as its body ends.
 */
function readRawBody(req: IncomingMessage, then: (body: RawBody | typeof ABORTED) => void): void {
  // Mounted behind a raw body parser (express.raw()), the body has been read already.
  const read = (req as { body?: unknown }).body;
  if (Buffer.isBuffer(read)) return then(read.length > BODY_LIMIT_BYTES ? 'too_large' : read.length === 0 ? null : read);
  const declared = Number(req.headers['content-length']);
  if (declared > BODY_LIMIT_BYTES) return then('too_large');
  const chunks: Buffer[] = [];
  let length = 0;
  const done = (value: RawBody | typeof ABORTED): void => {
    req.removeListener('data', onData);
    req.removeListener('end', onEnd);
    req.removeListener('error', onAborted);
    req.removeListener('close', onAborted);
    then(value);
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
}
