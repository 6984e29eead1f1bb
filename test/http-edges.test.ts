/**
 * The edges of HTTP: a request whose client leaves mid-body is no request, every error answer
 * outside the JSON API (dashboard and media files, an unmet `Expect`, `CONNECT`, an error inside
 * a router) is in the service's error shape, and an answer's headers go out in one order.
 */
import express from 'express';
import { readFileSync, mkdtempSync, rmSync } from 'node:fs';
import { request as httpRequest, type Server } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import { afterEach, describe, expect, it } from 'vitest';
import { createSimulator, type SimulatorHandle } from '../src/index.js';
import { DASHBOARD_DIR } from '../src/http/dashboard.js';
import { errorShapeHandler } from '../src/http/errorAnswers.js';
import { createAppServer } from '../src/http/server.js';
import { bearer, createVideo, expectError, expectNoInternalErrors, fastBucket, makeSim, PROMPT } from './helpers.js';

const open: { close(): unknown }[] = [];
afterEach(async () => {
  for (const thing of open.splice(0)) await thing.close();
});

/** A listening server of `sim.app` (not the handle's own), so that a test sees its sockets close. */
async function serve(app: SimulatorHandle['app']): Promise<{ server: Server; port: number }> {
  const server = createAppServer(app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  open.push({ close: () => new Promise((resolve) => server.close(resolve)) });
  return { server, port: (server.address() as AddressInfo).port };
}

/**
 * Sends `raw` on a new connection (and with `halfClose`, closes the sending side at once) and
 * resolves to everything the server sent until it closed.
 */
function exchangeRaw(port: number, raw: string, { halfClose = false } = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => (halfClose ? socket.end(raw) : socket.write(raw)));
    let got = '';
    socket.on('data', (chunk) => (got += chunk.toString()));
    socket.on('close', () => resolve(got));
    socket.on('error', reject);
  });
}

/** An HTTP/1.1 answer as text: its status, lower-cased headers and parsed JSON body. */
function parseAnswer(text: string): { status: number; headers: Record<string, string>; body: unknown } {
  const [head = '', body = ''] = text.split('\r\n\r\n');
  const [statusLine = '', ...lines] = head.split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
  }
  return { status: Number(statusLine.split(' ')[1]), headers, body: JSON.parse(body) };
}

describe('a request whose client leaves before its body is complete', () => {
  it('is not handled: no journal entry, no rate-limit token, no transcript line', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sim-half-sent-'));
    const record = join(dir, 'transcript.jsonl');
    const logs: string[] = [];
    const sim = createSimulator({ scenario: 'fast', clock: 'manual', record, log: (l) => logs.push(l) });
    try {
      const { server, port } = await serve(sim.app);
      const serverSocketClosed = new Promise<void>((resolve) => server.once('connection', (s: Socket) => s.once('close', () => resolve())));
      const body = JSON.stringify({ model: 'video-3.2', prompt: PROMPT });
      const client = connect(port, '127.0.0.1');
      await new Promise<void>((resolve) => client.once('connect', resolve));
      client.write(
        'POST /v1/videos HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer sk_test_alice\r\n' +
          `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 20)}`,
      );
      // The server has the headers and half the body once the request object exists.
      await new Promise<void>((resolve) => server.once('request', () => resolve()));
      client.destroy();
      await serverSocketClosed;
      // The server's reaction to the close (nextTick and promise callbacks) is over by the next turn.
      await new Promise((resolve) => setImmediate(resolve));

      const next = await request(sim.app).get('/v1/videos').set(bearer('sk_test_alice'));
      expect(next.status).toBe(200);
      expect(next.headers).toMatchObject(fastBucket(1));
      const journal = await request(sim.app).get('/_sim/requests').query({ api_key: 'sk_test_alice' });
      expect(journal.body.data.map((r: { method: string; path: string }) => `${r.method} ${r.path}`)).toEqual(['GET /v1/videos']);
      const report = await request(sim.app).get('/_sim/report').query({ api_key: 'sk_test_alice' });
      expect(report.body.requests).toBe(1);
      await sim.close();
      const lines = readFileSync(record, 'utf8').trim().split('\n').slice(1).map((l) => JSON.parse(l) as { method: string; path: string });
      expect(lines.map((l) => `${l.method} ${l.path}`)).toEqual(['GET /v1/videos']);
      expect(logs).toEqual([]);
    } finally {
      await sim.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('is handled once its body is complete, though the client closes its side right after sending it', async () => {
    const sim = createSimulator({ scenario: 'fast', clock: 'manual', log: () => {} });
    open.push(sim);
    const { port } = await serve(sim.app);
    const body = JSON.stringify({ model: 'video-3.2', prompt: PROMPT });
    const client = connect(port, '127.0.0.1');
    await new Promise<void>((resolve) => client.once('connect', resolve));
    client.end(
      'POST /v1/videos HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer sk_test_alice\r\n' +
        `Content-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`,
    );
    client.resume();
    await new Promise((resolve) => client.once('close', resolve));
    const journal = await request(sim.app).get('/_sim/requests').query({ api_key: 'sk_test_alice' });
    expect(journal.body.data.map((r: { method: string; status: number }) => `${r.method} ${r.status}`)).toEqual(['POST 200']);
  });
});

describe('a client that half-closes its connection once its request is sent (nc -N, shutdown(SHUT_WR))', () => {
  it('gets its answer, a read and a create alike', async () => {
    const sim = createSimulator({ scenario: 'fast', clock: 'manual', log: () => {} });
    open.push(sim);
    const { port } = await serve(sim.app);
    const health = parseAnswer(await exchangeRaw(port, 'GET /_sim/health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n', { halfClose: true }));
    expect(health.status).toBe(200);
    expect(health.body).toMatchObject({ status: 'ok' });
    const body = JSON.stringify({ model: 'video-3.2', prompt: PROMPT });
    const created = parseAnswer(
      await exchangeRaw(
        port,
        'POST /v1/videos HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer sk_test_alice\r\n' +
          `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
        { halfClose: true },
      ),
    );
    expect(created.status).toBe(200);
    expect(created.body).toMatchObject({ object: 'video', status: 'queued' });
  });
});

describe("the dashboard's static files", () => {
  const sim = makeSim();
  afterEach(() => expectNoInternalErrors(sim));
  const appJsSize = readFileSync(join(DASHBOARD_DIR, 'app.js')).length;

  it('answer a range past the end with a JSON 416 range_not_satisfiable, Content-Range naming the size', async () => {
    const res = await request(sim.app).get('/_sim/ui/app.js').set('Range', `bytes=${appJsSize + 10}-`);
    expectError(res, 416, 'invalid_request_error', 'range_not_satisfiable', 'Range');
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(res.headers['content-range']).toBe(`bytes */${appJsSize}`);
    expect(res.headers['accept-ranges']).toBe('bytes');
    // Nothing of the file's own headers stays on the error.
    expect(res.headers.etag).toBeUndefined();
    expect(res.headers['last-modified']).toBeUndefined();
    expect(res.headers['x-request-id']).toMatch(/^req_/);
  });

  it('answer a failed If-Match on the page with a JSON 412 precondition_failed naming If-Match', async () => {
    const res = await request(sim.app).get('/_sim/').set('If-Match', '"not-its-etag"');
    expectError(res, 412, 'invalid_request_error', 'precondition_failed', 'If-Match');
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
  });

  it('answer a failed If-Unmodified-Since with a JSON 412 precondition_failed naming If-Unmodified-Since', async () => {
    const res = await request(sim.app).get('/_sim/ui/style.css').set('If-Unmodified-Since', 'Thu, 01 Jan 1970 00:00:00 GMT');
    expectError(res, 412, 'invalid_request_error', 'precondition_failed', 'If-Unmodified-Since');
  });

  it('answer a HEAD with a bad range with the 416 headers and no body', async () => {
    const res = await request(sim.app).head('/_sim/ui/app.js').set('Range', `bytes=${appJsSize}-`);
    expect(res.status).toBe(416);
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(res.text ?? '').toBe('');
  });

  it('still answer a satisfiable range with 206 and the bytes', async () => {
    const res = await request(sim.app).get('/_sim/ui/app.js').set('Range', 'bytes=0-9').buffer(true).parse((r, done) => {
      const chunks: Buffer[] = [];
      r.on('data', (c: Buffer) => chunks.push(c));
      r.on('end', () => done(null, Buffer.concat(chunks)));
    });
    expect(res.status).toBe(206);
    expect((res.body as Buffer).equals(readFileSync(join(DASHBOARD_DIR, 'app.js')).subarray(0, 10))).toBe(true);
  });
});

describe('media files and If-Match', () => {
  const sim = makeSim();
  afterEach(() => expectNoInternalErrors(sim));

  it('answer 412 precondition_failed when If-Match names another ETag, and the file when it names its own or *', async () => {
    const created = await request(sim.app).post('/v1/images').set(bearer()).send({ prompt: PROMPT });
    expect(created.status).toBe(200);
    const path = new URL(created.body.url as string).pathname;
    const plain = await request(sim.app).get(path);
    expect(plain.status).toBe(200);
    const etag = plain.headers.etag as string;

    expectError(await request(sim.app).get(path).set('If-Match', '"another"'), 412, 'invalid_request_error', 'precondition_failed', 'If-Match');
    // A weak tag never matches If-Match (the strong comparison).
    expect((await request(sim.app).get(path).set('If-Match', `W/${etag}`)).status).toBe(412);
    expect((await request(sim.app).get(path).set('If-Match', `"another", ${etag}`)).status).toBe(200);
    expect((await request(sim.app).get(path).set('If-Match', '*')).status).toBe(200);
  });
});

describe('the Express error handler', () => {
  it('answers an error thrown inside a router with a JSON 500 internal_error, logged, without its stack or paths', async () => {
    const logs: string[] = [];
    const app = express();
    app.get('/boom', () => {
      throw new Error(`cannot read ${DASHBOARD_DIR}secret.txt`);
    });
    app.use(errorShapeHandler((l) => logs.push(l)));
    const res = await request(app).get('/boom');
    expectError(res, 500, 'api_error', 'internal_error');
    expect(res.text).not.toContain(DASHBOARD_DIR);
    expect(res.text).not.toContain('at ');
    expect(logs).toHaveLength(1);
    expect(logs[0]).toMatch(/^internal error on GET \/boom: Error: cannot read/);
  });

  it('answers an error that already sent part of its answer by cutting the connection', async () => {
    const app = express();
    app.get('/half', (_req, res, next) => {
      res.writeHead(200, { 'Content-Length': '100' });
      res.write('partial');
      next(new Error('the rest could not be read'));
    });
    app.use(errorShapeHandler(() => {}));
    await expect(request(app).get('/half')).rejects.toThrow();
  });
});

describe('an Expect other than 100-continue', () => {
  for (const [path, cors] of [
    ['/v1/videos', '*'],
    ['/_sim/reset', undefined],
  ] as const) {
    it(`is answered 417 expectation_failed in the error shape on ${path}, and the request is not handled`, async () => {
      const sim = makeSim();
      open.push(sim);
      const url = await sim.listen(0);
      const answer = await new Promise<{ status: number; headers: Record<string, unknown>; text: string }>((resolve, reject) => {
        const req = httpRequest(`${url}${path}`, {
          method: 'POST',
          headers: { ...bearer(), 'Content-Type': 'application/json', Expect: 'teapot' },
        });
        req.on('response', (res) => {
          let text = '';
          res.on('data', (c: Buffer) => (text += c.toString()));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text }));
        });
        req.on('error', reject);
        req.end(JSON.stringify({ model: 'video-3.2', prompt: PROMPT }));
      });
      expectError({ status: answer.status, body: JSON.parse(answer.text) }, 417, 'invalid_request_error', 'expectation_failed', 'Expect');
      expect(answer.headers['content-type']).toBe('application/json; charset=utf-8');
      expect(answer.headers['x-request-id']).toMatch(/^req_/);
      expect(answer.headers['access-control-allow-origin']).toBe(cors);
      expect(answer.headers.connection).toBe('close');
      const journal = await request(sim.app).get('/_sim/requests');
      expect(journal.body.data).toEqual([]);
    });
  }

  it('leaves Expect: 100-continue working', async () => {
    const sim = makeSim();
    open.push(sim);
    const url = await sim.listen(0);
    const status = await new Promise<number>((resolve, reject) => {
      const req = httpRequest(`${url}/v1/videos`, { method: 'POST', headers: { ...bearer(), 'Content-Type': 'application/json', Expect: '100-continue' } });
      req.on('continue', () => req.end(JSON.stringify({ model: 'video-3.2', prompt: PROMPT })));
      req.on('response', (res) => (res.resume(), resolve(res.statusCode ?? 0)));
      req.on('error', reject);
    });
    expect(status).toBe(200);
  });
});

describe('CONNECT', () => {
  it('is answered 400 invalid_request in the error shape, then the connection is closed', async () => {
    const sim = makeSim();
    open.push(sim);
    await sim.listen(0);
    const text = await exchangeRaw(sim.port as number, 'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n');
    const answer = parseAnswer(text);
    expectError(answer, 400, 'invalid_request_error', 'invalid_request', null);
    expect(answer.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(answer.headers['x-request-id']).toMatch(/^req_/);
    expect(answer.headers.connection).toBe('close');
    // The simulator is still serving.
    expect((await createVideo(sim)).status).toBe(200);
  });
});

describe("an answer's headers", () => {
  /** The names of the headers of a raw answer, in the order they were sent. */
  const headerNames = (text: string): string[] =>
    (text.split('\r\n\r\n')[0] ?? '')
      .split('\r\n')
      .slice(1)
      .map((line) => line.slice(0, line.indexOf(':')));
  const get = (path: string, key = 'sk_test_alice'): string =>
    `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${key}\r\nConnection: close\r\n\r\n`;
  const rateLimit = ['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset'];
  const cors = ['Access-Control-Allow-Origin', 'Access-Control-Expose-Headers'];

  it("go out in one order: CORS, the request id, the rate-limit headers, Retry-After, the content type and length, then Node's own", async () => {
    const sim = createSimulator({ scenario: 'rate-limited', clock: 'manual' });
    open.push(sim);
    const port = Number(new URL(await sim.listen(0)).port);
    const first = await exchangeRaw(port, get('/v1/videos'));
    expect(headerNames(first)).toEqual([...cors, 'X-Request-Id', ...rateLimit, 'Content-Type', 'Content-Length', 'Date', 'Connection']);
    for (let i = 0; i < 9; i++) await exchangeRaw(port, get('/v1/videos'));
    const refused = await exchangeRaw(port, get('/v1/videos'));
    expect(refused).toMatch(/^HTTP\/1\.1 429 /);
    expect(headerNames(refused)).toEqual([...cors, 'X-Request-Id', ...rateLimit, 'Retry-After', 'Content-Type', 'Content-Length', 'Date', 'Connection']);
    const control = await exchangeRaw(port, get('/_sim/health'));
    expect(headerNames(control)).toEqual(['X-Request-Id', 'Content-Type', 'Content-Length', 'Date', 'Connection']);
  });

  it('put the Connection: close of a body too large right after the CORS headers', async () => {
    const sim = createSimulator({ scenario: 'fast', clock: 'manual' });
    open.push(sim);
    const port = Number(new URL(await sim.listen(0)).port);
    const text = await exchangeRaw(
      port,
      `POST /v1/videos HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer sk_test_alice\r\nContent-Type: application/json\r\nContent-Length: ${2 * 1024 * 1024}\r\n\r\n{`,
    );
    expect(text).toMatch(/^HTTP\/1\.1 400 /);
    expect(headerNames(text)).toEqual([...cors, 'Connection', 'X-Request-Id', ...rateLimit, 'Content-Type', 'Content-Length', 'Date']);
  });
});
