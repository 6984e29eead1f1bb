/**
 * The Express app around a simulator: CORS, request ids, the /v1 pipeline, the control endpoints,
 * media files, validation of every request and response against openapi.yaml, and one error shape.
 */
import cors from 'cors';
import express, { type Express, type Request } from 'express';
import { fail } from '../core/errors.js';
import type { Simulator } from '../core/simulator.js';
import { loadOpenapiDocument } from '../openapi.js';
import { readBody, rejectBadBody } from './body.js';
import { RouteTable } from './routes.js';
import { SIM_PATH, V1_PATH, onPaths } from './paths.js';
import { series } from './series.js';
import { assignRequestId, context } from './context.js';
import { addControlRoutes } from './control.js';
import { contractValidators, type ContractValidatorLocals } from './contractValidator.js';
import { createDashboardRouter } from './dashboard.js';
import { errorHandler } from './errors.js';
import { addImageRoutes } from './images.js';
import { createMediaRouter } from './media.js';
import { authenticate, faults, idempotency, journal, rateLimit } from './v1.js';
import { addVideoRoutes } from './videos.js';

export interface AppOptions {
  /** Where errors that are the simulator's own bugs are reported. Default: stderr. */
  log?: (line: string) => void;
  /** Waits for injected latency (realtime mode). Default: setTimeout. */
  sleep?: (ms: number) => Promise<void>;
}

export const EXPOSED_HEADERS = [
  'X-Request-Id',
  'X-RateLimit-Limit',
  'X-RateLimit-Remaining',
  'X-RateLimit-Reset',
  'Retry-After',
  'Idempotent-Replayed',
];

let sharedRoutes: RouteTable | undefined;

/** The contract's routes, methods and documented statuses (built once per process). */
function contractRoutes(): RouteTable {
  sharedRoutes ??= new RouteTable(loadOpenapiDocument().paths as Record<string, Record<string, unknown>>);
  return sharedRoutes;
}

export function createApp(sim: Simulator, options: AppOptions = {}): Express {
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);

  // Request ids count requests (see Simulator.nextRequestId); an authenticated /v1 request gets
  // its account's id once authenticated, everything else (preflights included) one here. Then CORS
  // (preflights end there). One layer for both: every layer costs the router a match.
  const allowCors = cors({
    origin: '*',
    methods: ['GET', 'HEAD', 'POST', 'DELETE', 'OPTIONS'],
    allowedHeaders: ['Authorization', 'Content-Type', 'Idempotency-Key', 'Range', 'If-None-Match'],
    // Joined once here rather than by cors on every response.
    exposedHeaders: [...EXPOSED_HEADERS, 'Content-Range', 'Content-Length', 'Accept-Ranges', 'ETag'].join(','),
    maxAge: 600,
    optionsSuccessStatus: 204,
  });
  app.use((req, res, next) => {
    if (!(V1_PATH.test(req.path) && req.method !== 'OPTIONS')) assignRequestId(req, res, sim.nextRequestId());
    allowCors(req, res, next);
  });

  app.use(
    '/cdn',
    createMediaRouter({
      videoFile(id) {
        const g = sim.findGeneration(id);
        return g && g.status === 'succeeded' ? { resolution: g.request.resolution, prompt: g.request.prompt } : undefined;
      },
      imageFile(id) {
        const image = sim.findImage(id);
        return image ? { aspectRatio: image.aspectRatio, prompt: image.prompt } : undefined;
      },
    }),
  );

  app.use('/_sim', createDashboardRouter());

  // The order of checks on /v1 (contract.md): authentication, queued and scenario faults, rate
  // limit, idempotent replay, an unknown route (404), the body, then the parameters (the validator)
  // and the route's own checks (existence, balance, claim linking). The validator's first half runs
  // before the checks so that their answers are validated against openapi.yaml too.
  const routes = contractRoutes();
  // Looked up once per request: the fault check and the unknown-route check both ask.
  const statusesOf = (req: Request): ReadonlySet<number> | undefined => {
    const ctx = context(req);
    if (ctx.documentedStatuses === undefined) ctx.documentedStatuses = routes.statusesOf(req) ?? null;
    return ctx.documentedStatuses ?? undefined;
  };
  const isKnownRoute = (req: Request) => statusesOf(req) !== undefined;
  const validators = contractValidators();
  app.use(
    onPaths(
      V1_PATH,
      series(
        readBody({ emptyAllowed: false }),
        journal(sim),
        validators.v1.prepare,
        authenticate(sim),
        faults(sim, { sleep, documentedStatuses: statusesOf }),
        rateLimit(sim),
        idempotency(sim),
        rejectBadBody(isKnownRoute),
        validators.v1.validate,
      ),
    ),
  );
  app.use(
    onPaths(
      SIM_PATH,
      series(readBody({ emptyAllowed: true }), validators.control.prepare, rejectBadBody(isKnownRoute), validators.control.validate),
    ),
  );

  // The routes go on the app itself, in the same order, rather than in three mounted routers:
  // the same matching (same options), without a router's per-request handle and restore.
  addVideoRoutes(app, sim);
  addImageRoutes(app, sim);
  addControlRoutes(app, sim);

  app.use((req, _res, next) => {
    next(fail('unknown_route', { message: `Unknown route: ${req.method} ${req.path}. See openapi.yaml for the routes this API has.` }));
  });
  const renderError = errorHandler(log);
  (app.locals as ContractValidatorLocals).renderError = renderError;
  app.use(renderError);
  return app;
}
