/**
 * The control endpoints under /_sim (contract.md, "Control endpoints"). Not part of the real
 * service: no API key, never rate limited.
 */
import type { IRouter } from 'express';
import type { FaultRequest } from '../core/faults.js';
import type { VideoStatus } from '../core/pipeline.js';
import type { Simulator } from '../core/simulator.js';
import { limitParam } from './query.js';

type Query = Record<string, string | undefined>;

/** Registers the routes on `router`: the app itself, so that a request passes no mounted router. */
export function addControlRoutes(router: IRouter, sim: Simulator): IRouter {
  router.get('/_sim/health', (_req, res) => {
    res.json(sim.health());
  });

  router.get('/_sim/clock', (req, res) => {
    res.json(sim.clockState((req.query as Query).api_key ?? null));
  });

  router.post('/_sim/clock/advance', (req, res) => {
    const body = req.body as { seconds: number; api_key?: string | null };
    res.json(sim.advance(body.seconds, body.api_key ?? null));
  });

  router.post('/_sim/reset', (req, res) => {
    const body = (req.body ?? {}) as { scenario?: string | null; seed?: number | null; api_key?: string | null };
    res.json(sim.reset({ scenario: body.scenario, seed: body.seed, apiKey: body.api_key }));
  });

  router.get('/_sim/scenario', (_req, res) => {
    res.json(sim.scenario);
  });

  router.get('/_sim/requests', (req, res) => {
    const query = req.query as Query;
    const { data, has_more } = sim.journal.recent(limitParam(req, 10_000) ?? 100, query.api_key);
    res.json({ object: 'list', data, has_more });
  });

  router.post('/_sim/faults', (req, res) => {
    res.json({ queued: sim.faults.add(req.body as FaultRequest) });
  });

  router.get('/_sim/generations', (req, res) => {
    const query = req.query as Query;
    res.json(
      sim.controlGenerations({
        apiKey: query.api_key ?? null,
        status: (query.status as VideoStatus | undefined) ?? null,
        limit: limitParam(req, 1000),
        after: query.after ?? null,
        changedSince: query.changed_since !== undefined ? Number(query.changed_since) : null,
      }),
    );
  });

  router.get('/_sim/generations/:id', (req, res) => {
    res.json(sim.controlGeneration(String(req.params.id)));
  });

  return router;
}
