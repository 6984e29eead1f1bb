/**
 * openapi.yaml at run time: the routes, the documented statuses and headers of each operation, and
 * validators of requests and responses, all compiled ahead of time by `npm run build`
 * (scripts/build-contract.mjs writes them as Ajv standalone code). Nothing here parses or compiles
 * the contract, so start-up costs only loading that module, and a damaged or missing openapi.yaml
 * in the working directory cannot stop the simulator from starting.
 */
import { SimError, clip, fail } from '../core/errors.js';
import contract from '../generated/contract.cjs';

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

interface CompiledValidator {
  (data: unknown): boolean;
  errors?: SchemaIssue[] | null;
}

/** One operation of openapi.yaml, as the build step describes it. */
export interface Operation {
  method: string;
  /** The path template, `/v1/videos/{id}`. */
  path: string;
  operationId: string;
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

/** An operation's compiled validators, looked up once. */
interface OperationValidators {
  params: CompiledValidator;
  body: CompiledValidator | undefined;
  /** By documented status: the body's validator (undefined for a response without a JSON body). */
  responses: Map<number, CompiledValidator | undefined>;
}

const VALIDATORS = new Map<Operation, OperationValidators>(OPERATIONS.map((operation) => [operation, validatorsOf(operation)]));

function validatorsOf(operation: Operation): OperationValidators {
  const { operationId } = operation;
  return {
    params: compiled[`${operationId}_params`] as CompiledValidator,
    body: compiled[`${operationId}_body`],
    responses: new Map(operation.statuses.map((status) => [status, compiled[`${operationId}_${status}`]])),
  };
}

/** The validators of an operation of openapi.yaml (one described by hand is looked up by its id). */
function validators(operation: Operation): OperationValidators {
  return VALIDATORS.get(operation) ?? validatorsOf(operation);
}

/** Whether an operation documents a request body (one that does not refuses every field of one sent). */
export function takesBody(operation: Operation): boolean {
  return validators(operation).body !== undefined;
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

// ---- requests ----

/** The order of parameters in the interface document's tables: the first wins among equals. */
const PARAM_ORDER = [
  'model',
  'prompt',
  'negative_prompt',
  'duration_seconds',
  'resolution',
  'keyframe_id',
  'aspect_ratio',
  'limit',
  'after',
  'status',
  'id',
  'Idempotency-Key',
];

const CLASS_RANK = { unknown_parameter: 0, missing_parameter: 1, invalid_parameter: 2 } as const;
type ParameterCode = keyof typeof CLASS_RANK;

interface ParameterProblem {
  code: ParameterCode;
  param: string | null;
  message: string;
}

export interface RequestParts {
  params: Record<string, string>;
  /** The raw query string, without the `?`. */
  query: string;
  headers: Record<string, string | undefined>;
  /** The JSON body (operations with one). */
  body?: Record<string, unknown>;
}

/**
 * Checks a request's parameters and body against its operation: the first problem, in the
 * contract's order (unknown parameters, then missing ones, then invalid values; among equals, the
 * order of the interface document's tables), as a catalogue error; else the query, read, and the
 * body without its null-valued fields: null for a field of the body means "left out" (so a
 * required field sent as null is missing; an unknown field stays unknown, null or not).
 */
export function checkRequest(
  operation: Operation,
  parts: RequestParts,
): { error: SimError } | { query: Record<string, unknown>; body: Record<string, unknown> } {
  const problems: ParameterProblem[] = [];
  const body = parts.body && withoutNulls(parts.body, operation.bodyFields);
  const query = readQuery(operation, parts.query, problems);
  const headers: Record<string, string> = {};
  for (const name of operation.headers) {
    const value = parts.headers[name.toLowerCase()];
    if (value !== undefined) headers[name.toLowerCase()] = value;
  }
  const { params: validateParams, body: validateBody } = validators(operation);
  if (!validateParams({ path: parts.params, query, headers })) {
    for (const issue of ownIssues(validateParams.errors)) problems.push(describe(issue, operation));
  }
  if (validateBody && body !== undefined && !validateBody(body)) {
    for (const issue of ownIssues(validateBody.errors)) problems.push(describe(issue, operation, 'body'));
  }
  // An operation without a request body (a cancel) takes no field in one: each is unknown, as a
  // field no body schema has is elsewhere.
  if (!validateBody && body !== undefined) for (const name of Object.keys(body)) problems.push(unknownParameter(name));
  const first = problems.sort((a, b) => CLASS_RANK[a.code] - CLASS_RANK[b.code] || paramRank(a.param) - paramRank(b.param))[0];
  return first ? { error: fail(first.code, { param: first.param, message: first.message }) } : { query, body: body ?? {} };
}

function withoutNulls(body: Record<string, unknown>, fields: string[]): Record<string, unknown> {
  if (!fields.some((f) => Object.hasOwn(body, f) && body[f] === null)) return body;
  const copy = { ...body };
  for (const f of fields) if (Object.hasOwn(copy, f) && copy[f] === null) delete copy[f];
  return copy;
}

/**
 * The query string as the validator checks it: each value a string, integer parameters read as
 * decimal integers. Any run of decimal digits (with an optional `-`) is a number, leading zeros
 * and all; one past 2^53-1 either way is read as ±2^53, which every integer parameter's bounds
 * refuse (its schema says which range, and the message names it). Anything else (`1e1`, `0x10`,
 * `+1`, `Infinity`) stays a string, and so fails as "must be an integer". A parameter given twice
 * is a problem of its own. The query is an object without a prototype, so that every name is a
 * parameter like any other: on a plain object, `__proto__` would set the prototype (a string is
 * ignored) and never become a field, and so escape the unknown-parameter and given-twice checks.
 */
function readQuery(operation: Operation, raw: string, problems: ParameterProblem[]): Record<string, unknown> {
  const query = Object.create(null) as Record<string, unknown>;
  if (raw === '') return query;
  for (const [name, value] of new URLSearchParams(raw)) {
    if (name === '') {
      problems.push({
        code: 'unknown_parameter',
        param: '',
        message: "The query string has a parameter with an empty name (a stray '=' or '&'). Remove it.",
      });
      continue;
    }
    if (Object.hasOwn(query, name)) {
      problems.push({ code: 'invalid_parameter', param: clip(name), message: `'${clip(name)}' is given more than once; give it once.` });
      continue;
    }
    query[name] = operation.integerQuery.includes(name) && /^-?[0-9]+$/.test(value) ? decimalInteger(value) : value;
  }
  return query;
}

/** A run of decimal digits as a number: exact within ±(2^53-1), else ±2^53 (out of every range). */
function decimalInteger(digits: string): number {
  const n = Number(digits);
  return Number.isSafeInteger(n) ? n : Math.sign(n) * 2 ** 53;
}

/**
 * The issues to report, each naming the deepest field that is wrong:
 * - those of an `anyOf` or `not` are summed up by the issue of the `anyOf` or `not` itself (its
 *   branches' own issues would name one alternative as if it were required), and an `anyOf` of
 *   "give at least one of these fields" says nothing when one of them is given (that field's own
 *   issues say what is wrong with it);
 * - an `if` that failed its `then` is told by the `then`'s own issues (which name the field);
 * - a `oneOf` (a value or null, in this contract) is told by its branches' issues, which Ajv lists
 *   just before it: when the value has the type of a branch, that branch's issues (a deeper field,
 *   the allowed values); else one issue naming every type the branches allow.
 */
function ownIssues(issues: SchemaIssue[] | null | undefined): SchemaIssue[] {
  const kept: SchemaIssue[] = [];
  for (const issue of issues ?? []) {
    if (issue.keyword === 'if' || /\/(anyOf|not)\//.test(issue.schemaPath ?? '')) continue;
    if (issue.keyword === 'anyOf' && anyOfFieldGiven(issue)) continue;
    if (issue.keyword === 'oneOf' && issue.params.passingSchemas == null) {
      const under = (i: SchemaIssue) => i.instancePath === issue.instancePath || i.instancePath.startsWith(`${issue.instancePath}/`);
      let first = kept.length;
      while (first > 0 && under(kept[first - 1] as SchemaIssue)) first--;
      const branches = kept.splice(first);
      const fitting = branches.filter((i) => i.keyword !== 'type' || i.instancePath !== issue.instancePath);
      if (fitting.length > 0) kept.push(...fitting);
      else kept.push({ ...issue, keyword: 'type', params: { type: [...new Set(branches.flatMap(typesOf))] } });
      continue;
    }
    kept.push(issue);
  }
  return kept;
}

/** Whether an `anyOf` of "at least one of these fields" failed although one of them is given. */
function anyOfFieldGiven(issue: SchemaIssue): boolean {
  const data = issue.data;
  if (typeof data !== 'object' || data === null) return false;
  const names = ((issue.schema ?? []) as { required?: string[] }[]).flatMap((branch) => branch.required ?? []);
  return names.some((n) => Object.hasOwn(data, n));
}

/** The types a `type` issue allows. */
function typesOf(issue: SchemaIssue): string[] {
  const t = issue.params.type;
  return (Array.isArray(t) ? t : String(t).split(',')).map(String);
}

function paramRank(param: string | null): number {
  const i = param === null ? -1 : PARAM_ORDER.indexOf(param);
  return i < 0 ? PARAM_ORDER.length : i;
}

/** A schema issue as a parameter problem, with a message a person can act on. */
function describe(issue: SchemaIssue, operation: Operation, where?: 'body'): ParameterProblem {
  // Params issues are at '/query/limit', '/headers/idempotency-key', '/path/id'; body issues at '/field'.
  let segments = issue.instancePath.split('/').slice(1).map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
  if (where !== 'body') segments = segments.slice(1);
  const nameOf = (parts: string[]): string | null => {
    if (parts.length === 0) return null;
    const joined = parts.join('/');
    return where !== 'body' && issue.instancePath.startsWith('/headers/')
      ? (operation.headers.find((h) => h.toLowerCase() === joined) ?? joined)
      : joined;
  };
  switch (issue.keyword) {
    case 'additionalProperties':
      return unknownParameter(nameOf([...segments, String(issue.params.additionalProperty)]) as string);
    case 'required': {
      const param = nameOf([...segments, String(issue.params.missingProperty)]);
      return { code: 'missing_parameter', param, message: `Missing required parameter '${param}'.` };
    }
    case 'anyOf': {
      // Each branch requires one field: at least one of them must be given.
      const names = ((issue.schema ?? []) as { required?: string[] }[]).flatMap((branch) => branch.required ?? []);
      return {
        code: 'missing_parameter',
        param: nameOf([...segments, names[0] ?? '']),
        message: `Give at least one of ${names.map((n) => `'${n}'`).join(', ')}.`,
      };
    }
    case 'not': {
      // A field given with one it excludes: the schema is { required: [a], anyOf: [{ required: [b] }, ...] },
      // or { required: [a, b] } (the last given with the others).
      const excluded = (issue.schema ?? {}) as { required?: string[]; anyOf?: { required?: string[] }[] };
      const data = (issue.data ?? {}) as Record<string, unknown>;
      const together = excluded.anyOf === undefined ? (excluded.required ?? []) : [];
      const given = together.length > 0 ? together.at(-1) : (excluded.anyOf ?? []).flatMap((b) => b.required ?? []).find((n) => Object.hasOwn(data, n));
      const by = (together.length > 0 ? together.slice(0, -1) : (excluded.required ?? [])).map((n) => `'${n}'`).join(' and ');
      return {
        code: 'invalid_parameter',
        param: given ? nameOf([...segments, given]) : null,
        message: `'${given}' cannot be given together with ${by}. ${issue.parentSchema?.description ?? ''}`.trim(),
      };
    }
    default: {
      const param = nameOf(segments);
      // Under an if-then, the value is valid only together with another field: the schema's
      // description says with what ("the codes of status 500").
      const context = /\/then\//.test(issue.schemaPath ?? '') && issue.parentSchema?.description ? ` (${issue.parentSchema.description})` : '';
      return { code: 'invalid_parameter', param, message: `Invalid value for '${param}': ${expectation(issue, param)}${context}.` };
    }
  }
}

/** A parameter the endpoint does not take; the client names it, so it is named back at most 100 characters long. */
function unknownParameter(name: string): ParameterProblem {
  const param = clip(name);
  return { code: 'unknown_parameter', param, message: `Unknown parameter '${param}'. Remove it; see openapi.yaml for the parameters this endpoint takes.` };
}

const ARTICLE: Record<string, string> = {
  integer: 'an integer',
  number: 'a number',
  string: 'a string',
  boolean: 'true or false',
  object: 'an object',
  array: 'an array',
};

/** What a value must be, in words: "must be one of 720p, 1080p", "must be an integer". */
function expectation(issue: SchemaIssue, param: string | null): string {
  const p = issue.params;
  switch (issue.keyword) {
    case 'type': {
      const types = typesOf(issue).filter((t) => t !== 'null');
      return types.length > 0 ? `must be ${types.map((t) => ARTICLE[t] ?? t).join(' or ')}` : 'must be null';
    }
    case 'enum': {
      const allowed = (p.allowedValues as unknown[]).filter((v) => v !== null);
      return allowed.length > 0 ? `must be one of ${allowed.join(', ')}` : 'must be null';
    }
    case 'const':
      return `must be ${JSON.stringify(p.allowedValue)}`;
    case 'minimum':
      return `must be at least ${p.limit}`;
    case 'maximum':
      return `must be at most ${p.limit}`;
    case 'exclusiveMinimum':
      return `must be above ${p.limit}`;
    case 'exclusiveMaximum':
      return `must be below ${p.limit}`;
    case 'minLength':
      return p.limit === 1 ? 'must not be empty' : `must be at least ${p.limit} characters long`;
    case 'maxLength':
      return `must be at most ${p.limit} characters long`;
    case 'pattern':
      if (p.pattern === '\\S') return 'must hold at least one non-white-space character';
      if (param === 'Idempotency-Key') return 'may hold only visible ASCII characters (no spaces or control characters)';
      // A fault's path (SimFaultRequest): the pattern is the shape of a /v1 path, a prefix of one, or a media path.
      if (param === 'path') return "must be a path of the service's API (/v1/..., or a prefix of one ending with '*') or a media path (/cdn/...)";
      return `must match the pattern ${String(p.pattern)}`;
    case 'format':
      return `must be a valid ${String(p.format)}`;
    case 'minItems':
      return `must have at least ${p.limit} items`;
    case 'maxItems':
      return `must have at most ${p.limit} items`;
    default:
      return issue.parentSchema?.description?.split('\n')[0] ?? issue.message ?? 'is invalid';
  }
}

// ---- responses ----

/**
 * Checks an answer against the operation's documented response for its status: the status is
 * documented, the headers that response always carries are there, and a JSON body matches its
 * schema. Returns what is wrong, or undefined.
 */
export function checkResponse(
  operation: Operation,
  status: number,
  headers: Record<string, string>,
  body: unknown,
): string | undefined {
  const { responses } = validators(operation);
  if (!responses.has(status)) {
    return `status ${status} is not documented for ${operation.method} ${operation.path}`;
  }
  const required = operation.responseHeaders[status];
  if (required !== undefined && required.some((h) => headers[h] === undefined)) {
    const missing = required.filter((h) => headers[h] === undefined);
    return `the ${status} response lacks the header${missing.length > 1 ? 's' : ''} ${missing.join(', ')}`;
  }
  const validate = responses.get(status);
  if (validate && !validate(body)) {
    return (validate.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message ?? e.keyword}`).join('; ');
  }
  return undefined;
}
