// In-process start-up, the simulator's side: what a test suite pays to get a first answer from
// the package in a fresh process. Imports the package by its name, `createSimulator`, `listen` on
// a free port, one POST /v1/videos on a fresh connection, `close`, exit (see post.mjs). The bench
// times the whole process, from spawn to exit.
import { createSimulator } from 'video-service-sim';
import { postCreate, report } from './post.mjs';

const sim = createSimulator({ scenario: 'fast', clock: 'manual' });
const url = await sim.listen(0, '127.0.0.1');
const answer = await postCreate(url);
await sim.close();
report(answer, 'simulator');
