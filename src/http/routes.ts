/**
 * The routes the contract has, read from openapi.yaml, so that an unknown route or method is
 * answered 404 before anything about its body is judged.
 */
import type { Request } from 'express';

interface RouteMatcher {
  pattern: RegExp;
  methods: Set<string>;
}

export class RouteTable {
  private readonly routes: RouteMatcher[];

  constructor(paths: Record<string, Record<string, unknown>>) {
    this.routes = Object.entries(paths).map(([template, item]) => ({
      pattern: new RegExp(`^${template.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/]+')}/?$`),
      methods: new Set(
        Object.keys(item)
          .filter((k) => ['get', 'post', 'delete', 'put', 'patch'].includes(k))
          .map((k) => k.toUpperCase()),
      ),
    }));
  }

  /** Does the contract have this method on this path? (HEAD counts as GET.) */
  has(req: Request): boolean {
    const path = req.baseUrl + req.path;
    const method = req.method === 'HEAD' ? 'GET' : req.method;
    return this.routes.some((r) => r.pattern.test(path) && r.methods.has(method));
  }
}
