/**
 * The error a verification rejects with (`verify`, `verifySequence`, and `waitForRequest` when its
 * time runs out): the verification's sentence, then the journal entries nearest the pattern, each
 * with the pattern's fields it does not match. The matchers (`video-service-sim/matchers`) fail
 * with the same text.
 */
import type { components } from '../generated/openapi-types.js';

/**
 * An entry of the request journal, as openapi.yaml has it (`SimJournalEntry`), its `body` holding
 * the fields the client sent, whatever their names.
 */
export type JournalEntry = Omit<components['schemas']['SimJournalEntry'], 'body' | 'body_digests'> & {
  body?: Record<string, unknown>;
  body_digests?: Record<string, string>;
};

/**
 * What did not hold: `message` is the sentence (what was expected, what was found) followed by the
 * closest entries, one a line; `closest` those entries, each with `differs`.
 */
export class VerificationError extends Error {
  /** `instanceof` holds across copies of the class (a page's bundle has its own), as for SimulatorControlError. */
  static override [Symbol.hasInstance](value: unknown): boolean {
    return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[BRAND] === true;
  }

  /** The sentence alone, without the closest entries. */
  readonly sentence: string;
  /** Up to 3 journal entries nearest the pattern, each with `differs`. */
  readonly closest: JournalEntry[];
  /** Requests of the pattern's scope the journal dropped (a verification's; 0 for a wait). */
  readonly dropped: number;
  /** The requests that matched (a wait's, so far; a verification's count is `count`). */
  readonly matched: JournalEntry[];
  /** How many requests matched (a sequence: how many of its requests were found in order). */
  readonly count: number;

  constructor(sentence: string, details: { closest?: JournalEntry[]; dropped?: number; matched?: JournalEntry[]; count?: number } = {}) {
    const closest = details.closest ?? [];
    super(verificationText(sentence, closest));
    this.name = 'VerificationError';
    (this as unknown as Record<symbol, boolean>)[BRAND] = true;
    this.sentence = sentence;
    this.closest = closest;
    this.dropped = details.dropped ?? 0;
    this.matched = details.matched ?? [];
    this.count = details.count ?? this.matched.length;
  }
}

const BRAND = Symbol.for('video-service-sim.VerificationError');

/** What a verification's `times` expects, in words: "at least 2 requests", "no request" (the words of src/core/journal/requestPattern.ts). */
export function expectedInWords(times: { exactly: number } | { at_least: number } | { at_most: number }): string {
  const requests = (n: number): string => (n === 1 ? 'request' : 'requests');
  if ('exactly' in times) return `exactly ${times.exactly} ${requests(times.exactly)}`;
  if ('at_most' in times) return times.at_most === 0 ? 'no request' : `at most ${times.at_most} ${requests(times.at_most)}`;
  return `at least ${times.at_least} ${requests(times.at_least)}`;
}

/**
 * A verification's sentence and its closest entries, as `VerificationError` and the matchers show
 * them:
 *
 *   Expected at least 1 request matching {"seen":"succeeded"}; found 0.
 *   Closest requests in the journal:
 *     #3 GET /v1/videos/vid_1 (sk_test_me) -> 200, seen processing; differs: seen
 */
function verificationText(sentence: string, closest: readonly JournalEntry[]): string {
  if (closest.length === 0) return sentence;
  return [sentence, 'Closest requests in the journal:', ...closest.map((e) => `  ${entryLine(e)}`)].join('\n');
}

/** One journal entry in a line: `#3 GET /v1/videos/vid_1 (sk_test_me) -> 200, seen processing; differs: seen`. */
function entryLine(e: JournalEntry): string {
  const account = e.account === null ? '' : ` (${e.account})`;
  const status = e.status === null ? 'no answer' : String(e.status);
  const seen = e.seen ? `, seen ${e.seen.join(' and ')}` : '';
  const differs = e.differs === undefined ? '' : e.differs.length === 0 ? '; matches' : `; differs: ${e.differs.join(', ')}`;
  return `#${e.seq} ${e.method} ${e.path}${account} -> ${status}${seen}${differs}`;
}
