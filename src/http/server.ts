/**
 * The HTTP server in front of the Express app: `http.createServer(app)`, as Express's own
 * `app.listen` makes it, plus what Express leaves to the server: answers in the service's error
 * shape for malformed HTTP, an unmet `Expect` and `CONNECT`, and a graceful drain.
 */
import { createServer, type IncomingMessage, type ServerResponse, type Server } from 'node:http';
import type { Duplex } from 'node:stream';
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
 * A `node:http` server for `app` that answers malformed HTTP, an unmet `Expect` and `CONNECT` in
 * the service's error shape; `requestId` gives those answers their `X-Request-Id`.
 */
export function createAppServer(app: Express, requestId: () => string = () => 'req_malformed'): AppServer {
  const server = createServer(app);
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
