// Baseline: a bare node:http server answering one fixed JSON body (env BENCH_BODY) to every
// request, after reading the request body. Started like the simulator: `--port N` (0 picks a free
// one), and it prints `listening on http://127.0.0.1:PORT`.
import { createServer } from 'node:http';

const argPort = process.argv.indexOf('--port');
const port = argPort >= 0 ? Number(process.argv[argPort + 1]) : Number(process.env.PORT ?? 0);
const body = Buffer.from(process.env.BENCH_BODY ?? '{"status":"ok"}');

const server = createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    res.writeHead(200, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': body.length });
    res.end(body);
  });
});
server.listen(port, '127.0.0.1', () => {
  process.stdout.write(`listening on http://127.0.0.1:${server.address().port} (bare node:http)\n`);
});
const stop = () => {
  server.close(() => process.exit(0));
  server.closeAllConnections();
  setTimeout(() => process.exit(0), 500).unref();
};
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
