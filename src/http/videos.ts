/**
 * /v1/videos: create, list, retrieve, cancel (interface document, sections 4.1-4.4).
 */
import type { IRouter } from 'express';
import type { Account } from '../core/account.js';
import type { VideoStatus } from '../core/pipeline.js';
import { mergeNegativePrompts, type CreateVideoInput, type Simulator } from '../core/simulator.js';
import { context } from './context.js';
import { limitParam } from './query.js';
import { rememberIdempotent } from './v1.js';

/** Registers the routes on `router`: the app itself, so that a request passes no mounted router. */
export function addVideoRoutes(router: IRouter, sim: Simulator): IRouter {
  router.post('/v1/videos', (req, res) => {
    const account = accountOf(req);
    const input = req.body as CreateVideoInput;
    context(req).negativePromptEffective = mergeNegativePrompts(account.negativePrompt, input.negative_prompt ?? null);
    const { view } = sim.createVideo(account, input, context(req).forcedOutcome);
    rememberIdempotent(res, account, view, context(req).arrivedAtMs ?? sim.sync(account));
    res.json(view);
  });

  router.get('/v1/videos', (req, res) => {
    const query = req.query as { after?: string; status?: VideoStatus };
    res.json(
      sim.listVideos(accountOf(req), {
        limit: limitParam(req, 100),
        after: query.after ?? null,
        status: query.status ?? null,
      }),
    );
  });

  router.get('/v1/videos/:id', (req, res) => {
    res.json(sim.getVideo(accountOf(req), String(req.params.id)));
  });

  router.delete('/v1/videos/:id', (req, res) => {
    res.json(sim.cancelVideo(accountOf(req), String(req.params.id)));
  });

  return router;
}

export function accountOf(req: Parameters<typeof context>[0]): Account {
  const account = context(req).account;
  if (!account) throw new Error('route reached without an authenticated account');
  return account;
}
