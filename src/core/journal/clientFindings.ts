/**
 * The client report's findings as it gives them (clientReport.ts judges the requests): the codes,
 * each with its severity, in the report's order; the tally of each code's occurrences with the
 * request ids of the first; and each finding's message, in plain words, from the facts the judging
 * noted.
 */
import { inWords } from '../generations/pipeline.js';

export type FindingCode =
  | 'no_requests'
  | 'retry_not_retryable'
  | 'retry_too_soon'
  | 'duplicate_after_lost_answer'
  | 'retry_without_backoff'
  | 'post_retry_without_idempotency_key'
  | 'poll_too_fast'
  | 'poll_after_resolved'
  | 'cancel_not_cancelable';

export interface ClientFinding {
  code: FindingCode;
  severity: 'error' | 'warning';
  count: number;
  message: string;
  /** Request ids (`X-Request-Id`) of the first occurrences, at most 5. */
  examples: string[];
}

/** Every finding, in the order the report lists them (errors first). */
const FINDING_SEVERITY: Readonly<Record<FindingCode, 'error' | 'warning'>> = {
  no_requests: 'error',
  retry_not_retryable: 'error',
  retry_too_soon: 'error',
  duplicate_after_lost_answer: 'error',
  retry_without_backoff: 'warning',
  post_retry_without_idempotency_key: 'warning',
  poll_too_fast: 'warning',
  poll_after_resolved: 'warning',
  cancel_not_cancelable: 'warning',
};

/** How many request ids a finding gives. */
const MAX_EXAMPLES = 5;

/** One finding as it is collected. */
interface Tally {
  count: number;
  examples: string[];
}

/** The findings as they are collected: occurrences per code, and the first request ids of each. */
export class Tallies {
  private readonly byCode = new Map<FindingCode, Tally>();

  note(code: FindingCode, requestId?: string): void {
    let tally = this.byCode.get(code);
    if (!tally) this.byCode.set(code, (tally = { count: 0, examples: [] }));
    tally.count++;
    if (requestId !== undefined && tally.examples.length < MAX_EXAMPLES) tally.examples.push(requestId);
  }

  /** The findings in the report's order, each with its message. */
  findings(facts: MessageFacts): ClientFinding[] {
    const findings: ClientFinding[] = [];
    for (const code of Object.keys(FINDING_SEVERITY) as FindingCode[]) {
      const tally = this.byCode.get(code);
      if (!tally) continue;
      findings.push({ code, severity: FINDING_SEVERITY[code], count: tally.count, message: messageOf(code, tally.count, facts), examples: tally.examples });
    }
    return findings;
  }
}

/** What the messages quote: the facts the judging noted. */
export interface MessageFacts {
  notRetryableStatuses: Set<number>;
  shortestWait: number;
  waitAskedFor: number;
  fastestPoll: number;
  flatWaits: FlatWaits;
  /** The first duplicate: the id of the create whose answer was lost, and of the one made again. */
  duplicate: { lost: string; again: string } | undefined;
}

const times = (n: number): string => (n === 1 ? 'once' : `${n} times`);
const some = (n: number, one: string, many: string): string => (n === 1 ? one : `${n} ${many}`);
const seconds = (ms: number): string => `${Number((ms / 1000).toFixed(3))} s`;

/** What the client did, and what the interface document asks, in plain words. */
function messageOf(code: FindingCode, count: number, facts: MessageFacts): string {
  switch (code) {
    case 'retry_not_retryable':
      return (
        `The client sent ${some(count, 'a request', 'requests')} again unchanged (same method, path and JSON body) after the same request had been answered ` +
        `${inWords([...facts.notRetryableStatuses].sort().map(String), 'or')}. A 400, 401, 402 or 422 means that the request itself cannot succeed: ` +
        'the interface document says not to retry it without changing the request.'
      );
    case 'retry_too_soon':
      return (
        `The client repeated ${some(count, 'a request', 'requests')} answered 429 before the answer's Retry-After had passed ` +
        `(the earliest ${seconds(facts.shortestWait)} after the 429, where Retry-After asked for ${facts.waitAskedFor} s). ` +
        'Wait at least Retry-After seconds before sending a rate-limited request again.'
      );
    case 'duplicate_after_lost_answer': {
      const { lost, again } = facts.duplicate as NonNullable<MessageFacts['duplicate']>;
      return (
        `The client created ${some(count, 'a generation', 'generations')} twice: a create whose answer was lost after it took effect ` +
        `(${lost}) was sent again without its Idempotency-Key and carried out again (${again})${count > 1 ? `, and ${count - 1} more like it` : ''}. ` +
        'Both are charged. Send one Idempotency-Key with every attempt of a create: the retry then answers the original; ' +
        'or list the videos to find the lost one before creating again.'
      );
    }
    case 'retry_without_backoff':
      return (
        `The client retried ${some(count, 'a request', 'requests')} after 429 or 500 answers without its waits growing ` +
        `(waits of ${facts.flatWaits.own.map(seconds).join(', ')}${facts.flatWaits.dictated ? ', not counting waits that a Retry-After asked for' : ''}: ` +
        `none more than ${facts.flatWaits.growth} times the mean of the waits before it). ` +
        'The interface document says to retry these with exponential backoff: wait longer after each failed attempt.'
      );
    case 'post_retry_without_idempotency_key':
      return (
        `The client repeated ${some(count, 'a create', 'creates')} (POST /v1/videos or /v1/images) after a 429, a 500 or no answer, ` +
        'without sending the same Idempotency-Key on both attempts. A create whose answer was lost may have been carried out: ' +
        'send one Idempotency-Key with every attempt of a create, so that a retry returns the original and creates no duplicate.'
      );
    case 'poll_too_fast':
      return (
        `The client retrieved an unresolved generation less than 2 seconds after its previous retrieve of it, ${times(count)} ` +
        `(as little as ${seconds(facts.fastestPoll)} apart). The interface document asks to poll every 2 to 5 seconds.`
      );
    case 'poll_after_resolved':
      return (
        `The client retrieved a generation it had already been answered with as succeeded, failed or canceled, ${times(count)}. ` +
        'A resolved generation does not change any more: stop polling it once it has resolved.'
      );
    case 'cancel_not_cancelable':
      return (
        `The client asked to cancel a generation it had already seen as verifying, succeeded, failed or canceled, ${times(count)}. ` +
        'Only a queued or processing generation can be canceled; any other cancel is answered 400.'
      );
    case 'no_requests':
      return (
        'The journal holds no request made with this API key, so there is nothing to judge. Check the key: the client may use ' +
        'another one (a request whose key was refused is not an account\'s), it may not have run, or its requests may have left ' +
        'the journal (it keeps the most recent requests of all accounts, up to the scenario\'s journal size) or been dropped by a reset.'
      );
  }
}

/** The client's own waits between the attempts of a request (ms), and whether Retry-After dictated others. */
export interface FlatWaits {
  own: number[];
  dictated: boolean;
  /** How many times the mean of the waits before it a wait must be for the waits to grow (`BACKOFF_GROWTH`). */
  growth: number;
}
