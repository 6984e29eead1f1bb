/**
 * The routes the contract has, read from openapi.yaml, so that an unknown route or method is
 * answered 404 before anything about its body is judged.
 */
import type { Request } from 'express';

interface RouteMatcher {
  pattern: RegExp;
  /** The statuses each method of the path documents. */
  operations: Map<string, Set<number>>;
}

const METHODS = ['get', 'post', 'delete', 'put', 'patch'];

export class RouteTable {
  private readonly routes: RouteMatcher[];

  constructor(paths: Record<string, Record<string, unknown>>) {
    this.routes = Object.entries(paths).map(([template, item]) => ({
      pattern: new RegExp(`^${template.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/]+')}/?$`),
      operations: new Map(
        Object.entries(item)
          .filter(([key]) => METHODS.includes(key))
          .map(([key, operation]) => [
            key.toUpperCase(),
            new Set(Object.keys((operation as { responses?: object }).responses ?? {}).map(Number)),
          ]),
      ),
    }));
  }

  /** The statuses the contract documents for this request's operation; undefined for an unknown route. */
  statusesOf(req: Request): ReadonlySet<number> | undefined {
    const path = req.baseUrl + req.path;
    const method = req.method === 'HEAD' ? 'GET' : req.method;
    for (const route of this.routes) {
      if (!route.pattern.test(path)) continue;
      const statuses = route.operations.get(method);
      if (statuses) return statuses;
    }
    return undefined;
  }
}
