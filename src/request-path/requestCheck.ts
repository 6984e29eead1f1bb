/**
 * The request check: a request's parameters and body against its operation in openapi.yaml, with
 * the validators the build compiled (router.ts), the first problem answered as a catalogue error
 * (the words: parameterProblems.ts).
 */
import { SimError, clip, fail } from '../core/errors.js';
import { ownIssues, problemOf, unknownParameter, type ParameterCode, type ParameterProblem } from './parameterProblems.js';
import { OPERATIONS, compiledValidator, type CompiledValidator, type Operation } from './router.js';

/** An operation's compiled request validators, looked up once. */
interface RequestValidators {
  params: CompiledValidator;
  body: CompiledValidator | undefined;
}

const VALIDATORS = new Map<Operation, RequestValidators>(OPERATIONS.map((operation) => [operation, validatorsOf(operation)]));

function validatorsOf({ operationId }: Operation): RequestValidators {
  return { params: compiledValidator(`${operationId}_params`) as CompiledValidator, body: compiledValidator(`${operationId}_body`) };
}

/** The request validators of an operation (every operation is one of `OPERATIONS`). */
function validators(operation: Operation): RequestValidators {
  return VALIDATORS.get(operation) as RequestValidators;
}

/** Whether an operation documents a request body (one that does not refuses every field of one sent). */
export function takesBody(operation: Operation): boolean {
  return validators(operation).body !== undefined;
}

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

const CLASS_RANK: Readonly<Record<ParameterCode, number>> = { unknown_parameter: 0, missing_parameter: 1, invalid_parameter: 2 };

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
    for (const issue of ownIssues(validateParams.errors)) problems.push(problemOf(issue, operation.headers));
  }
  if (validateBody && body !== undefined && !validateBody(body)) {
    for (const issue of ownIssues(validateBody.errors)) problems.push(problemOf(issue, operation.headers, 'body'));
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

function paramRank(param: string | null): number {
  const i = param === null ? -1 : PARAM_ORDER.indexOf(param);
  return i < 0 ? PARAM_ORDER.length : i;
}

