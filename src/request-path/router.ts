/**
 * openapi.yaml's operations at run time, as the build compiled them (scripts/build-contract.mjs
 * writes src/generated/contract.cjs: the operation table and Ajv standalone validators), and the
 * router over their paths. Nothing here parses or compiles the contract, so start-up costs only
 * loading that module, and a damaged or missing openapi.yaml in the working directory cannot stop
 * the simulator from starting. The request check (requestCheck.ts) and the response check
 * (responseCheck.ts) take each operation's compiled validators from here by name.
 */
import contract from '../generated/contract.cjs';
import type { OperationId } from '../generated/operations.js';

/** An Ajv error, as the compiled validators report it (with `verbose`: the data and its schema). */
export interface SchemaIssue {
  instancePath: string;
  schemaPath?: string;
  keyword: string;
  schema?: unknown;
  params: Record<string, unknown>;
  message?: string;
  data?: unknown;
  parentSchema?: { description?: string; [key: string]: unknown };
}

export interface CompiledValidator {
  (data: unknown): boolean;
  errors?: SchemaIssue[] | null;
}

/** One operation of openapi.yaml, as the build step describes it. */
export interface Operation {
  method: string;
  /** The path template, `/v1/videos/{id}`. */
  path: string;
  operationId: OperationId;
  /** The documented response statuses. */
  statuses: number[];
  /** The top-level fields of its JSON body (none when it takes no body). */
  bodyFields: string[];
  /** Its query parameters of integer type (read as decimal integers). */
  integerQuery: string[];
  /** Its header parameters (`Idempotency-Key`). */
  headers: string[];
  /** The headers each documented response always carries. */
  responseHeaders: Record<string, string[]>;
}

type CompiledContract = Record<string, CompiledValidator> & { operations: Operation[] };

const compiled = contract as unknown as CompiledContract;

export const OPERATIONS: readonly Operation[] = compiled.operations;

/** A validator the build compiled, by its name (`createVideo_params`, `createVideo_body`, `createVideo_200`); undefined when there is none. */
export function compiledValidator(name: string): CompiledValidator | undefined {
  return compiled[name];
}

/** A route matched to its operation, with its path parameters (percent-decoded). */
export interface MatchedRoute {
  operation: Operation;
  params: Record<string, string>;
}

type Segment = { literal: string } | { param: string };

interface RouteMatcher {
  segments: Segment[];
  /** Segment by segment: its literal text, or null where it is a parameter. */
  literals: (string | null)[];
  byMethod: Map<string, Operation>;
}

const ROUTES: RouteMatcher[] = [];
for (const operation of OPERATIONS) {
  let route = ROUTES.find((r) => templateOf(r) === operation.path);
  if (!route) {
    const segments: Segment[] = operation.path
      .split('/')
      .slice(1)
      .map((s) => (s.startsWith('{') ? { param: s.slice(1, -1) } : { literal: s }));
    route = { segments, literals: segments.map((s) => ('literal' in s ? s.literal : null)), byMethod: new Map() };
    ROUTES.push(route);
  }
  route.byMethod.set(operation.method, operation);
}

/** The routes by their number of segments, each list in the contract's order. */
const ROUTES_BY_LENGTH = new Map<number, RouteMatcher[]>();
for (const route of ROUTES) {
  const same = ROUTES_BY_LENGTH.get(route.segments.length);
  if (same) same.push(route);
  else ROUTES_BY_LENGTH.set(route.segments.length, [route]);
}

function templateOf(route: { segments: Segment[] }): string {
  return `/${route.segments.map((s) => ('param' in s ? `{${s.param}}` : s.literal)).join('/')}`;
}

/**
 * The operation a request addresses. Paths match exactly: letter case and a trailing slash make
 * another route. Undefined for a route or method the contract does not have; a path parameter
 * whose percent-encoding is malformed gives `params` null (no resource can have that id).
 */
export function matchRoute(method: string, path: string): (Omit<MatchedRoute, 'params'> & { params: Record<string, string> | null }) | undefined {
  const wanted = method === 'HEAD' ? 'GET' : method;
  // The path's segments are what follows each slash (what comes before the first is not one).
  const first = path.indexOf('/');
  let count = 0;
  for (let at = first; at >= 0; at = path.indexOf('/', at + 1)) count++;
  const routes = ROUTES_BY_LENGTH.get(count);
  if (routes === undefined) return undefined;
  for (const route of routes) {
    if (!fits(route, path, first)) continue;
    const operation = route.byMethod.get(wanted);
    if (!operation) return undefined;
    return { operation, params: paramsOf(route, path, first) };
  }
  return undefined;
}

/**
 * Whether the path's segments (after the slash at `first`) fit the route's, of the same number:
 * each literal equal, each parameter not empty. Nothing is cut out of the path for it.
 */
function fits(route: RouteMatcher, path: string, first: number): boolean {
  let start = first + 1;
  for (const literal of route.literals) {
    let end = path.indexOf('/', start);
    if (end < 0) end = path.length;
    if (literal === null ? end === start : end - start !== literal.length || !path.startsWith(literal, start)) return false;
    start = end + 1;
  }
  return true;
}

/** The path parameters of a path that fits the route, percent-decoded; null when one's percent-encoding is malformed. */
function paramsOf(route: RouteMatcher, path: string, first: number): Record<string, string> | null {
  const params: Record<string, string> = {};
  let start = first + 1;
  for (const segment of route.segments) {
    let end = path.indexOf('/', start);
    if (end < 0) end = path.length;
    if ('param' in segment) {
      const part = path.slice(start, end);
      // Without a percent sign there is nothing to decode.
      if (!part.includes('%')) params[segment.param] = part;
      else {
        try {
          params[segment.param] = decodeURIComponent(part);
        } catch {
          return null;
        }
      }
    }
    start = end + 1;
  }
  return params;
}

/**
 * Whether a path pattern of a queued fault can match a `/v1` route: exactly (a path some route
 * matches, whatever the method), or, ending with `*`, as a prefix of such a path.
 */
export function patternMatchesServiceRoute(pattern: string): boolean {
  const prefix = pattern.endsWith('*');
  const parts = (prefix ? pattern.slice(0, -1) : pattern).split('/').slice(1);
  return ROUTES.some((route) => {
    if (route.segments[0] && 'literal' in route.segments[0] && route.segments[0].literal !== 'v1') return false;
    if (prefix ? parts.length > route.segments.length : parts.length !== route.segments.length) return false;
    return parts.every((part, i) => {
      const segment = route.segments[i] as Segment;
      const last = i === parts.length - 1;
      if ('param' in segment) return part !== '' || (prefix && last);
      return prefix && last ? segment.literal.startsWith(part) : segment.literal === part;
    });
  });
}

/** The service's routes, as a message lists them: "/v1/videos, /v1/videos/{id}, /v1/images". */
export function serviceRoutesInWords(): string {
  return ROUTES.map(templateOf).filter((t) => t.startsWith('/v1/')).join(', ');
}
