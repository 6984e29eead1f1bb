/**
 * Error answers outside the JSON API's own answers, all in the service's error shape
 * `{ "error": { type, code, message, param? } }`:
 *
 * - the Express error handler: whatever a router or static file passes to `next(err)` (a bad
 *   `Range` or a failed precondition on a dashboard file, a missing asset) is answered in JSON,
 *   never Express's HTML page, a stack trace or a file path;
 * - an error thrown while answering (on the JSON API's path, or passed on by a router): logged,
 *   500 `internal_error`;
 * - `Expect` other than `100-continue`: 417 `expectation_failed` (instead of Node's bare 417);
 * - malformed HTTP: 400 `request_too_large` or `invalid_request` on the raw socket, then closed;
 * - `CONNECT`: 400 `invalid_request` (the simulator is no proxy), then the connection is closed.
 */
import { STATUS_CODES, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { ErrorRequestHandler } from 'express';
import { JSON_TYPE } from '../jsonType.js';
import { fail, type SimError } from '../core/errors.js';
import { corsHeaders, pathOf } from './paths.js';

/** Headers an error answer keeps from what was set before the error: the request id and CORS. */
function keepsHeader(name: string): boolean {
  return name === 'x-request-id' || name === 'vary' || name.startsWith('access-control-');
}

/**
 * The app's last handler: an error passed on by a router or `express.static` becomes an answer in
 * the error shape. 416 and 412 keep their meaning; another 4xx is a 404 `unknown_route` or a 400
 * `invalid_request`; anything else is the simulator's own fault, logged, and a 500.
 */
export function errorShapeHandler(log: (line: string) => void): ErrorRequestHandler {
  return (err: unknown, req, res, _next) => {
    const status = statusOf(err);
    if (res.headersSent || status >= 500) return answerInternalError(req, res, err, log);
    const headers: Record<string, string> = {};
    let error: SimError;
    if (status === 416) {
      const contentRange = headerOf(err, 'Content-Range') ?? 'bytes */0';
      const size = /\*\/(\d+)$/.exec(contentRange)?.[1] ?? '0';
      Object.assign(headers, { 'Accept-Ranges': 'bytes', 'Content-Range': contentRange });
      error = fail('range_not_satisfiable', {
        param: 'Range',
        message: `The requested range "${String(req.headers.range ?? '').slice(0, 100)}" is not satisfiable: this file is ${size} bytes long.`,
      });
    } else if (status === 412) {
      const param = req.headers['if-match'] !== undefined ? 'If-Match' : 'If-Unmodified-Since';
      error = fail('precondition_failed', {
        param,
        message: `The condition in ${param} does not hold for this file: it has changed since. Fetch it again without the condition.`,
      });
    } else if (status === 404) {
      error = fail('unknown_route', { message: `No file at ${req.method} ${req.path}.` });
    } else {
      const reason = STATUS_CODES[status];
      error = fail('invalid_request', { message: `This request cannot be served (${status}${reason ? ` ${reason}` : ''}).` });
    }
    replaceWithError(res, req.method, error, headers);
  };
}

/**
 * The simulator's own fault while answering: logged, and a 500 `internal_error` that keeps only
 * the request id and CORS headers set before. With part of the answer out already, the only
 * honest end is to cut the connection.
 */
export function answerInternalError(req: IncomingMessage, res: ServerResponse, err: unknown, log: (line: string) => void): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  // Behind Express, `originalUrl` is the URL as sent (`url` is relative to where the app is mounted).
  const url = (req as { originalUrl?: string }).originalUrl ?? req.url;
  log(`internal error on ${req.method} ${url}: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
  replaceWithError(res, req.method ?? 'GET', fail('internal_error'), {});
}

/** `Expect` with anything but `100-continue` (Node's 'checkExpectation'): 417 in the error shape. */
export function answerExpectation(req: IncomingMessage, res: ServerResponse, requestId: () => string): void {
  const error = fail('expectation_failed', {
    param: 'Expect',
    message: `Expect: ${String(req.headers.expect).slice(0, 100)} cannot be met: the only expectation the simulator meets is 100-continue. Send the request without this Expect header.`,
  });
  // The body, if any, is not read: the connection ends with this answer.
  sendError(res, req.method ?? 'GET', error, { 'X-Request-Id': requestId(), ...corsHeaders(pathOf(req.url)), Connection: 'close' });
}

/** `CONNECT` (Node's 'connect' event, with the raw socket): 400 in the error shape, then closed. */
export function answerConnect(socket: Duplex, requestId: () => string): void {
  // Node hands the socket over without its own error listener: a client gone mid-answer is no crash.
  socket.on('error', () => socket.destroy());
  const error = fail('invalid_request', {
    message: 'CONNECT is not supported: the simulator is an HTTP server, not a proxy. Send requests to its address directly.',
  });
  endSocketWithError(socket, error, requestId());
}

/**
 * A request line or headers too large for the server (431 in Node's terms), or bytes that are not
 * HTTP (Node's 'clientError'): 400 in the error shape where the connection still allows an answer,
 * then the connection is closed.
 */
export function answerMalformed(err: NodeJS.ErrnoException, socket: Duplex, requestId: () => string): void {
  if (!socket.writable || err.code === 'ECONNRESET') {
    socket.destroy();
    return;
  }
  const tooLarge = err.code === 'HPE_HEADER_OVERFLOW' || err.code === 'HPE_URI_TOO_LONG';
  const error = tooLarge
    ? fail('request_too_large', { message: 'The request line or headers are too large. Send shorter headers and URL.' })
    : fail('invalid_request', { message: `The request is not valid HTTP (${err.code ?? 'parse error'}).` });
  endSocketWithError(socket, error, requestId());
}

/** An error answer written as raw HTTP/1.1 on a socket that has no response object, which it then closes. */
function endSocketWithError(socket: Duplex, error: SimError, requestId: string): void {
  const body = JSON.stringify(error.toBody());
  socket.end(
    [
      `HTTP/1.1 ${error.status} ${STATUS_CODES[error.status] ?? ''}`,
      `Content-Type: ${JSON_TYPE}`,
      `Content-Length: ${Buffer.byteLength(body)}`,
      `X-Request-Id: ${requestId}`,
      'Connection: close',
      '',
      body,
    ].join('\r\n'),
  );
}

/** Sends `error` in place of whatever answer was being prepared: only the request id and CORS headers set before stay. */
function replaceWithError(res: ServerResponse, method: string, error: SimError, headers: Record<string, string>): void {
  for (const name of res.getHeaderNames()) if (!keepsHeader(name)) res.removeHeader(name);
  sendError(res, method, error, headers);
}

/** Sends `error` in the service's error shape with `headers` (no body for HEAD). */
export function sendError(res: ServerResponse, method: string, error: SimError, headers: Record<string, string>): void {
  const body = JSON.stringify(error.toBody());
  res.statusCode = error.status;
  for (const name in headers) res.setHeader(name, headers[name] as string);
  res.setHeader('Content-Type', JSON_TYPE);
  res.setHeader('Content-Length', Buffer.byteLength(body));
  res.end(method === 'HEAD' ? undefined : body);
}

function statusOf(err: unknown): number {
  const e = err as { status?: unknown; statusCode?: unknown } | null;
  const status = typeof e?.status === 'number' ? e.status : typeof e?.statusCode === 'number' ? e.statusCode : 500;
  return Number.isInteger(status) && status >= 400 && status <= 599 ? status : 500;
}

function headerOf(err: unknown, name: string): string | undefined {
  const value = (err as { headers?: Record<string, unknown> } | null)?.headers?.[name];
  return typeof value === 'string' ? value : undefined;
}
