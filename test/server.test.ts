/**
 * The HTTP server in front of the app (src/http/server.ts): `http.createServer(app)`, Node's own
 * requests and responses handed to Express as Express's `app.listen` would.
 */
import express from 'express';
import { IncomingMessage, ServerResponse, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createAppServer } from '../src/http/server.js';

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
