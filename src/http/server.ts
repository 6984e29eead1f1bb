/**
 * The HTTP server in front of the app: a plain `node:http` server, plus what Express leaves to the
 * server: answers in the service's error shape for malformed HTTP, an unmet `Expect` and
 * `CONNECT`, and a graceful drain.
 *
 * For an app made by `createApp`, the server calls the JSON API's handler (`app.api`) itself and
 * gives Express only the files (`/cdn`, the dashboard). Express's `app.handle` gives every request
 * and response the app's prototypes (`Object.setPrototypeOf`); on Node 20 each object so changed
 * leaves kilobytes that outlive a young-generation collection: through Express a poll cost about
 * four times the CPU time, and each stored generation more resident memory (bench/README.md). The
 * API handler needs nothing of Express, so its requests never meet that call; Node's own objects
 * go through unchanged. Any other app or listener (a plain Express app, one that wraps the
 * simulator's, `createSimulator`'s own dispatcher) gets every request, as `http.createServer(app)`
 * would give it.
 */
import { createServer, type IncomingMessage, type RequestListener, type ServerResponse, type Server } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Express } from 'express';
import type { SimulatorApp } from './app.js';
import { every, systemClock, type HostClock } from '../hostClock.js';
import { isApiPath, pathOf } from './paths.js';
import { answerConnect, answerExpectation, answerMalformed } from './errorAnswers.js';

/** A server that can stop gracefully: see `drain`. */
export type AppServer = Server & {
  /**
   * Stops accepting connections, lets every request in progress get its answer (each answer from
   * now on closes its connection; idle keep-alive connections, and those that have sent nothing
   * yet, are closed at once), and resolves once the last connection has closed, with how many
   * answers were sent meanwhile (the requests drained). Connections still open after `graceMs` are
   * cut. Both run on the server's host clock.
   */
  drain(graceMs: number): Promise<number>;
};

/**
 * How long an idle keep-alive connection stays open (Node's default, stated here because a proxy in
 * front must drop its idle connections to a shard first: src/deploy/nginx.ts).
 */
export const KEEP_ALIVE_TIMEOUT_MS = 5_000;

/**
 * A `node:http` server for `app` that answers malformed HTTP, an unmet `Expect` and `CONNECT` in
 * the service's error shape; `requestId` gives those answers their `X-Request-Id`; a drain's sweeps
 * and its grace run on `hostClock`.
 */
export function createAppServer(
  app: Express | SimulatorApp | RequestListener,
  requestId: () => string = () => 'req_malformed',
  hostClock: HostClock = systemClock,
): AppServer {
  // Answers sent in full while draining: a request in progress when the drain begins is counted
  // when its answer is out (`finish`; a cut connection never finishes), so each response is
  // watched, by one shared listener. It is added as the request arrives, before the app sees it
  // (and so before the API adds its own, the one that begins the drain after POST /_sim/shutdown
  // is answered: that answer is not one drained). One 'request' listener does both: Node copies
  // the list of listeners of an event that has more than one, at every request.
  let draining = false;
  let answered = 0;
  function finished(): void {
    if (draining) answered++;
  }
  const listener = listenerFor(app);
  const server = createServer((req, res) => {
    res.on('finish', finished);
    listener(req, res);
  });
  server.keepAliveTimeout = KEEP_ALIVE_TIMEOUT_MS;
  const sockets = openSockets(server);
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => answerMalformed(err, socket, requestId));
  server.on('checkExpectation', (req: IncomingMessage, res: ServerResponse) => answerExpectation(req, res, requestId));
  server.on('connect', (_req: IncomingMessage, socket: Duplex) => answerConnect(socket, requestId));
  let drained: Promise<number> | undefined;
  return Object.assign(server, {
    drain: (graceMs: number): Promise<number> => {
      draining = true;
      return (drained ??= drain(server, sockets, graceMs, hostClock).then(() => answered));
    },
  });
}

/** API paths to the app's JSON API handler (when it has one), everything else to Express. */
function listenerFor(app: Express | SimulatorApp | RequestListener): RequestListener {
  return 'api' in app ? apiFirst(app.api, () => app) : app;
}

/** API paths to the JSON API's handler `api`; every other path to the app `filesApp` gives (which may make it then). */
export function apiFirst(api: RequestListener, filesApp: () => RequestListener): RequestListener {
  return (req, res) => (isApiPath(pathOf(req.url)) ? api(req, res) : filesApp()(req, res));
}

/** How often a draining server closes the connections that have become idle. */
const IDLE_SWEEP_MS = 20;

/**
 * The server's open connections, each from when it is accepted until it closes (once per
 * connection: nothing per request).
 */
function openSockets(server: Server): ReadonlySet<Socket> {
  const open = new Set<Socket>();
  server.on('connection', (socket: Socket) => {
    open.add(socket);
    socket.once('close', () => open.delete(socket));
  });
  return open;
}

/**
 * Nothing is tracked per request before a drain: Node knows which connections are idle, and a
 * request in progress makes its connection idle once answered, so sweeping the idle ones until
 * none is left closes each as soon as its last answer is out. Node does not count as idle a
 * connection that has sent nothing yet (a client's spare, opened ahead of a request: fetch opens
 * them): one that has still sent nothing at the next sweep is closed as well (the sweeps are
 * event-loop turns apart, so whatever it had sent by then would have been read).
 */
function drain(server: Server, sockets: ReadonlySet<Socket>, graceMs: number, hostClock: HostClock): Promise<void> {
  return new Promise<void>((resolve) => {
    // Requests that arrive on open connections from now on are answered, with `Connection: close`.
    server.prependListener('request', (_req: IncomingMessage, res: ServerResponse) => res.setHeader('Connection', 'close'));
    let silent = new Set<Socket>();
    const closeSilent = (): void => {
      const now = new Set<Socket>();
      for (const socket of sockets) {
        if (socket.bytesRead > 0) continue;
        if (silent.has(socket)) socket.destroy();
        else now.add(socket);
      }
      silent = now;
    };
    const sweep = every(hostClock, IDLE_SWEEP_MS, () => {
      server.closeIdleConnections();
      closeSilent();
    });
    const cut = hostClock.setTimeout(() => server.closeAllConnections(), graceMs);
    sweep.unref?.();
    cut.unref?.();
    server.close(() => {
      sweep.clear();
      cut.clear();
      resolve();
    });
    server.closeIdleConnections();
    closeSilent();
  });
}
