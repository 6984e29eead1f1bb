/**
 * Runs middlewares one after another as a single Express layer. The /v1 checks are eight steps;
 * as eight layers the router would match and dispatch each (a measurable share of a request).
 */
import type { NextFunction, Request, RequestHandler, Response } from 'express';

export function series(...handlers: RequestHandler[]): RequestHandler {
  return (req: Request, res: Response, next: NextFunction) => {
    let index = 0;
    const step = (err?: unknown): void => {
      if (err !== undefined && err !== null && err !== false) return next(err);
      const handler = handlers[index++];
      if (!handler) return next();
      try {
        const result: unknown = handler(req, res, step);
        if (result instanceof Promise) result.catch(step);
      } catch (e) {
        step(e);
      }
    };
    step();
  };
}
