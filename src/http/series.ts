/**
 * Runs middlewares one after another as a single Express layer. The /v1 checks are eight steps;
 * as eight layers the router would match and dispatch each (a measurable share of a request).
 */
import type { NextFunction, Request, RequestHandler, Response } from 'express';

/** What Express counts as an error passed to `next` ('route' and 'router' aside). */
export function isError(err: unknown): boolean {
  return err !== undefined && err !== null && err !== false;
}

/** Calls a middleware as Express would: a throw or a rejected promise goes to `next`. */
export function invoke(handler: RequestHandler, req: Request, res: Response, next: (err?: unknown) => void): void {
  try {
    const result: unknown = handler(req, res, next);
    if (result instanceof Promise) result.catch(next);
  } catch (e) {
    next(e);
  }
}

export function series(...handlers: RequestHandler[]): RequestHandler {
  return (req: Request, res: Response, next: NextFunction) => {
    let index = 0;
    const step = (err?: unknown): void => {
      if (isError(err)) return next(err);
      const handler = handlers[index++];
      if (!handler) return next();
      invoke(handler, req, res, step);
    };
    step();
  };
}
