// In-process start-up, the baseline: a fresh process importing Express 5, an app answering
// POST /v1/videos with express.json() and a fixed JSON body, `listen` on a free port, one POST on
// a fresh connection, close, exit (see post.mjs). Timed like simulator.mjs, from spawn to exit.
import express from 'express';
import { postCreate, report } from './post.mjs';

const app = express();
app.post('/v1/videos', express.json(), (req, res) => res.json({ id: 'video_0', object: 'video', status: 'queued', ...req.body }));
const server = app.listen(0, '127.0.0.1');
await new Promise((resolve, reject) => server.once('listening', resolve).once('error', reject));
const answer = await postCreate(`http://127.0.0.1:${server.address().port}`);
await new Promise((resolve) => {
  server.close(resolve);
  server.closeAllConnections();
});
report(answer, 'express');
