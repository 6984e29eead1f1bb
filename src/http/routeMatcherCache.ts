/**
 * A workaround for a known cost in express-openapi-validator 5.x: on every request its route lookup
 * compiles a path-to-regexp matcher for every path of the contract (upstream:
 * cdimascio/express-openapi-validator#1217). Profiles put that at about a tenth of the CPU of a
 * request here. `pathToRegexp(path, options)` is a pure function of its arguments, so this module
 * memoises it on the path-to-regexp module that the validator resolves, once, at import.
 *
 * Only the validator calls `pathToRegexp` on the request path (Express's router compiles its
 * routes once, with `match`); the cached results are never mutated by it (it reads `regexp`, which
 * has no global flag, and `keys`).
 */
import { createRequire } from 'node:module';

type PathToRegexp = (path: string, options?: Record<string, unknown>) => unknown;

const requireFromValidator = createRequire(createRequire(import.meta.url).resolve('express-openapi-validator'));
const pathToRegexpModule = requireFromValidator('path-to-regexp') as { pathToRegexp: PathToRegexp };

const MAX_ENTRIES = 1024;

/** A cache key for the options the validator passes ({ sensitive, strict }), cheap to build. */
function optionsKey(options: Record<string, unknown> | undefined): string {
  if (!options) return '';
  const { sensitive, strict, ...rest } = options;
  return `${sensitive ? 1 : 0}${strict ? 1 : 0}${Object.keys(rest).length > 0 ? JSON.stringify(rest) : ''}`;
}

if (!(pathToRegexpModule.pathToRegexp as { memoised?: boolean }).memoised) {
  const original = pathToRegexpModule.pathToRegexp;
  const cache = new Map<string, unknown>();
  const memoised: PathToRegexp & { memoised?: boolean } = (path, options) => {
    if (typeof path !== 'string') return original(path, options);
    const key = `${path}\u0000${optionsKey(options)}`;
    let result = cache.get(key);
    if (result === undefined) {
      result = original(path, options);
      if (cache.size >= MAX_ENTRIES) cache.clear();
      cache.set(key, result);
    }
    return result;
  };
  memoised.memoised = true;
  pathToRegexpModule.pathToRegexp = memoised;
}
