/**
 * What makes two request bodies the same, for every rule that asks whether a request was sent
 * again: idempotency (a stored key replays only the same request) and the client report (a repeat
 * is the same request sent again). Both compare bodies by `sameBodyText`; the request path gives
 * the journal a digest of each body's identity (`bodyIdentity`), which the report compares.
 */
import stableStringify from 'safe-stable-stringify';

/**
 * A body's JSON value as canonical text: two bodies are the same when their texts are equal.
 * Object keys in any order and any spacing are the same body; a top-level field whose value is
 * null is the same as leaving it out (null for an optional field means "left out", as the
 * request's validation reads it), so `{"negative_prompt": null, ...}` is the same request as
 * `{...}`. No body (undefined) is `null`. Throws a RangeError when the value is nested too deep to
 * walk; each caller says what such a body is.
 */
export function sameBodyText(value: unknown): string {
  if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
    const given: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) if (v !== null) given[k] = v;
    return stableStringify(given);
  }
  return stableStringify(value) ?? 'null';
}

/**
 * A JSON value as canonical text (object keys sorted at every level, no spacing): two values are
 * equal as JSON when their texts are. Undefined is `null`. Throws a RangeError when the value is
 * nested too deep to walk.
 */
export function canonicalJson(value: unknown): string {
  return stableStringify(value) ?? 'null';
}

const utf8 = new TextDecoder();

/**
 * A body as the client report compares bodies: its JSON value as `sameBodyText` writes it, or, when
 * it is not JSON, its text. The journal keeps only a digest of this (see
 * `JournalRecord.bodyFingerprint`), so equal identities mean the same body.
 */
export function bodyIdentity(bytes: Uint8Array): string {
  const text = utf8.decode(bytes);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return `text:${text}`;
  }
  // Nested too deep to walk: compared as text.
  return jsonIdentity(value) ?? `text:${text}`;
}

/** The identity of a body already parsed (see `bodyIdentity`); undefined when it is nested too deep to walk. */
export function jsonIdentity(value: unknown): string | undefined {
  try {
    return `json:${sameBodyText(value)}`;
  } catch {
    return undefined;
  }
}
