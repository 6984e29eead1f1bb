/**
 * Reading a request body as the contract wants it: a JSON object sent as `application/json`, at
 * most 1 MiB. Problems become catalogue errors, reported at their turn in the order of checks.
 */
import { clip, fail, type SimError } from '../core/errors.js';
import { JSON_MEDIA_TYPE } from '../jsonType.js';
import type { PendingFingerprint } from '../core/journal/journal.js';
import { bodyIdentity, jsonIdentity } from '../core/requests/sameRequest.js';
import type { RawBody } from './exchange.js';
import { sha256Base64 } from '../runtime/digest.js';

export const BODY_LIMIT_BYTES = 1024 * 1024;

const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * The body of a request, parsed. `emptyAs`: what an empty body without a content type reads as: `{}`
 * (the control endpoints that take a body, so that `curl -X POST .../_sim/reset` works), or an error;
 * or `none`, for an operation that takes no body (a cancel): an empty body, or an empty JSON object,
 * is no body whatever its Content-Type (many clients send `Content-Type: application/json` on every
 * request, or `{}` as a form), and any other is read as JSON, so that its fields are refused as
 * unknown parameters like any other.
 */
export function readJsonBody(
  raw: RawBody,
  headers: Record<string, string | undefined>,
  emptyAs: 'object' | 'none' | 'error',
): { value: Record<string, unknown> | undefined } | { error: SimError } {
  if (raw === 'too_large') {
    return { error: fail('request_too_large', { message: `The request body exceeds 1 MiB (${BODY_LIMIT_BYTES} bytes).` }) };
  }
  const contentType = headers['content-type'];
  const length = raw?.length ?? 0;
  if (length === 0 && (emptyAs === 'none' || (contentType === undefined && emptyAs === 'object'))) {
    return { value: emptyAs === 'object' ? {} : undefined };
  }
  const encoding = headers['content-encoding'];
  if (encoding !== undefined && encoding.trim().toLowerCase() !== 'identity') {
    return { error: fail('unsupported_content_type', { message: `Content-Encoding '${clip(encoding)}' is not supported. Send plain UTF-8 JSON.` }) };
  }
  if (emptyAs === 'none' && isEmptyObject(raw as Buffer)) return { value: undefined };
  if (!isJsonContentType(contentType)) {
    return {
      error: fail('unsupported_content_type', {
        message: `Content-Type must be ${JSON_MEDIA_TYPE}; got ${contentType === undefined ? 'none' : `'${clip(contentType)}'`}.`,
      }),
    };
  }
  if (length === 0) return { error: fail('invalid_json', { message: 'The request body is empty. Send a JSON object.' }) };
  let text: string;
  try {
    text = utf8.decode(raw as Buffer);
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

/** Whether the bytes are a JSON object without fields (`{}`, spaces allowed). */
function isEmptyObject(raw: Buffer): boolean {
  // A body that does not start with `{` (after white space) cannot be one: nothing to parse.
  const first = raw.findIndex((byte) => byte !== 0x20 && byte !== 0x0a && byte !== 0x0d && byte !== 0x09);
  if (raw[first] !== 0x7b) return false;
  try {
    const value: unknown = JSON.parse(utf8.decode(raw));
    return typeof value === 'object' && value !== null && !Array.isArray(value) && Object.keys(value).length === 0;
  } catch {
    return false;
  }
}

function isJsonContentType(value: string | undefined): boolean {
  if (!value) return false;
  if (value === JSON_MEDIA_TYPE) return true;
  const semicolon = value.indexOf(';');
  return (semicolon < 0 ? value : value.slice(0, semicolon)).trim().toLowerCase() === JSON_MEDIA_TYPE;
}

/**
 * What the journal keeps of a body for the client report: a SHA-256 digest (base64, 44 characters)
 * of the body as the report compares bodies (`bodyIdentity`: as idempotency compares them), or null
 * when there is none (or it was too large to be read). `parsed`: the body's value when the request
 * path has already parsed these bytes, so that they are not parsed again.
 */
export function bodyFingerprint(raw: RawBody, parsed?: Record<string, unknown>): string | null {
  if (raw === null || raw === 'too_large') return null;
  const identity = (parsed !== undefined && raw.length > 0 ? jsonIdentity(parsed) : undefined) ?? bodyIdentity(raw);
  return digest(identity);
}

/**
 * `bodyFingerprint` as the journal takes it: for a flat parsed body (no value an object or an
 * array) of at most `PENDING_FINGERPRINT_BYTES`, how to make it, made only if the record is read
 * (few are). Until then the record keeps the body's value: no larger than its text, at most a few
 * KB, and for a typical create no larger than the digest (its prompt is the stored generation's own
 * string). Any other body's digest is made at once.
 */
export function journalFingerprint(raw: RawBody, parsed?: Record<string, unknown>): string | null | PendingFingerprint {
  if (parsed === undefined || raw === null || raw === 'too_large' || raw.length === 0 || raw.length > PENDING_FINGERPRINT_BYTES || !isFlat(parsed)) {
    return bodyFingerprint(raw, parsed);
  }
  return () => digest(jsonIdentity(parsed) as string);
}

/** Whether no value of `body` is an object or an array (its JSON identity is then always made). */
function isFlat(body: Record<string, unknown>): boolean {
  for (const key in body) {
    const value = body[key];
    if (typeof value === 'object' && value !== null) return false;
  }
  return true;
}

/** The largest body whose parsed value the journal keeps instead of its digest, until the digest is read. */
export const PENDING_FINGERPRINT_BYTES = 1024;

/** A SHA-256 digest of a text (base64, 44 characters): what is kept of a request to recognise it again. */
export function digest(text: string): string {
  return sha256Base64(text);
}
