// Baseline: plain Express 5 with no validation, answering the same JSON body (env BENCH_BODY):
// GET /v1/videos/:id -> res.json(body), POST /v1/videos with express.json() -> res.json(body),
// GET / -> 200 (the health probe). Prints `listening on http://127.0.0.1:PORT`.
import express from 'express';

const argPort = process.argv.indexOf('--port');
const port = argPort >= 0 ? Number(process.argv[argPort + 1]) : Number(process.env.PORT ?? 0);
const body = JSON.parse(process.env.BENCH_BODY ?? '{"status":"ok"}');

const app = express();
app.get('/', (_req, res) => res.json({ status: 'ok' }));
app.get('/v1/videos/:id', (_req, res) => res.json(body));
app.post('/v1/videos', express.json(), (_req, res) => res.json(body));

const server = app.listen(port, '127.0.0.1', () => {
  process.stdout.write(`listening on http://127.0.0.1:${server.address().port} (plain express ${'5'})\n`);
});
const stop = () => {
  server.close(() => process.exit(0));
  server.closeAllConnections();
  setTimeout(() => process.exit(0), 500).unref();
};
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
