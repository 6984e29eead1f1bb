/**
 * What makes two request bodies the same, for every rule that asks whether a request was sent
 * again: idempotency (a stored key replays only the same request) and the client report (a repeat
 * is the same request sent again). Both compare bodies by `sameBodyText`.
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
