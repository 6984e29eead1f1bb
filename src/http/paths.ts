/**
 * The two families of paths the contract has, and running a middleware on one of them only.
 * (Express mounts match case-insensitively; so do these.)
 */
import type { RequestHandler } from 'express';

/** The service's API. */
export const V1_PATH = /^\/v1(\/|$)/i;

/** The control API (the dashboard's `/_sim/` and `/_sim/ui/*` are served before it). */
export const SIM_PATH = /^\/_sim(\/|$)/i;

/** A middleware run only on the paths `pattern` matches. */
export function onPaths(pattern: RegExp, handler: RequestHandler): RequestHandler {
  return (req, res, next) => (pattern.test(req.path) ? handler(req, res, next) : next());
}
