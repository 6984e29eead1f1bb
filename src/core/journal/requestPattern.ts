/**
 * Request patterns: what a test says its client should have sent, matched against the journal's
 * records. One definition, used by `POST /_sim/verify`, `POST /_sim/requests/wait` and everything
 * built on them (the typed client, the matchers, the dashboard).
 *
 * A pattern's fields are all optional, and a record matches when it matches every field given:
 *
 *   method            the request's method, exactly
 *   path              exact, or a prefix when it ends with `*`; the query string is compared only
 *                     when the pattern has one (`/v1/videos` matches `/v1/videos?limit=5`)
 *   api_key           the account's key
 *   status            the status the client got; null: none (a network fault lost the answer)
 *   body              an object: every field of it is in the request's JSON body with an equal
 *                     value, compared as JSON (key order and spacing aside)
 *   seen              a generation status the answer showed (a video, a cancel, a list's videos)
 *   idempotency_key   the Idempotency-Key sent; true: one was sent; false: none was
 *
 * Bodies are compared through what the journal keeps of them (`keptBody` in keptBody.ts): a value
 * it keeps only as a digest is compared by the digest of the pattern's value, with the same digest
 * function (the request path's), so the comparison is the same.
 */
import { entryOf, seenBit, type Journal, type JournalEntry, type JournalRecord } from './journal.js';
import { KEPT_VALUE_CHARS } from './keptBody.js';
import type { VideoStatus } from '../generations/pipeline.js';
import { canonicalJson } from '../requests/sameRequest.js';

/** A request pattern, as `openapi.yaml`'s `SimRequestPattern` has it. */
export interface RequestPattern {
  method?: string;
  path?: string;
  api_key?: string;
  status?: number | null;
  body?: Record<string, unknown>;
  seen?: VideoStatus;
  idempotency_key?: string | boolean;
}

export type PatternField = keyof RequestPattern;

/** How many matching requests a verification expects (default: at least 1). */
export type VerifyTimes = { exactly: number } | { at_least: number } | { at_most: number };

/** A journal entry near a pattern: `differs` names the pattern's fields it does not match. */
type ClosestEntry = JournalEntry & { differs: PatternField[] };

/** The answer of `POST /_sim/verify`. */
export interface Verification {
  verified: boolean;
  /** Requests that matched (a sequence: how many of its requests were found in order). */
  count: number;
  /** Null when verified; else one sentence: what was expected, what was found. */
  message: string | null;
  /** When not verified, up to 3 entries nearest the pattern (fewest fields missed, then the most recent). */
  closest: ClosestEntry[];
  /** Requests of the pattern's scope (its `api_key`'s account, else every account) the journal dropped for its size. */
  dropped: number;
}

/** The answer of `POST /_sim/requests/wait`. */
export interface WaitAnswer {
  matched: JournalEntry[];
  timed_out: boolean;
  /** The `seq` to wait after for the next matches. */
  cursor: number;
  /** When timed out: up to 3 entries after `after` nearest the pattern. */
  closest?: ClosestEntry[];
}

/** How many entries `closest` lists. */
const CLOSEST_ENTRIES = 3;

/** The longest a pattern is shown in a message (its JSON, cut there with `…`). */
const SHOWN_PATTERN_CHARS = 1000;

/** A pattern ready to match records: each field it gives, as a test. */
export class CompiledPattern {
  /** The field tests in the pattern's order (what `differs` lists)... */
  private readonly tests: { field: PatternField; test: (r: JournalRecord) => boolean }[] = [];
  /** ...and in the order `matches` runs them: the cheapest first, the body last. */
  private readonly quick: ((r: JournalRecord) => boolean)[];

  /** `digest`: the request path's, which made the digests the journal keeps of long body values. */
  constructor(
    readonly source: RequestPattern,
    digest: (text: string) => string,
  ) {
    for (const field of Object.keys(source) as PatternField[]) {
      const test = fieldTest(field, source, digest);
      if (test !== undefined) this.tests.push({ field, test });
    }
    this.quick = [...this.tests].sort((a, b) => COST.indexOf(a.field) - COST.indexOf(b.field)).map((t) => t.test);
  }

  /** The account the pattern is about, if it names one. */
  get apiKey(): string | undefined {
    return this.source.api_key;
  }

  matches(r: JournalRecord): boolean {
    for (const test of this.quick) if (!test(r)) return false;
    return true;
  }

  /** The pattern's fields `r` does not match, in the pattern's order. */
  differs(r: JournalRecord): PatternField[] {
    const out: PatternField[] = [];
    for (const { field, test } of this.tests) if (!test(r)) out.push(field);
    return out;
  }

  /** The pattern as a message shows it: its JSON. */
  toString(): string {
    return shown(this.source);
  }
}

/** The fields from the cheapest test to the dearest: `matches` runs them in this order. */
const COST: readonly PatternField[] = ['api_key', 'method', 'status', 'seen', 'idempotency_key', 'path', 'body'];

function fieldTest(field: PatternField, p: RequestPattern, digest: (text: string) => string): ((r: JournalRecord) => boolean) | undefined {
  switch (field) {
    case 'method': {
      const method = p.method;
      return (r) => r.method === method;
    }
    case 'path': {
      const pattern = p.path as string;
      if (pattern.endsWith('*')) {
        // A prefix: compared with the path and its query alike (a prefix without `?` ends within the path).
        const prefix = pattern.slice(0, -1);
        return (r) => r.path.startsWith(prefix);
      }
      if (pattern.includes('?')) return (r) => r.path === pattern;
      // The path alone: the whole of the record's, or what comes before its query.
      return (r) => r.path === pattern || (r.path.startsWith(pattern) && r.path.charCodeAt(pattern.length) === QUESTION_MARK);
    }
    case 'api_key': {
      const key = p.api_key;
      return (r) => r.account === key;
    }
    case 'status': {
      const status = p.status;
      return (r) => r.status === status;
    }
    case 'seen': {
      const bit = seenBit(p.seen);
      return (r) => ((r.seen ?? 0) & bit) !== 0;
    }
    case 'idempotency_key': {
      const wanted = p.idempotency_key;
      if (wanted === true) return (r) => r.idempotencyKey !== undefined;
      if (wanted === false) return (r) => r.idempotencyKey === undefined;
      return (r) => r.idempotencyKey === wanted;
    }
    case 'body': {
      const fields = Object.entries(p.body ?? {}).map(([name, value]) => {
        const text = canonicalJson(value);
        return { name, text, digest: text.length > KEPT_VALUE_CHARS ? digest(text) : undefined };
      });
      return (r) => {
        const body = r.body;
        if (body === null || body === undefined) return false;
        for (const { name, text, digest: digested } of fields) {
          if (Object.hasOwn(body, name)) {
            if (jsonOf(body[name]) !== text) return false;
          } else if (digested === undefined || r.bodyDigests?.[name] !== digested) return false;
        }
        return true;
      };
    }
    default:
      return undefined;
  }
}

/** A kept body value's canonical JSON (a value too deeply nested to walk equals nothing). */
function jsonOf(value: unknown): string | undefined {
  if (typeof value === 'string') return JSON.stringify(value);
  try {
    return canonicalJson(value);
  } catch {
    return undefined;
  }
}

const QUESTION_MARK = 63;

/** A pattern (or a list of them) as a message shows it. */
function shown(value: unknown): string {
  const text = JSON.stringify(value);
  return text.length > SHOWN_PATTERN_CHARS ? `${text.slice(0, SHOWN_PATTERN_CHARS)}…` : text;
}

const requests = (n: number): string => (n === 1 ? 'request' : 'requests');

/** What `times` expects, in words: "at least 2 requests", "no request". */
function expectedInWords(times: VerifyTimes): string {
  if ('exactly' in times) return `exactly ${times.exactly} ${requests(times.exactly)}`;
  if ('at_most' in times) return times.at_most === 0 ? 'no request' : `at most ${times.at_most} ${requests(times.at_most)}`;
  return `at least ${times.at_least} ${requests(times.at_least)}`;
}

/** Whether `count` matching requests, with `dropped` the journal no longer holds, satisfy `times`. */
function countVerdict(times: VerifyTimes, count: number, dropped: number): { verified: boolean; dropMatters: boolean } {
  if ('at_least' in times) return { verified: count >= times.at_least, dropMatters: false };
  const bound = 'exactly' in times ? times.exactly : times.at_most;
  // More than allowed is a failure whatever was dropped; within it, a dropped request may have matched.
  if (count > bound) return { verified: false, dropMatters: false };
  if (dropped > 0) return { verified: false, dropMatters: true };
  return { verified: 'exactly' in times ? count === bound : true, dropMatters: false };
}

/** "the journal dropped 3 older requests (of sk_test_me)": what a message says of dropped requests. */
function droppedInWords(dropped: number, apiKey: string | undefined): string {
  return `the journal dropped ${dropped} older ${requests(dropped)}${apiKey === undefined ? '' : ` of ${apiKey}`} (limits.journal_size)`;
}

/** The one sentence of a count verification that failed. */
function countMessage(pattern: string, times: VerifyTimes, count: number, dropped: number, apiKey: string | undefined): string {
  const head = `Expected ${expectedInWords(times)} matching ${pattern}; found ${count}`;
  const { verified, dropMatters } = countVerdict(times, count, dropped);
  if (dropMatters) return `${head}, but ${droppedInWords(dropped, apiKey)} that may have matched, so the count cannot be verified.`;
  if (!verified && dropped > 0 && 'at_least' in times) return `${head}, and ${droppedInWords(dropped, apiKey)} that may have matched.`;
  return `${head}.`;
}

/** `POST /_sim/verify` with `request` (and `times`): how many kept entries match, against what `times` expects. */
export function verifyCount(journal: Journal, pattern: CompiledPattern, times: VerifyTimes = { at_least: 1 }): Verification {
  let count = 0;
  for (const r of journal.after(0)) if (pattern.matches(r)) count++;
  const dropped = journal.dropped(pattern.apiKey);
  const { verified } = countVerdict(times, count, dropped);
  if (verified) return { verified, count, message: null, closest: [], dropped };
  return { verified, count, message: countMessage(pattern.toString(), times, count, dropped, pattern.apiKey), closest: closestTo(journal, pattern, 0), dropped };
}

/**
 * `POST /_sim/verify` with `sequence`: requests matching each pattern in turn, in the journal's
 * order, other requests allowed between them. `count` is how many of them were found in order
 * (each taken as early as it can be). Any request of the sequences' scope the journal dropped may
 * have been part of it (or come between), so then it is not verified.
 */
export function verifySequence(journal: Journal, patterns: CompiledPattern[]): Verification {
  const found: JournalRecord[] = [];
  for (const r of journal.after(0)) {
    if (found.length === patterns.length) break;
    if ((patterns[found.length] as CompiledPattern).matches(r)) found.push(r);
  }
  const keys = new Set(patterns.map((p) => p.apiKey));
  const apiKey = keys.size === 1 ? [...keys][0] : undefined;
  const dropped = journal.dropped(apiKey);
  const count = found.length;
  if (count === patterns.length && dropped === 0) return { verified: true, count, message: null, closest: [], dropped };
  const head = `Expected ${patterns.length} ${requests(patterns.length)} in order matching ${shown(patterns.map((p) => p.source))}`;
  if (count === patterns.length) {
    const message = `${head}; found them (seq ${found.map((r) => r.seq).join(', ')}), but ${droppedInWords(dropped, apiKey)}, so their order among them cannot be verified.`;
    return { verified: false, count, message, closest: found.slice(0, CLOSEST_ENTRIES).map((r) => ({ ...entryOf(r), differs: [] })), dropped };
  }
  const missing = patterns[count] as CompiledPattern;
  const sofar = count === 0 ? `found no request matching ${missing.toString()}` : `found the first ${count} (seq ${found.map((r) => r.seq).join(', ')}), but no request matching ${missing.toString()} after ${count === 1 ? 'it' : 'them'}`;
  const message = `${head}; ${sofar}${dropped > 0 ? `, and ${droppedInWords(dropped, apiKey)} that may have matched` : ''}.`;
  return { verified: false, count, message, closest: closestTo(journal, missing, 0), dropped };
}

/**
 * The kept entries after `after` nearest `pattern`: fewest of its fields missed, then the most
 * recent; at most `CLOSEST_ENTRIES`.
 */
function closestTo(journal: Journal, pattern: CompiledPattern, after: number): ClosestEntry[] {
  const best: { r: JournalRecord; differs: PatternField[] }[] = [];
  for (const r of journal.after(after)) {
    const differs = pattern.differs(r);
    // Oldest first: a later entry goes before those that miss as many fields.
    let at = best.findIndex((b) => differs.length <= b.differs.length);
    if (at < 0) at = best.length;
    if (at >= CLOSEST_ENTRIES) continue;
    best.splice(at, 0, { r, differs });
    if (best.length > CLOSEST_ENTRIES) best.pop();
  }
  return best.map(({ r, differs }) => ({ ...entryOf(r), differs }));
}

/**
 * A wait for `count` requests matching `pattern` after `after` (`POST /_sim/requests/wait`): the
 * journal's current records are read once when it is made; then each new record is offered as it
 * is added (`offer`), until enough have matched. It reads whatever journal is current (`journal`),
 * so a reset or a dropped record is seen: the matches are counted again, from the journal, before
 * the wait is said to be answered. It needs no clock and moves none; what holds it (a connection,
 * a timer) is the adapter's.
 */
export class RequestWait {
  /** Matches counted: exact after each count from the journal, one more for each record offered that matched. */
  private counted: number;

  constructor(
    private readonly journal: () => Journal,
    readonly pattern: CompiledPattern,
    readonly count: number,
    readonly after: number,
  ) {
    this.counted = this.matches(count).length;
  }

  /** Whether `count` requests have matched. */
  get satisfied(): boolean {
    return this.counted >= this.count;
  }

  /** A record the journal just added: true when it makes the wait's count (checked against the journal). */
  offer(record: JournalRecord): boolean {
    if (record.seq <= this.after || !this.pattern.matches(record)) return false;
    if (++this.counted < this.count) return false;
    this.counted = this.matches(this.count).length;
    return this.satisfied;
  }

  /** The answer now: the first `count` matches kept after `after`; when `timedOut`, what matched so far and the closest entries. */
  answer(timedOut: boolean): WaitAnswer {
    const matched = this.matches(this.count);
    const journal = this.journal();
    const complete = matched.length >= this.count;
    const cursor = complete ? (matched[matched.length - 1] as JournalRecord).seq : Math.max(journal.seq, this.after);
    const answer: WaitAnswer = { matched: matched.map(entryOf), timed_out: timedOut && !complete, cursor };
    if (answer.timed_out) answer.closest = closestTo(journal, this.pattern, this.after);
    return answer;
  }

  /** The first `limit` kept records after `after` that match. */
  private matches(limit: number): JournalRecord[] {
    const out: JournalRecord[] = [];
    if (limit <= 0) return out;
    for (const r of this.journal().after(this.after)) {
      if (!this.pattern.matches(r)) continue;
      out.push(r);
      if (out.length >= limit) break;
    }
    return out;
  }
}
