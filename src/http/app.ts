/**
 * The Express app around a simulator's JSON API: a thin adapter. The JSON API is one plain request
 * handler (jsonHandler.ts); the app sends every API path to it first thing, serves media files (`/cdn`) and
 * the dashboard (`/_sim/`) after the same access checks and CORS (never on `/_sim`), answers their
 * errors in the service's error shape, and hands a file path no router answered to the API
 * handler too. A server made by `createAppServer` calls the API handler without the app.
 */
import type { Express } from 'express';
import { MEDIA_ROOT } from '../core/generations/mediaPaths.js';
import type { Simulator } from '../core/simulator/simulator.js';
import type { Api } from './jsonHandler.js';
import { isApiPath, pathOf } from './paths.js';
import { createDashboardRouter } from './dashboard.js';
import { errorShapeHandler } from './errorAnswers.js';
import { loadExpress } from './express.js';
import { createMediaRouter } from './media.js';

/**
 * An Express app, with the answers that failed validation against openapi.yaml (each became a 500),
 * its JSON API as a plain request handler (`api`), and its request path without HTTP (`answer`).
 */
export type SimulatorApp = Express & {
  /** The JSON API as a `node:http` request handler, without Express: what the app itself calls for API paths. */
  readonly api: Api['handle'];
  readonly responseFailures: Api['responseFailures'];
  /** Answers one request as the app would (recorded like one), synchronously, without waiting any injected latency. */
  readonly answer: Api['answer'];
};

/** The Express app of `sim`'s JSON API `api` (made by `createApi`), whose errors are logged to `log`. */
export function createApp(sim: Simulator, api: Api, log: (line: string) => void): SimulatorApp {
  const app = loadExpress()();
  app.disable('x-powered-by');
  app.set('etag', false);

  // The JSON API answers on its own; the files are admitted here first.
  app.use((req, res, next) => (isApiPath(pathOf(req.url)) ? api.handle(req, res) : api.admit(req, res, next)));
  // A queued network fault on a download comes before its file.
  app.use(MEDIA_ROOT, api.mediaFaults);
  app.use(
    MEDIA_ROOT,
    createMediaRouter({
      videoFile(id) {
        const g = sim.findGeneration(id);
        return g && g.status === 'succeeded'
          ? { resolution: g.request.resolution, durationSeconds: g.request.duration_seconds, prompt: g.request.prompt }
          : undefined;
      },
      imageFile(id) {
        const image = sim.findImage(id);
        return image ? { aspectRatio: image.aspectRatio, prompt: image.prompt } : undefined;
      },
    }),
  );
  app.use('/_sim', createDashboardRouter());
  // A dashboard path that is no file (`/_sim/ui/nope`, `POST /_sim/`) is answered as the API answers an unknown route.
  app.use(api.handle);
  // Errors passed on by the routers above (the dashboard's and media's files) answer in JSON too.
  app.use(errorShapeHandler(log));
  return Object.assign(app, {
    api: api.handle,
    responseFailures: api.responseFailures,
    answer: api.answer,
  });
}
