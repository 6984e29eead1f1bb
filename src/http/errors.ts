/**
 * Rendering errors in the section-7 shape, and mapping express-openapi-validator's errors onto the
 * catalogue in the order of checks contract.md gives.
 */
import type { ErrorRequestHandler, Response } from 'express';
import { error as OpenApiValidatorErrors } from 'express-openapi-validator';
import { SimError, fail } from '../core/errors.js';

export function sendError(res: Response, error: SimError): void {
  for (const [name, value] of Object.entries(error.headers)) res.setHeader(name, value);
  res.status(error.status).json(error.toBody());
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

interface ValidatorIssue {
  path?: string;
  message?: string;
  errorCode?: string;
}

interface ValidatorError {
  status?: number;
  errors?: ValidatorIssue[];
  message?: string;
  path?: string;
}

const CLASS_RANK = { unknown_parameter: 0, missing_parameter: 1, invalid_parameter: 2 } as const;
type IssueCode = keyof typeof CLASS_RANK;

/** Maps a request-validation error of express-openapi-validator to a catalogue error. */
export function fromValidatorError(err: ValidatorError): SimError {
  if (err.status === 404 || err.status === 405) {
    return fail('unknown_route', { message: 'Unknown route. See openapi.yaml for the routes this API has.' });
  }
  if (err.status === 415) return fail('unsupported_content_type');
  // The validator matched a route whose id cannot be percent-decoded: no resource has that id (a
  // path that matches no route at all is a 404 unknown_route above).
  if (err.status === 400 && /^malformed uri/.test(err.message ?? '')) {
    return fail('resource_not_found', { param: 'id', message: 'No resource has this id (its percent-encoding is malformed).' });
  }
  const issues = (err.errors ?? []).map(classify);
  issues.sort(
    (a, b) =>
      CLASS_RANK[a.code] - CLASS_RANK[b.code] || paramRank(a.param) - paramRank(b.param),
  );
  const first = issues[0];
  if (!first) return fail('invalid_parameter', { message: err.message ?? 'Invalid request.' });
  return fail(first.code, { param: first.param, message: first.message });
}

function paramRank(param: string | null): number {
  const i = param === null ? -1 : PARAM_ORDER.indexOf(param);
  return i < 0 ? PARAM_ORDER.length : i;
}

function classify(issue: ValidatorIssue): { code: IssueCode; param: string | null; message: string } {
  // '/body/duration_seconds', '/query/limit', '/headers/idempotency-key'. The validator does not
  // escape keys, so an unknown key is everything after the location (it may hold a '/').
  const path = issue.path ?? '';
  const location = path.split('/')[1];
  const rest = path.slice(location === undefined ? 0 : location.length + 2);
  const unknownKey = issue.errorCode === 'additionalProperties.openapi.validation';
  const field = location === undefined || (rest === '' && !unknownKey) ? null : unknownKey ? rest : (rest.split('/')[0] as string);
  const param = field === null ? null : location === 'headers' ? headerName(field) : field;
  const detail = (issue.message ?? 'is invalid').replace(/must be (\w+),null\b/, 'must be $1 or null');
  if (issue.errorCode === 'required.openapi.validation') {
    return { code: 'missing_parameter', param, message: `Missing required parameter '${param}'.` };
  }
  if (unknownKey || /^Unknown query parameter/.test(detail)) {
    return {
      code: 'unknown_parameter',
      param,
      message: `Unknown parameter '${param}'. Remove it; see openapi.yaml for the parameters this endpoint takes.`,
    };
  }
  if (issue.errorCode === 'pattern.openapi.validation' && (param === 'prompt')) {
    return { code: 'invalid_parameter', param, message: `'${param}' must hold at least one non-white-space character.` };
  }
  return { code: 'invalid_parameter', param, message: `Invalid value for '${param}': ${detail}.` };
}

function headerName(lower: string): string {
  return lower === 'idempotency-key' ? 'Idempotency-Key' : lower;
}

/** Counts responses that failed validation against openapi.yaml (a test asserts it stays 0). */
export const responseValidation = {
  failures: 0,
  last: [] as { method: string; path: string; status: number; message: string }[],
  reset(): void {
    this.failures = 0;
    this.last = [];
  },
};

/** The validator reports a response that breaks the contract as its InternalServerError (status 500). */
function isResponseValidationError(err: unknown): err is ValidatorError {
  return err instanceof OpenApiValidatorErrors.InternalServerError;
}

/** The last error handler: every error leaves in the section-7 shape, never a stack trace. */
export function errorHandler(log: (line: string) => void): ErrorRequestHandler {
  return (err: unknown, req, res, _next) => {
    let error: SimError;
    if (err instanceof SimError) {
      error = err;
    } else if (isResponseValidationError(err)) {
      responseValidation.failures++;
      const entry = { method: req.method, path: req.originalUrl, status: res.statusCode, message: err.message ?? '' };
      responseValidation.last.push(entry);
      if (responseValidation.last.length > 20) responseValidation.last.shift();
      log(`response validation failed: ${entry.method} ${entry.path} (status ${entry.status}): ${entry.message}`);
      error = fail('internal_error', { message: 'The simulator produced a response that does not match openapi.yaml (a simulator bug; it has been logged).' });
    } else if (isValidatorError(err) && typeof err.status === 'number' && err.status < 500) {
      error = fromValidatorError(err);
    } else if (isBodyParserError(err)) {
      error = err.type === 'entity.too.large' ? fail('request_too_large') : fail('invalid_json');
    } else {
      log(`internal error on ${req.method} ${req.originalUrl}: ${err instanceof Error ? err.stack ?? err.message : String(err)}`);
      error = fail('internal_error');
    }
    if (res.headersSent) {
      res.end();
      return;
    }
    sendError(res, error);
  };
}

function isValidatorError(err: unknown): err is ValidatorError {
  return typeof err === 'object' && err !== null && ('errors' in err || 'status' in err);
}

function isBodyParserError(err: unknown): err is { type: string } {
  return typeof err === 'object' && err !== null && typeof (err as { type?: unknown }).type === 'string';
}
