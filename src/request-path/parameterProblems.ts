/**
 * What is wrong with a request's parameters, in words: the issues the compiled validators report
 * (Ajv's, with `verbose`), each as the parameter it names, the class of its problem (unknown,
 * missing, invalid) and a message a person can act on. The request check (requestCheck.ts) ranks
 * them and answers the first.
 */
import { clip } from '../core/errors.js';
import type { SchemaIssue } from './router.js';

export type ParameterCode = 'unknown_parameter' | 'missing_parameter' | 'invalid_parameter';

export interface ParameterProblem {
  code: ParameterCode;
  param: string | null;
  message: string;
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
export function ownIssues(issues: SchemaIssue[] | null | undefined): SchemaIssue[] {
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

/** A schema issue as a parameter problem, with a message a person can act on. */
export function problemOf(issue: SchemaIssue, headers: readonly string[], where?: 'body'): ParameterProblem {
  // Params issues are at '/query/limit', '/headers/idempotency-key', '/path/id'; body issues at '/field'.
  let segments = issue.instancePath.split('/').slice(1).map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
  if (where !== 'body') segments = segments.slice(1);
  const nameOf = (parts: string[]): string | null => {
    if (parts.length === 0) return null;
    const joined = parts.join('/');
    return where !== 'body' && issue.instancePath.startsWith('/headers/')
      ? (headers.find((h) => h.toLowerCase() === joined) ?? joined)
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
export function unknownParameter(name: string): ParameterProblem {
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
  /** A schema keyword's number or pattern, as the message writes it. */
  const limit = (): string => String(p.limit);
  switch (issue.keyword) {
    case 'type': {
      const types = typesOf(issue).filter((t) => t !== 'null');
      return types.length > 0 ? `must be ${types.map((t) => ARTICLE[t] ?? t).join(' or ')}` : 'must be null';
    }
    case 'enum': {
      const allowed = (p.allowedValues as unknown[]).filter((v) => v !== null);
      return allowed.length > 0 ? `must be one of ${allowed.map((v) => (typeof v === 'string' ? v : JSON.stringify(v))).join(', ')}` : 'must be null';
    }
    case 'const':
      return `must be ${JSON.stringify(p.allowedValue)}`;
    case 'minimum':
      return `must be at least ${limit()}`;
    case 'maximum':
      return `must be at most ${limit()}`;
    case 'exclusiveMinimum':
      return `must be above ${limit()}`;
    case 'exclusiveMaximum':
      return `must be below ${limit()}`;
    case 'minLength':
      return p.limit === 1 ? 'must not be empty' : `must be at least ${limit()} characters long`;
    case 'maxLength':
      return `must be at most ${limit()} characters long`;
    case 'pattern':
      if (p.pattern === '\\S') return 'must hold at least one non-white-space character';
      if (param === 'Idempotency-Key') return 'may hold only visible ASCII characters (no spaces or control characters)';
      // A fault's path (SimFaultRequest): the pattern is the shape of a /v1 path, a prefix of one, or a media path.
      if (param === 'path') return "must be a path of the service's API (/v1/..., or a prefix of one ending with '*') or a media path (/cdn/...)";
      return `must match the pattern ${String(p.pattern)}`;
    case 'format':
      return `must be a valid ${String(p.format)}`;
    case 'minItems':
      return `must have at least ${limit()} items`;
    case 'maxItems':
      return `must have at most ${limit()} items`;
    default:
      return issue.parentSchema?.description?.split('\n')[0] ?? issue.message ?? 'is invalid';
  }
}
