/**
 * The client report: how well a client follows the service's interface document, read from one
 * account's journal records when the report is asked for (the request path only journals each
 * request, with a fingerprint of its body).
 *
 * Words used below:
 * - The same request: the same method, the same path (with its query string, as sent) and the same
 *   JSON body, compared as idempotency compares bodies (`sameBodyText`: key order and spacing do
 *   not matter, a top-level null field is the same as leaving it out; a body that is not JSON is
 *   compared as text). The Idempotency-Key header is not part of it, so a retry that
 *   changes only its key is still the same request.
 * - A repeat of a request: the next request that is the same request; the earlier one is the
 *   attempt it repeats.
 * - Answered: the client got the answer. An answer the client never got (it closed the connection
 *   first, for example on a timeout during injected latency, or a network fault reset, closed or
 *   held the connection, or cut the body short) is "no answer"; the rules that judge how a client
 *   reacted to an answer skip those. A gateway's 502, 503 or 504 (a network fault `gateway`) is an
 *   answer: a 5xx.
 * - A lost answer: the service's answer that a network fault kept from the client (any kind but
 *   `slow`, in either phase). In the `after` phase the request took effect all the same.
 * - Resolved: `succeeded`, `failed` or `canceled`. Seen as a status: a create, retrieve or cancel
 *   answered 200 with the generation in that status.
 * - Times: the client's own time. With the realtime clock, the host clock each request was handled at
 *   (the simulator's injected wall clock, not the virtual time it drives): a client that polls every
 *   0.5 s polls too fast whatever `speed` is. With the manual clock, the account's clock, which a
 *   test moves as its client waits.
 *
 * The findings, each from a rule of the interface document:
 * - `retry_not_retryable` (error): a repeat of a request answered 400, 401, 402 or 422 (these are
 *   not retried without changing the request). A 400 about the Idempotency-Key itself (its `param`
 *   is `Idempotency-Key`: the key was used for another request, or is malformed) is changed by
 *   sending another key.
 * - `retry_too_soon` (error): a repeat of a request answered 429 sooner than that answer's
 *   Retry-After, on the account's clock.
 * - `duplicate_after_lost_answer` (error): a create whose answer was lost after it took effect,
 *   repeated without the same Idempotency-Key, and carried out again: two generations (or images)
 *   where the client wanted one. Sending the key on both attempts, or listing the videos to find
 *   the lost one instead of creating again, avoids it.
 * - `retry_without_backoff` (warning): a request tried again and again, each attempt but the last
 *   answered 429 or 5xx, whose waits between attempts do not grow over the run. The client's own
 *   waits w1..wn grow when one of them is more than 1.25 times the mean of those before it
 *   (wk > 1.25 * (w1 + ... + wk-1) / (k - 1)): their sum then grows faster than a fixed
 *   interval's, timer noise included; a fixed interval and shrinking waits never do. A run is
 *   judged from four own waits on: a jittered backoff draws each wait at random under a doubling
 *   cap (full jitter: anywhere from 0 to the cap), so over fewer waits it too often shows no growth
 *   by chance (full jitter: 31% of runs of two waits, 5% of three, 0.5% of four, 0.02% of five).
 *   A wait after a 429 that lasted at least its Retry-After is what the service asked for: it is
 *   neither judged nor counted among the client's own waits. Counted once per such request.
 * - `post_retry_without_idempotency_key` (warning): a repeat of a create (POST /v1/videos or
 *   POST /v1/images) after a 429, a 5xx or no answer, when the two attempts do not carry one and
 *   the same Idempotency-Key (no key on the repeat, or a new key for each attempt: either way a
 *   create the service did carry out would be carried out again).
 * - `poll_too_fast` (warning): a retrieve of a generation less than 2 seconds after the previous
 *   retrieve of it (less 0.1 s of timer noise, POLL_TIMER_TOLERANCE_MS), when that one was answered
 *   with the generation unresolved.
 * - `poll_after_resolved` (warning): a retrieve of a generation the client had already seen
 *   resolved.
 * - `cancel_not_cancelable` (warning): a cancel of a generation the client had already seen as
 *   `verifying` or resolved.
 *
 * And one finding about the report itself:
 * - `no_requests` (error): the journal holds no request of the account (a mistyped key, a client
 *   that never ran, or requests the journal no longer holds), so there is nothing to judge.
 *
 * A repeated 404 (polling an unknown or deleted id) is no finding: the interface document does not
 * show the error of an unknown id, nor whether it may be retried.
 *
 * A request whose prompt triggers chose its answer (`[sim:error=500]`, `[sim:reject=claim_linking]`,
 * promptTriggers.ts) is judged as any other: the trigger chose what the service answered, not what
 * the client did next, and how the client reacts to that answer is what a trigger is there to
 * exercise. `coverage.triggers` counts those requests per directive, so that their errors are
 * read as chosen, not as the service's.
 *
 * Each finding counts its occurrences and gives the request ids of the first five.
 */
import { OPERATION_FACTS, SERVICE_OPERATION_IDS, factsOf, type OperationFacts, type ServiceOperationId } from '../../generated/operations.js';
import { Tallies, type ClientFinding, type FlatWaits, type MessageFacts } from './clientFindings.js';
import type { ClockMode } from '../time/clock.js';
import type { SettledRecord } from './journal.js';
import { NETWORK } from '../faults/network.js';
import { CANCELABLE_STATUSES, RESOLVED_STATUSES } from '../generations/pipeline.js';

export type { ClientFinding, FindingCode } from './clientFindings.js';

/** What the report reads of a journal record. */
export type ReportedRequest = Pick<
  SettledRecord,
  | 'method'
  | 'path'
  | 'status'
  | 'atMs'
  | 'hostMs'
  | 'request_id'
  | 'operation'
  | 'idempotencyKey'
  | 'bodyFingerprint'
  | 'retryAfter'
  | 'network'
  | 'createdId'
  | 'videoId'
  | 'videoStatus'
  | 'errorParam'
  | 'undelivered'
  | 'trigger'
>;

export interface ClientReport {
  account: string;
  /** The account's requests the report read (those the journal still holds). */
  requests: number;
  coverage: {
    /** Requests per endpoint (`"GET /v1/videos/{id}"`); every endpoint of the service is listed. */
    endpoints: Record<string, number>;
    /** Requests per answer status (`"200"`). */
    statuses: Record<string, number>;
    /**
     * Requests per prompt trigger (`"[sim:error=500]"`), those whose prompt chose their outcome;
     * only when there are any.
     */
    triggers?: Record<string, number>;
  };
  findings: ClientFinding[];
}

/** The service's endpoints, by operationId of openapi.yaml, in its order: what the coverage lists. */
export const SERVICE_ENDPOINTS: Readonly<Record<ServiceOperationId, { method: string; route: string }>> = Object.fromEntries(
  SERVICE_OPERATION_IDS.map((id) => [id, { method: OPERATION_FACTS[id].method, route: OPERATION_FACTS[id].path }]),
) as Record<ServiceOperationId, { method: string; route: string }>;

/** The shortest polling interval the interface document asks for (ms). */
const MIN_POLL_INTERVAL_MS = 2000;
/**
 * How much shorter than MIN_POLL_INTERVAL_MS a gap between polls may be before it is held against
 * the client (ms): timers fire late and early by a few milliseconds, and a request can reach the
 * simulator sooner than the one before it did, so a `setInterval(2000)` poller is seen 1.996 s
 * apart. A twentieth of the interval: 1.9 s passes, 1.5 s does not.
 */
const POLL_TIMER_TOLERANCE_MS = 100;
/** The client's waits grow when one of them is more than this many times the mean of the waits before it. */
export const BACKOFF_GROWTH = 1.25;
/** How many of the client's own waits a run of retries needs before its backoff is judged. */
export const MIN_JUDGED_WAITS = 4;

const NOT_RETRYABLE = new Set([400, 401, 402, 422]);

const isRetryableFailure = (status: number | null): boolean => status !== null && (status === 429 || status >= 500);
/** Whether the client got no answer it could read: it had gone, or a network fault reset, closed, held or cut it (a gateway's page is an answer: its kind is `readable`). */
const noAnswer = (r: ReportedRequest): boolean => r.undelivered || (r.network !== undefined && !NETWORK[r.network.kind].readable);
/** Whether a network fault kept the service's answer from the client (any kind that does not deliver it whole: all but `slow`). */
const lostAnswer = (r: ReportedRequest): boolean => r.network !== undefined && NETWORK[r.network.kind].delivers !== 'whole';
/** The pipeline's own status sets, asked with a status as the journal records it (a string). */
const isResolved = (status: string): boolean => (RESOLVED_STATUSES as ReadonlySet<string>).has(status);
const isCancelable = (status: string): boolean => (CANCELABLE_STATUSES as ReadonlySet<string>).has(status);

/** What the judging shares: the records, the time the rules read, the tallies and the facts the messages quote. */
interface Judging {
  readonly records: readonly ReportedRequest[];
  readonly timeOf: (r: ReportedRequest) => number;
  readonly tallies: Tallies;
  readonly facts: Omit<MessageFacts, 'flatWaits'>;
}

/** A request and the attempt it repeats (undefined when it repeats none), as each per-request rule sees them. */
interface Repeat {
  readonly request: ReportedRequest;
  readonly before: ReportedRequest | undefined;
  /** Whether the client got the answer to the attempt it repeats. */
  readonly answered: boolean;
  /** What openapi.yaml declares of the request's operation (a create, the polled retrieve, the cancel); undefined for an unknown route. */
  readonly operation: OperationFacts | undefined;
}

/**
 * The report of one account from its journal records, oldest first. `clock` is the simulator's
 * clock mode: it says which time the timing rules read (see the words above).
 */
export function clientReport(account: string, records: readonly ReportedRequest[], clock: ClockMode = 'manual'): ClientReport {
  const judging: Judging = {
    records,
    timeOf: clock === 'realtime' ? (r) => r.hostMs : (r) => r.atMs,
    tallies: new Tallies(),
    facts: { notRetryableStatuses: new Set<number>(), shortestWait: Infinity, waitAskedFor: 0, fastestPoll: Infinity, duplicate: undefined },
  };
  const previous = previousAttempts(records);
  judgeEachRequest(judging, previous);
  const flatWaits = judgeBackoff(judging, retryChains(records, previous));
  if (records.length === 0) judging.tallies.note('no_requests');
  return {
    account,
    requests: records.length,
    coverage: coverageOf(records),
    findings: judging.tallies.findings({ ...judging.facts, flatWaits: flatWaits ?? { own: [], dictated: false, growth: BACKOFF_GROWTH } }),
  };
}

/** For each request, the index of the attempt it repeats (the previous same request), or -1. */
function previousAttempts(records: readonly ReportedRequest[]): number[] {
  const lastOf = new Map<string, number>();
  return records.map((r, i) => {
    const identity = identityOf(r);
    const before = lastOf.get(identity);
    lastOf.set(identity, i);
    return before ?? -1;
  });
}

/** Retry chains: each request that repeats a delivered 429 or 5xx joins its attempt's chain (indexes, in order). */
function retryChains(records: readonly ReportedRequest[], previous: readonly number[]): number[][] {
  const chainOf = new Map<number, number[]>();
  const chains: number[][] = [];
  previous.forEach((p, i) => {
    const before = p >= 0 ? records[p] : undefined;
    if (before === undefined || noAnswer(before) || !isRetryableFailure(before.status)) return;
    let chain = chainOf.get(p);
    if (!chain) {
      chain = [p];
      chains.push(chain);
    }
    chain.push(i);
    chainOf.set(i, chain);
  });
  return chains;
}

/** Every rule judged request by request, in order: what the client had seen so far is carried along. */
function judgeEachRequest(judging: Judging, previous: readonly number[]): void {
  // Generations the client has seen resolved, and seen past the point of cancelation.
  const seenResolved = new Set<string>();
  const seenNotCancelable = new Set<string>();
  judging.records.forEach((request, i) => {
    const p = previous[i] as number;
    const before = p >= 0 ? judging.records[p] : undefined;
    const operation = factsOf(request.operation);
    const repeat: Repeat = { request, before, answered: before !== undefined && !noAnswer(before), operation };
    judgeRetryOfRefused(judging, repeat);
    judgeRetryAfterRateLimit(judging, repeat);
    judgeCreateRetryKey(judging, repeat);
    judgeDuplicateCreate(judging, repeat);
    if (operation?.polled === true) judgePoll(judging, repeat, seenResolved);
    if (operation?.cancels === true) {
      const id = videoIdInPath(request.path);
      if (id !== undefined && seenNotCancelable.has(id)) judging.tallies.note('cancel_not_cancelable', request.request_id);
    }
    // What this answer showed the client, for the requests after it.
    if (!noAnswer(request) && request.status === 200 && request.videoId !== undefined && request.videoStatus !== undefined) {
      if (isResolved(request.videoStatus)) seenResolved.add(request.videoId);
      if (!isCancelable(request.videoStatus)) seenNotCancelable.add(request.videoId);
    }
  });
}

/** `retry_not_retryable`: a repeat of a request answered 400, 401, 402 or 422, unless it only changed a refused Idempotency-Key. */
function judgeRetryOfRefused({ tallies, facts }: Judging, { request, before, answered }: Repeat): void {
  if (!before || !answered || before.status === null || !NOT_RETRYABLE.has(before.status)) return;
  const newKeyForKeyError = before.errorParam === 'Idempotency-Key' && request.idempotencyKey !== before.idempotencyKey;
  if (newKeyForKeyError) return;
  tallies.note('retry_not_retryable', request.request_id);
  facts.notRetryableStatuses.add(before.status);
}

/** `retry_too_soon`: a repeat of a 429 sooner than its Retry-After. */
function judgeRetryAfterRateLimit({ tallies, facts, timeOf }: Judging, { request, before, answered }: Repeat): void {
  if (!before || !answered || before.status !== 429 || before.retryAfter === undefined) return;
  const waited = timeOf(request) - timeOf(before);
  if (waited >= before.retryAfter * 1000) return;
  tallies.note('retry_too_soon', request.request_id);
  if (waited < facts.shortestWait) {
    facts.shortestWait = waited;
    facts.waitAskedFor = before.retryAfter;
  }
}

/** `post_retry_without_idempotency_key`: a create repeated after a 429, a 5xx or no answer without one key on both attempts. */
function judgeCreateRetryKey({ tallies }: Judging, { request, before, operation }: Repeat): void {
  if (!before || operation?.creates == null) return;
  if (!noAnswer(before) && !isRetryableFailure(before.status)) return;
  if (!sameKey(request, before)) tallies.note('post_retry_without_idempotency_key', request.request_id);
}

/** `duplicate_after_lost_answer`: a create whose answer was lost after it took effect, carried out again by a repeat without its key. */
function judgeDuplicateCreate({ tallies, facts }: Judging, { request, before, operation }: Repeat): void {
  if (!before || operation?.creates == null || !lostAnswer(before)) return;
  if (before.createdId === undefined || request.createdId === undefined || request.createdId === before.createdId || sameKey(request, before)) return;
  tallies.note('duplicate_after_lost_answer', request.request_id);
  facts.duplicate ??= { lost: before.createdId, again: request.createdId };
}

/** Whether two attempts carry one and the same Idempotency-Key. */
function sameKey(a: ReportedRequest, b: ReportedRequest): boolean {
  return a.idempotencyKey !== undefined && a.idempotencyKey === b.idempotencyKey;
}

/** `poll_too_fast` and `poll_after_resolved`, for a retrieve. */
function judgePoll({ tallies, facts, timeOf }: Judging, { request, before, answered }: Repeat, seenResolved: ReadonlySet<string>): void {
  const unresolvedBefore = before !== undefined && answered && before.status === 200 && before.videoStatus !== undefined && !isResolved(before.videoStatus);
  if (unresolvedBefore) {
    const gap = timeOf(request) - timeOf(before);
    if (gap < MIN_POLL_INTERVAL_MS - POLL_TIMER_TOLERANCE_MS) {
      tallies.note('poll_too_fast', request.request_id);
      facts.fastestPoll = Math.min(facts.fastestPoll, gap);
    }
  }
  const id = videoIdInPath(request.path);
  if (id !== undefined && seenResolved.has(id)) tallies.note('poll_after_resolved', request.request_id);
}

/**
 * `retry_without_backoff`, once per chain of attempts whose waits do not grow; gives the waits of
 * the first such chain, for the message.
 */
function judgeBackoff({ records, timeOf, tallies }: Judging, chains: readonly number[][]): FlatWaits | undefined {
  let first: FlatWaits | undefined;
  for (const chain of chains) {
    if (chain.length <= MIN_JUDGED_WAITS) continue;
    const attempts = chain.map((i) => records[i] as ReportedRequest);
    const flat = backoffOf(attempts, timeOf);
    if (flat === undefined) continue;
    tallies.note('retry_without_backoff', (attempts[0] as ReportedRequest).request_id);
    first ??= flat;
  }
  return first;
}

/**
 * Whether the waits between a request's attempts fail to grow over the run: undefined when the
 * client backed off (or there was too little to judge), else the client's own waits (ms).
 *
 * The client's own waits are those Retry-After did not dictate: a wait after a 429 that lasted at
 * least its Retry-After is the service's, neither judged nor counted. The trend is judged on the
 * running sum of the own waits, not pair by pair (a jittered backoff's wait is often shorter than
 * the one before it): the client backs off when a wait is more than BACKOFF_GROWTH times the mean
 * of the waits before it. With fewer than MIN_JUDGED_WAITS own waits, nothing is held against it.
 */
function backoffOf(attempts: ReportedRequest[], timeOf: (r: ReportedRequest) => number): FlatWaits | undefined {
  const own: number[] = [];
  let dictated = false;
  let grew = false;
  let sum = 0;
  for (let k = 1; k < attempts.length; k++) {
    const failed = attempts[k - 1] as ReportedRequest;
    const wait = timeOf(attempts[k] as ReportedRequest) - timeOf(failed);
    if (failed.status === 429 && failed.retryAfter !== undefined && wait >= failed.retryAfter * 1000) {
      dictated = true;
      continue;
    }
    if (own.length > 0 && wait > (BACKOFF_GROWTH * sum) / own.length) grew = true;
    own.push(wait);
    sum += wait;
  }
  return grew || own.length < MIN_JUDGED_WAITS ? undefined : { own, dictated, growth: BACKOFF_GROWTH };
}

/** What makes two requests the same request: method, path with query, and the body (by its fingerprint). */
function identityOf(r: ReportedRequest): string {
  return `${r.method} ${r.path}\n${r.bodyFingerprint ?? ''}`;
}

/** The id in `/v1/videos/{id}` (percent-decoded), undefined for another path. */
function videoIdInPath(pathWithQuery: string): string | undefined {
  const path = pathWithQuery.split('?', 1)[0] as string;
  if (!path.startsWith('/v1/videos/')) return undefined;
  const segment = path.slice('/v1/videos/'.length);
  if (segment === '' || segment.includes('/')) return undefined;
  try {
    return decodeURIComponent(segment);
  } catch {
    return undefined;
  }
}

function coverageOf(records: readonly ReportedRequest[]): ClientReport['coverage'] {
  const endpoints: Record<string, number> = {};
  for (const { method, route } of Object.values(SERVICE_ENDPOINTS)) endpoints[`${method} ${route}`] = 0;
  const statuses: Record<string, number> = {};
  let triggers: Record<string, number> | undefined;
  for (const r of records) {
    const key = `${r.method} ${routeOf(r)}`;
    endpoints[key] = (endpoints[key] ?? 0) + 1;
    const status = r.status === null ? 'none' : String(r.status);
    statuses[status] = (statuses[status] ?? 0) + 1;
    for (const directive of r.trigger ?? []) {
      triggers ??= {};
      triggers[directive] = (triggers[directive] ?? 0) + 1;
    }
  }
  return triggers === undefined ? { endpoints, statuses } : { endpoints, statuses, triggers };
}

/** The route a request addressed: its endpoint's, else its path (a video id shown as `{id}`). */
function routeOf(r: ReportedRequest): string {
  const known = factsOf(r.operation);
  if (known?.surface === 'service') return known.path;
  const path = r.path.split('?', 1)[0] as string;
  return videoIdInPath(path) === undefined ? path : '/v1/videos/{id}';
}
