/**
 * The HTTP server in front of the Express app.
 *
 * Express 5 re-prototypes every request and response (`Object.setPrototypeOf(req, app.request)`
 * and the same for `res`, in `app.handle`). On Node 20 that costs far more than it looks: each
 * object so changed leaves several kilobytes that outlive a young-generation collection, so a
 * trivial Express app promotes about 7 KB to the old generation per request (a bare `node:http`
 * server: none), runs a full collection every few thousand requests, and answers at about a third
 * of the rate it does without the change (`--trace-gc-nvp`, 32 connections; see
 * bench/README.md).
 *
 * Node lets a server build its requests and responses from given classes (`http.createServer`'s
 * `IncomingMessage` and `ServerResponse` options). Building them on the app's own prototypes from
 * the start makes Express's `setPrototypeOf` a no-op (the prototype is already the one it sets)
 * and leaves the objects exactly as Express would have made them.
 */
import { createServer, IncomingMessage, ServerResponse, type Server } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Socket } from 'node:net';
import type { Express } from 'express';
import { fail } from '../core/errors.js';
import { answerConnect, answerExpectation } from './errorAnswers.js';

/** A server that can stop gracefully: see `drain`. */
export type AppServer = Server & {
  /**
   * Stops accepting connections, lets every request in progress get its answer (each answer from
   * now on closes its connection; idle keep-alive connections are closed at once), and resolves
   * once the last connection has closed. Connections still open after `graceMs` are cut.
   */
  drain(graceMs: number): Promise<void>;
};

/**
 * A `node:http` server for `app` whose requests and responses are born with the app's prototypes,
 * and which answers malformed HTTP, an unmet `Expect` and `CONNECT` in the service's error shape.
 * `requestId` gives those answers their `X-Request-Id`.
 */
export function createAppServer(app: Express, requestId: () => string = () => 'req_malformed'): AppServer {
  const server = hostApp(app);
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => answerMalformed(err, socket, requestId));
  server.on('checkExpectation', (req: IncomingMessage, res: ServerResponse) => answerExpectation(req, res, requestId));
  server.on('connect', (_req: IncomingMessage, socket: Duplex) => answerConnect(socket, requestId));
  let drained: Promise<void> | undefined;
  return Object.assign(server, {
    drain: (graceMs: number): Promise<void> => (drained ??= drain(server, graceMs)),
  });
}

/** How often a draining server closes the connections that have become idle. */
const IDLE_SWEEP_MS = 20;

/**
 * Nothing is tracked per request before a drain: Node knows which connections are idle, and a
 * request in progress makes its connection idle once answered, so sweeping the idle ones until
 * none is left closes each as soon as its last answer is out.
 */
function drain(server: Server, graceMs: number): Promise<void> {
  return new Promise<void>((resolve) => {
    // Requests that arrive on open connections from now on are answered, with `Connection: close`.
    server.prependListener('request', (_req: IncomingMessage, res: ServerResponse) => res.setHeader('Connection', 'close'));
    const sweep = setInterval(() => server.closeIdleConnections(), IDLE_SWEEP_MS);
    const cut = setTimeout(() => server.closeAllConnections(), graceMs);
    sweep.unref();
    cut.unref();
    server.close(() => {
      clearInterval(sweep);
      clearTimeout(cut);
      resolve();
    });
    server.closeIdleConnections();
  });
}

/**
 * A request line or headers too large for the server (431 in Node's terms), or bytes that are not
 * HTTP, get a 400 in the section-7 shape (where the connection still allows an answer), then the
 * connection is closed.
 */
function answerMalformed(err: NodeJS.ErrnoException, socket: Duplex, requestId: () => string): void {
  if (!socket.writable || (err as { code?: string }).code === 'ECONNRESET') {
    socket.destroy();
    return;
  }
  const tooLarge = err.code === 'HPE_HEADER_OVERFLOW' || err.code === 'HPE_URI_TOO_LONG';
  const error = tooLarge
    ? fail('request_too_large', { message: 'The request line or headers are too large. Send shorter headers and URL.' })
    : fail('invalid_request', { message: `The request is not valid HTTP (${err.code ?? 'parse error'}).` });
  const body = JSON.stringify(error.toBody());
  socket.end(
    [
      'HTTP/1.1 400 Bad Request',
      'Content-Type: application/json; charset=utf-8',
      `Content-Length: ${Buffer.byteLength(body)}`,
      `X-Request-Id: ${requestId()}`,
      'Connection: close',
      '',
      body,
    ].join('\r\n'),
  );
}

function hostApp(app: Express): Server {
  // Node's own constructors are plain functions; a later Node that made them classes could not be
  // called this way, and then Express's default (re-prototyping each request) is kept.
  if (isClass(IncomingMessage) || isClass(ServerResponse)) return createServer(app);
  const initRequest = IncomingMessage as unknown as (this: IncomingMessage, socket: Socket) => void;
  const initResponse = ServerResponse as unknown as (this: ServerResponse, req: IncomingMessage, options?: unknown) => void;
  // Function constructors, because `prototype` must be exactly `app.request` / `app.response`:
  // V8 skips Express's `setPrototypeOf` only when the prototype is already the one it sets.
  // (`Reflect.construct` with these as the new target would do the same, at a fifth of the speed.)
  function AppRequest(this: IncomingMessage, socket: Socket) {
    initRequest.call(this, socket);
  }
  AppRequest.prototype = app.request;
  function AppResponse(this: ServerResponse, req: IncomingMessage, options?: unknown) {
    initResponse.call(this, req, options);
  }
  AppResponse.prototype = app.response;
  return createServer(
    {
      IncomingMessage: AppRequest as unknown as typeof IncomingMessage,
      ServerResponse: AppResponse as unknown as typeof ServerResponse,
    },
    app,
  );
}

function isClass(constructor: unknown): boolean {
  return Function.prototype.toString.call(constructor).startsWith('class');
}
