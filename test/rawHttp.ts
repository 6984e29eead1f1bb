/**
 * A raw HTTP/1.1 client on `node:net`, for the tests of network faults: it sends one request and
 * reports every byte received and how the connection ended, which an HTTP client library hides.
 */
import { connect } from 'node:net';

export interface RawExchange {
  /** Every byte received, as received. */
  bytes: Buffer;
  /**
   * How the connection ended: `reset` (ECONNRESET: a TCP RST), `close` (the server closed it
   * cleanly), or `open` (still open when `giveUpAfter` was reached; the client then closed it).
   */
  end: 'reset' | 'close' | 'open';
  /** The status line's code, when one was received. */
  status: number | undefined;
  /** The headers received (names in lower case), when the head was complete. */
  headers: Record<string, string>;
  /** The body bytes received after the head. */
  body: Buffer;
}

export interface RawRequest {
  method: string;
  path: string;
  headers?: Record<string, string>;
  body?: string;
  /**
   * The client gives up (and closes the connection) after this event: a promise that resolves when
   * it should (a hang is observed by the test, then let go). Default: never.
   */
  giveUp?: Promise<unknown>;
  /** Called once the request has been written. */
  sent?: () => void;
}

/** Sends one request to `baseUrl` over a new connection and resolves once the connection has ended. */
export function rawRequest(baseUrl: string, request: RawRequest): Promise<RawExchange> {
  const url = new URL(baseUrl);
  return new Promise((resolve) => {
    const socket = connect({ host: url.hostname, port: Number(url.port) });
    const chunks: Buffer[] = [];
    let settled = false;
    const settle = (end: RawExchange['end']): void => {
      if (settled) return;
      settled = true;
      socket.destroy();
      resolve(parse(Buffer.concat(chunks), end));
    };
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', (e: NodeJS.ErrnoException) => settle(e.code === 'ECONNRESET' ? 'reset' : 'close'));
    socket.on('end', () => settle('close'));
    socket.on('close', () => settle('close'));
    socket.on('connect', () => {
      const body = request.body ?? '';
      const headers: Record<string, string> = { host: `${url.hostname}:${url.port}`, ...request.headers };
      if (body !== '') headers['content-length'] = String(Buffer.byteLength(body));
      const head = `${request.method} ${request.path} HTTP/1.1\r\n${Object.entries(headers)
        .map(([name, value]) => `${name}: ${value}\r\n`)
        .join('')}\r\n`;
      socket.write(head + body, () => request.sent?.());
    });
    void request.giveUp?.then(() => settle('open'));
  });
}

function parse(bytes: Buffer, end: RawExchange['end']): RawExchange {
  const headEnd = bytes.indexOf('\r\n\r\n');
  if (headEnd < 0) return { bytes, end, status: undefined, headers: {}, body: Buffer.alloc(0) };
  const lines = bytes.subarray(0, headEnd).toString('latin1').split('\r\n');
  const status = Number((lines[0] ?? '').split(' ')[1]);
  const headers: Record<string, string> = {};
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(':');
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  return { bytes, end, status, headers, body: bytes.subarray(headEnd + 4) };
}

/** Waits until `check` holds, asking again every few milliseconds; fails after `boundMs` (a liveness bound). */
export async function eventually<T>(what: string, read: () => Promise<T> | T, check: (value: T) => boolean, boundMs = 5000): Promise<T> {
  const deadline = Date.now() + boundMs;
  for (;;) {
    const value = await read();
    if (check(value)) return value;
    if (Date.now() > deadline) throw new Error(`${what}: still not so after ${boundMs} ms (last: ${JSON.stringify(value)})`);
    await new Promise((r) => setTimeout(r, 5));
  }
}
