/**
 * Network faults on the socket: the core decides which (`src/core/faults/network.ts`, one descriptor per
 * kind), this carries it out on a response whose status and headers are set and whose body is
 * known, each kind by its entry in `ON_SOCKET`.
 *
 *   reset     `socket.resetAndDestroy()`: a TCP RST (the client sees ECONNRESET)
 *   close     `socket.destroy()` with nothing written: a clean close (FIN)
 *   hang      nothing written; the socket is destroyed when the client closes it, when `hang_ms`
 *             passes on the host clock, or at once when the server stops (the `stopping` signal)
 *   truncate  the status line, the headers (the whole body's Content-Length) and the first bytes
 *             of the body, then the socket is destroyed
 *   gateway   the gateway's status and HTML page in place of the answer (the service's headers
 *             dropped, CORS kept so that a page can read it), then the connection closes
 *   slow      the status line and headers at once, then the body at its pace (on the host clock); a
 *             stop sends the rest at once
 */
import type { ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { bodyBytesSent, gatewayPage, holdsConnection, type NetworkFault, type NetworkKind } from '../core/faults/network.js';
import type { HostClock, HostTimer } from '../hostClock.js';

/** What carrying out a fault needs beside the response. */
export interface NetworkHooks {
  /** Aborted when the server stops: a hang ends, a slow body is sent whole. */
  readonly stopping: AbortSignal;
  /** Called once when a held connection (a hang, a slow answer) has closed. */
  readonly released: () => void;
  /** The host clock `hang_ms` and a slow body's pace run on. */
  readonly hostClock: HostClock;
}

/** How often a slow body is written (ms): small enough to look steady, large enough to cost little. */
const SLOW_TICK_MS = 100;

/** Headers a gateway keeps of those already set: the CORS layer's, which a browser needs to read any answer. */
const KEPT_BY_GATEWAY = /^access-control-/i;

/** How each kind is carried out on a socket that is still open (the compiler asks for a new kind's entry). */
export const ON_SOCKET: Record<NetworkKind, (res: ServerResponse, socket: Socket, fault: NetworkFault, body: Buffer, hooks: NetworkHooks) => void> = {
  reset: (_res, socket) => void socket.resetAndDestroy(),
  close: (_res, socket) => void socket.destroy(),
  hang: (_res, socket, fault, _body, hooks) => hold(socket, fault.hangMs, hooks),
  truncate: (res, socket, fault, body) => truncate(res, socket, body.subarray(0, bodyBytesSent(fault, body.length))),
  gateway: (res, _socket, fault) => gateway(res, fault.gatewayStatus),
  slow: (res, _socket, fault, body, hooks) => slow(res, body, fault.bytesPerSecond, hooks),
};

/**
 * Carries out `fault` on `res`, whose status and headers are set (Content-Length included, but
 * for `gateway`); `body` is the whole body the answer would have had (empty for HEAD).
 */
export function loseAnswer(res: ServerResponse, fault: NetworkFault, body: Buffer, hooks: NetworkHooks): void {
  const socket = res.socket;
  if (socket === null || socket.destroyed) {
    if (holdsConnection(fault.kind)) hooks.released();
    return;
  }
  ON_SOCKET[fault.kind](res, socket, fault, body, hooks);
}

function hold(socket: Socket, ms: number, hooks: NetworkHooks): void {
  let done = false;
  const end = (): void => {
    if (done) return;
    done = true;
    timer.clear();
    hooks.stopping.removeEventListener('abort', end);
    socket.removeListener('close', end);
    socket.destroy();
    hooks.released();
  };
  const timer = hooks.hostClock.setTimeout(end, ms);
  timer.unref?.();
  socket.once('close', end);
  if (hooks.stopping.aborted) end();
  else hooks.stopping.addEventListener('abort', end, { once: true });
}

function truncate(res: ServerResponse, socket: Socket, part: Buffer): void {
  res.flushHeaders();
  if (part.length === 0) return void socket.end(() => socket.destroy());
  // Destroyed once the bytes are handed to the system: the client gets them, then the end of the connection.
  res.write(part, () => socket.destroy());
}

function gateway(res: ServerResponse, status: number): void {
  for (const name of res.getHeaderNames()) if (!KEPT_BY_GATEWAY.test(name)) res.removeHeader(name);
  const page = gatewayPage(status);
  res.statusCode = status;
  res.setHeader('Content-Type', 'text/html');
  res.setHeader('Content-Length', Buffer.byteLength(page));
  res.setHeader('Connection', 'close');
  res.end(res.req?.method === 'HEAD' ? undefined : page);
}

function slow(res: ServerResponse, body: Buffer, bytesPerSecond: number, { stopping, released, hostClock }: NetworkHooks): void {
  res.flushHeaders();
  let sent = 0;
  let allowance = 0;
  let timer: HostTimer | undefined;
  const finish = (): void => {
    timer?.clear();
    stopping.removeEventListener('abort', finish);
    if (!res.destroyed && !res.writableEnded) res.end(body.subarray(sent));
    sent = body.length;
  };
  const tick = (): void => {
    if (res.destroyed) return finish();
    allowance += (bytesPerSecond * SLOW_TICK_MS) / 1000;
    const n = Math.min(Math.floor(allowance), body.length - sent);
    allowance -= n;
    if (sent + n >= body.length) return finish();
    if (n > 0) res.write(body.subarray(sent, sent + n));
    sent += n;
    timer = hostClock.setTimeout(tick, SLOW_TICK_MS);
  };
  res.once('close', () => {
    timer?.clear();
    stopping.removeEventListener('abort', finish);
    released();
  });
  if (stopping.aborted) return finish();
  stopping.addEventListener('abort', finish, { once: true });
  // The first tick's bytes go at once (a body that fits in it is not held back a whole tick).
  tick();
}
