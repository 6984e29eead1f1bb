// Baseline: a bare node:http server answering one fixed JSON body (env BENCH_BODY) to every
// request, after reading the request body. Started like the simulator: `--port N` (0 picks a free
// one), and it prints `listening on http://127.0.0.1:PORT`.
import { createServer } from 'node:http';
import { serve } from './serve.mjs';

const body = Buffer.from(process.env.BENCH_BODY ?? '{"status":"ok"}');

const server = createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    res.writeHead(200, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': body.length });
    res.end(body);
  });
});
serve(server, 'bare node:http');
