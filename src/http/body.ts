/**
 * Reads request bodies. A problem (too large, not JSON, wrong content type) is kept aside and
 * reported at its turn in the order of checks (after authentication, rate limit and idempotent
 * replay), as contract.md requires.
 */
import express, { type Request, type RequestHandler } from 'express';
import { fail, type SimError } from '../core/errors.js';
import { context } from './context.js';

export const BODY_LIMIT_BYTES = 1024 * 1024;

const readRaw = express.raw({ type: () => true, limit: BODY_LIMIT_BYTES });
const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Reads the body of every request that has one into `req.body` (a parsed JSON object), or records
 * why it could not. `emptyAllowed`: an empty body without a content type reads as `{}` (for the
 * control endpoints, where `curl -X POST .../_sim/reset` must work).
 */
export function readBody(options: { emptyAllowed: boolean }): RequestHandler {
  return (req, res, next) => {
    if (req.method === 'GET' || req.method === 'HEAD' || req.method === 'OPTIONS') return next();
    readRaw(req, res, (err?: unknown) => {
      const ctx = context(req);
      if (err) {
        ctx.bodyError = bodyReadError(err);
        req.body = undefined;
        return next();
      }
      const raw: Buffer | undefined = Buffer.isBuffer(req.body) ? req.body : undefined;
      const length = raw?.length ?? 0;
      const contentType = req.headers['content-type'];
      if (length === 0 && contentType === undefined && (options.emptyAllowed || req.method === 'DELETE')) {
        req.body = options.emptyAllowed ? {} : undefined;
        return next();
      }
      if (req.method === 'DELETE' && length === 0) {
        req.body = undefined;
        return next();
      }
      if (!isJsonContentType(contentType)) {
        ctx.bodyError = fail('unsupported_content_type', {
          message: `Content-Type must be application/json; got ${contentType === undefined ? 'none' : `'${contentType}'`}.`,
        });
        req.body = undefined;
        return next();
      }
      const parsed = parseJsonObject(raw ?? Buffer.alloc(0));
      if ('error' in parsed) {
        ctx.bodyError = parsed.error;
        req.body = undefined;
      } else {
        req.body = parsed.value;
      }
      next();
    });
  };
}

/**
 * Reports, at its turn in the order of checks, an unknown route (404 before anything about the
 * body is judged) or a body problem kept aside by `readBody`.
 */
export function rejectBadBody(isKnownRoute: (req: Request) => boolean): RequestHandler {
  return (req, _res, next) => {
    if (!isKnownRoute(req)) {
      return next(
        fail('unknown_route', { message: `Unknown route: ${req.method} ${req.baseUrl}${req.path}. See openapi.yaml for the routes this API has.` }),
      );
    }
    next(context(req).bodyError);
  };
}

function isJsonContentType(value: string | undefined): boolean {
  if (!value) return false;
  const essence = value.split(';')[0]?.trim().toLowerCase();
  return essence === 'application/json';
}

function bodyReadError(err: unknown): SimError {
  const type = typeof err === 'object' && err !== null ? (err as { type?: string }).type : undefined;
  if (type === 'entity.too.large') {
    return fail('request_too_large', { message: `The request body exceeds 1 MiB (${BODY_LIMIT_BYTES} bytes).` });
  }
  if (type === 'encoding.unsupported' || type === 'charset.unsupported') {
    return fail('unsupported_content_type', { message: 'Unsupported Content-Encoding or charset. Send plain UTF-8 JSON.' });
  }
  return fail('invalid_json', { message: 'The request body could not be read.' });
}

function parseJsonObject(raw: Buffer): { value: Record<string, unknown> } | { error: SimError } {
  if (raw.length === 0) {
    return { error: fail('invalid_json', { message: 'The request body is empty. Send a JSON object.' }) };
  }
  let text: string;
  try {
    text = utf8.decode(raw);
  } catch {
    return { error: fail('invalid_json', { message: 'The request body is not valid UTF-8.' }) };
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    return {
      error: fail('invalid_json', {
        message: `The request body is not valid JSON (${e instanceof Error ? e.message : 'parse error'}). Send a JSON object.`,
      }),
    };
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return { error: fail('invalid_json', { message: 'The request body must be a JSON object.' }) };
  }
  return { value: value as Record<string, unknown> };
}
