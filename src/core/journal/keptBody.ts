/**
 * What the journal keeps of a request's JSON body, for request patterns to match
 * (`requestPattern.ts`): within bounds, whatever was sent, so that a record stays small.
 */
import { canonicalJson } from '../requests/sameRequest.js';

/** What a record keeps of a request's JSON body: its fields (null: none read), and those kept as digests. */
export interface KeptBody {
  readonly body: Record<string, unknown> | null;
  readonly digests: Record<string, string> | undefined;
}

/** A request without a JSON object body (or whose body was not read). */
export const NO_KEPT_BODY: KeptBody = Object.freeze({ body: null, digests: undefined });

/** A body of at most this many bytes and `KEPT_BODY_FIELDS` fields, every value a string, number, boolean or null, is kept whole. */
const KEPT_BODY_BYTES = 1024;
/** Of any other body, at most this many fields are kept (the most any operation takes is 6)... */
const KEPT_BODY_FIELDS = 8;
/** ...each named in at most this many characters (a longer name is no field any operation takes)... */
const KEPT_FIELD_NAME_CHARS = 32;
/** ...and each value whose canonical JSON is at most this many characters as it is; a longer one as its digest. */
export const KEPT_VALUE_CHARS = 64;

/**
 * What the journal keeps of a parsed JSON object body of `bytes` bytes, for request patterns to
 * match (`requestPattern.ts`): a small flat body of few fields whole (the parsed value itself, no
 * copy: a create's prompt is the stored generation's own string); of any other, its first
 * `KEPT_BODY_FIELDS` fields with a name of at most `KEPT_FIELD_NAME_CHARS` characters, each value
 * whose canonical JSON is at most `KEPT_VALUE_CHARS` characters as it is, and each longer one as
 * `digest` of that JSON. So a record holds at most about 2 KB of its body whatever was sent. (A
 * body beyond those bounds is one no operation takes: it was refused.)
 */
export function keptBody(parsed: Record<string, unknown>, bytes: number, digest: (text: string) => string): KeptBody {
  if (bytes <= KEPT_BODY_BYTES && isFlatAndFew(parsed)) return { body: parsed, digests: undefined };
  const body: Record<string, unknown> = {};
  let digests: Record<string, string> | undefined;
  let fields = 0;
  for (const name in parsed) {
    if (!Object.hasOwn(parsed, name) || name.length > KEPT_FIELD_NAME_CHARS) continue;
    if (++fields > KEPT_BODY_FIELDS) break;
    const value = parsed[name];
    let text: string;
    try {
      text = canonicalJson(value);
    } catch {
      continue; // nested too deep to walk: no pattern can name it
    }
    if (text.length <= KEPT_VALUE_CHARS) body[name] = value;
    else (digests ??= {})[name] = digest(text);
  }
  return { body, digests };
}

/** Whether no value of `body` is an object or an array, and it has at most `KEPT_BODY_FIELDS` fields. */
function isFlatAndFew(body: Record<string, unknown>): boolean {
  let fields = 0;
  for (const key in body) {
    const value = body[key];
    if ((typeof value === 'object' && value !== null) || ++fields > KEPT_BODY_FIELDS) return false;
  }
  return true;
}
