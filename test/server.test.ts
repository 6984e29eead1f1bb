/**
 * The HTTP server in front of the app (src/http/server.ts): Node's own requests and responses
 * handed to an Express app as Express's `app.listen` would; for the simulator's app, the JSON API
 * answered without Express and only the files handed to it.
 */
import express from 'express';
import { spawnSync } from 'node:child_process';
import { IncomingMessage, ServerResponse, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import request from 'supertest';
import { afterEach, describe, expect, it } from 'vitest';
import { createSimulator } from '../src/index.js';
import { createAppServer } from '../src/http/server.js';
import { bearer, expectError, PROMPT } from './helpers.js';

let server: Server | undefined;
afterEach(async () => {
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  server = undefined;
});

async function listen(s: Server): Promise<string> {
  server = s;
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(s.address() as AddressInfo).port}`;
}

describe('the app server', () => {
  it("hands Express Node's own requests and responses, which Express answers as usual", async () => {
    const app = express();
    app.get('/v1/things/:id', (req, res) => {
      res.json({ id: req.params.id, query: req.query, app: req.app === app });
    });
    const s = createAppServer(app);
    const arrived: { req: unknown; res: unknown }[] = [];
    // Runs before the app's own listener, so it sees the objects as Node built them.
    s.prependListener('request', (req, res) => {
      arrived.push({ req: Object.getPrototypeOf(req), res: Object.getPrototypeOf(res) });
    });
    const url = await listen(s);

    const answer = await fetch(`${url}/v1/things/abc?x=1`, { headers: { Connection: 'close' } });
    expect(answer.status).toBe(200);
    expect(await answer.json()).toEqual({ id: 'abc', query: { x: '1' }, app: true });
    expect(arrived).toHaveLength(1);
    expect(arrived[0]?.req).toBe(IncomingMessage.prototype);
    expect(arrived[0]?.res).toBe(ServerResponse.prototype);
  });

  it('serves keep-alive requests one after another on one connection', async () => {
    const app = express();
    app.post('/echo', express.json(), (req, res) => res.status(201).json(req.body));
    const url = await listen(createAppServer(app));
    for (let i = 0; i < 3; i++) {
      const answer = await fetch(`${url}/echo`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ i }),
      });
      expect(answer.status).toBe(201);
      expect(await answer.json()).toEqual({ i });
    }
  });
});

describe("the simulator's app server", () => {
  it("answers the JSON API on Node's own requests and responses, and hands only the files to Express", async () => {
    const sim = createSimulator({ scenario: 'fast', clock: 'manual', log: () => {} });
    const s = createAppServer(sim.app);
    const prototypes: Record<string, { req: unknown; res: unknown }> = {};
    // Runs before the server's own listener (the request as sent); the prototypes are read once answered.
    s.prependListener('request', (req: IncomingMessage, res: ServerResponse) => {
      const sent = `${req.method} ${req.url}`;
      res.once('finish', () => (prototypes[sent] = { req: Object.getPrototypeOf(req), res: Object.getPrototypeOf(res) }));
    });
    const url = await listen(s);

    expect((await fetch(`${url}/v1/videos`, { headers: bearer() })).status).toBe(200);
    expect((await fetch(`${url}/_sim/health`)).status).toBe(200);
    expect((await fetch(`${url}/v1/videos`, { method: 'OPTIONS', headers: { Origin: 'http://localhost:5173', 'Access-Control-Request-Method': 'POST' } })).status).toBe(204);
    expect((await fetch(`${url}/_sim/`)).status).toBe(200);
    expect((await fetch(`${url}/cdn/images/img_nope.png`)).status).toBe(404);

    const node = { req: IncomingMessage.prototype, res: ServerResponse.prototype };
    const express = { req: sim.app.request, res: sim.app.response };
    expect(prototypes).toEqual({
      'GET /v1/videos': node,
      'GET /_sim/health': node,
      'OPTIONS /v1/videos': node,
      'GET /_sim/': express,
      'GET /cdn/images/img_nope.png': express,
    });
  });

  it.each([
    ['through the server, without Express', 'server'],
    ['through the Express app', 'app'],
  ] as const)('answers an error thrown while answering an API request %s with a logged 500 internal_error', async (_label, via) => {
    const logs: string[] = [];
    const sim = createSimulator({
      scenario: 'fast',
      clock: 'manual',
      log: (line) => logs.push(line),
      sleep: () => {
        throw new Error('the sleep broke');
      },
    });
    sim.faults.queue({ path: '/v1/videos', method: 'POST', latency_ms: 1000, times: 1 });
    const target = via === 'server' ? await listen(createAppServer(sim.app)) : sim.app;
    const res = await request(target).post('/v1/videos').set(bearer()).send({ model: 'video-3.2', prompt: PROMPT });
    expectError(res, 500, 'api_error', 'internal_error');
    expect(res.headers['access-control-allow-origin']).toBe('*');
    expect(logs).toHaveLength(1);
    expect(logs[0]).toMatch(/^internal error on POST \/v1\/videos: Error: the sleep broke/);
  });
});

describe('loading Express', () => {
  it('waits for the first file request: a simulator that answers only the JSON API never loads it', async () => {
    // A fresh process, since this one has loaded Express already.
    const script = `
      import { createRequire } from 'node:module';
      import { createSimulator } from ${JSON.stringify(new URL('../dist/index.js', import.meta.url).href)};
      const loaded = () => Object.keys(createRequire(import.meta.url).cache).some((f) => f.includes('/node_modules/express/'));
      const sim = createSimulator({ scenario: 'fast', clock: 'manual', log: () => {} });
      const url = await sim.listen(0);
      const seen = [];
      const created = await fetch(url + '/v1/videos', { method: 'POST', headers: { Authorization: 'Bearer sk_test_alice', 'Content-Type': 'application/json' }, body: JSON.stringify({ model: 'video-3.2', prompt: 'A slow dolly shot across a rain-soaked neon street at night.' }) });
      seen.push([created.status, loaded()]);
      const health = await fetch(url + '/_sim/health');
      seen.push([health.status, loaded()]);
      const file = await fetch(url + '/cdn/images/img_nope.png');
      seen.push([file.status, loaded()]);
      await sim.close();
      console.log(JSON.stringify(seen));
    `;
    const child = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', timeout: 30_000 });
    expect(child.stderr).toBe('');
    expect(JSON.parse(child.stdout)).toEqual([
      [200, false],
      [200, false],
      [404, true],
    ]);
  });
});
