/**
 * /v1/images: create a keyframe image (interface document, section 4.5).
 */
import type { IRouter } from 'express';
import type { CreateImageInput, Simulator } from '../core/simulator.js';
import { context } from './context.js';
import { rememberIdempotent } from './v1.js';
import { accountOf } from './videos.js';

/** Registers the routes on `router`: the app itself, so that a request passes no mounted router. */
export function addImageRoutes(router: IRouter, sim: Simulator): IRouter {
  router.post('/v1/images', (req, res) => {
    const account = accountOf(req);
    const view = sim.createImage(account, req.body as CreateImageInput, context(req).forcedOutcome);
    rememberIdempotent(res, account, view, context(req).arrivedAtMs ?? sim.sync(account));
    res.json(view);
  });
  return router;
}
