/**
 * The control API as methods: each method is one documented control request (`/_sim/...`),
 * described here once as plain data, and sent by a transport: over HTTP by `SimulatorControl`
 * (asynchronous), or in-process by the handle of `createSimulator` (synchronous, through the same
 * request path as HTTP, so both answer alike and both are recorded in transcripts alike).
 *
 * Every type comes from openapi.yaml (generated at build time), so the methods answer exactly what
 * the endpoints are documented to answer.
 */
import type { ErrorCode, VideoStatus } from '../api-types.js';
import type { components } from '../generated/openapi-types.js';
import { CONTROL_OPERATION_IDS, OPERATION_FACTS, type ControlOperationId } from '../generated/operations.js';
import { VerificationError, type JournalEntry } from './verificationError.js';

type Schemas = components['schemas'];

/** `GET /_sim/health`, and the answer of a reset. */
export type SimHealth = Schemas['SimHealth'];
/** A clock: `{ mode, now, speed }`. */
export type SimClock = Schemas['SimClock'];
/** A generation as the control API shows it: the video object plus `account` and `stages`. */
export type SimGeneration = Schemas['SimGeneration'];
/** A page of `GET /_sim/generations`, with the `cursor` for `changedSince`. */
export type SimGenerationList = Schemas['SimGenerationList'];
/** The body of `POST /_sim/faults`. */
export type SimFaultRequest = Schemas['SimFaultRequest'];
/** `{ queued }`: the shots waiting, in all. */
export type SimFaultQueued = Schemas['SimFaultQueued'];
/** `GET /_sim/faults`. */
export type SimFaultList = Schemas['SimFaultList'];
/** `GET /_sim/report?api_key=`. */
export type SimClientReport = Schemas['SimClientReport'];
/** An entry of the request journal (`GET /_sim/requests`, and what verifications and waits answer). */
export type SimJournalEntry = JournalEntry;
/**
 * A request pattern (`POST /_sim/verify`, `POST /_sim/requests/wait`): every field optional; a
 * request matches when it matches every field given.
 */
export type RequestPattern = Schemas['SimRequestPattern'];
/** How many matching requests a verification expects: one of `exactly`, `at_least`, `at_most` (`{ at_most: 0 }`: never). */
export type VerifyTimes = { exactly: number } | { at_least: number } | { at_most: number };
/** The answer of `POST /_sim/verify`. */
export type SimVerification = Omit<Schemas['SimVerification'], 'closest'> & { closest: JournalEntry[] };
/** The answer of `POST /_sim/requests/wait`. */
export type SimWaitAnswer = Omit<Schemas['SimWaitAnswer'], 'matched' | 'closest'> & { matched: JournalEntry[]; closest?: JournalEntry[] };

export interface WaitOptions {
  /** How many matching requests to wait for. Default 1. */
  count?: number;
  /** How long to wait, in milliseconds of the host's clock (at most 30,000). Default 5,000. */
  timeoutMs?: number;
  /** Only requests after the entry of this `seq` (an entry's `seq`). Default: any the journal holds. */
  after?: number;
}

/** How many entries `requests(pattern)` answers at most (the most a wait's `count` takes). */
const MAX_REQUESTS_LISTED = 10000;
/** The default of `WaitOptions.timeoutMs` (openapi.yaml's `timeout_ms`). */
const DEFAULT_WAIT_MS = 5000;

export interface ResetOptions {
  /** Switch to this scenario (a bundled name, or one the simulator accepts). */
  scenario?: string;
  seed?: number;
  /** Reset only this account, as if it had never been used. */
  apiKey?: string;
}

export interface GenerationListOptions {
  /** Only this account's generations. */
  apiKey?: string;
  status?: VideoStatus;
  /** 1-1000, default 20. */
  limit?: number;
  /** Only those created after this generation id. */
  after?: string;
  /** A `cursor` of an earlier answer: only what changed since. */
  changedSince?: number;
}

/** `T` for the in-process handle (`Async` false), `Promise<T>` over HTTP; either, for code that awaits. */
type Answer<T, Async extends boolean> = Async extends true ? Promise<T> : T;

/**
 * The control methods. `ControlMethods<true>` is `SimulatorControl` (HTTP, every method returns a
 * promise), `ControlMethods<false>` the in-process handle (every method returns at once);
 * `SimulatorControlApi` is either: a test suite that awaits every call runs against both.
 * A refused call throws a `SimulatorControlError` carrying the status and the error body.
 */
export interface ControlMethods<Async extends boolean> {
  /** `GET /_sim/health`. */
  health(): Answer<SimHealth, Async>;
  readonly clock: {
    /** `GET /_sim/clock[?api_key=]`: the global clock, or an account's. */
    get(apiKey?: string): Answer<SimClock, Async>;
    /** `POST /_sim/clock/advance`: moves time forward (one account's, with `apiKey`), applying due transitions. */
    advance(seconds: number, apiKey?: string): Answer<SimClock, Async>;
    /**
     * `POST /_sim/clock/advance {"to"}`: moves time (one account's, with `apiKey`) forward to that
     * instant, or leaves it where it is when it is already there or past it: safe to send twice.
     */
    advanceTo(instant: string | Date, apiKey?: string): Answer<SimClock, Async>;
  };
  /** `POST /_sim/reset`: drops all state (or one account's, with `apiKey`). */
  reset(options?: ResetOptions): Answer<SimHealth, Async>;
  readonly faults: {
    /** `POST /_sim/faults` with this body. */
    queue(fault: SimFaultRequest): Answer<SimFaultQueued, Async>;
    /** `GET /_sim/faults`. */
    list(): Answer<SimFaultList, Async>;
    /** `DELETE /_sim/faults[?api_key=]`. */
    clear(apiKey?: string): Answer<SimFaultQueued, Async>;
  };
  readonly generations: {
    /** `GET /_sim/generations`. */
    list(options?: GenerationListOptions): Answer<SimGenerationList, Async>;
    /**
     * `GET /_sim/generations/{id}[?api_key=]`. Each call on one generation takes its account's key
     * too (`apiKey`), which a proxy in front of shards routes by; another account's is not found (404).
     */
    get(id: string, apiKey?: string): Answer<SimGeneration, Async>;
    /** `POST /_sim/generations/{id}/advance`: its current stage ends now. */
    advance(id: string, apiKey?: string): Answer<SimGeneration, Async>;
    /** `POST /_sim/generations/{id}/finish`: it runs to its drawn end now. */
    finish(id: string, apiKey?: string): Answer<SimGeneration, Async>;
    /** `POST /_sim/generations/{id}/fail`: it fails now at its stage (with `code`, one of the stage's). */
    fail(id: string, code?: ErrorCode, apiKey?: string): Answer<SimGeneration, Async>;
    /** `POST /_sim/generations/{id}/cancel`. */
    cancel(id: string, apiKey?: string): Answer<SimGeneration, Async>;
  };
  /** `GET /_sim/report?api_key=`: the client report of that key. */
  report(apiKey: string): Answer<SimClientReport, Async>;
  /** `GET /_sim/transcript`: the transcript recorded so far (NDJSON); a 404 error when recording is off. */
  transcript(): Answer<string, Async>;
  /**
   * `POST /_sim/verify {request, times}`: that the journal holds `times` requests matching
   * `pattern` (default at least 1; `{ at_most: 0 }`: none). Answers the verification, or rejects
   * (throws, in-process) with a `VerificationError`: the sentence and the closest entries.
   */
  verify(pattern: RequestPattern, times?: VerifyTimes): Answer<SimVerification, Async>;
  /** `POST /_sim/verify {sequence}`: requests matching each pattern in turn, in this order (others allowed between); else a `VerificationError`. */
  verifySequence(patterns: RequestPattern[]): Answer<SimVerification, Async>;
  /**
   * `POST /_sim/requests/wait`: resolves with the matching entries once `count` requests matching
   * `pattern` are in the journal (after `after`), or rejects with a `VerificationError` when
   * `timeoutMs` (host time) runs out first. A promise in-process too.
   */
  waitForRequest(pattern: RequestPattern, options?: WaitOptions): Promise<SimJournalEntry[]>;
  /** The journal's entries matching `pattern` (every entry without one), oldest first, at most `MAX_REQUESTS_LISTED`. */
  requests(pattern?: RequestPattern): Answer<SimJournalEntry[], Async>;
}

/** The control methods of either kind: await every call. */
export type SimulatorControlApi = ControlMethods<boolean>;

/** Where the control API is: every control path begins with it. */
export const CONTROL_ROOT = '/_sim';

/** Where a proxy in front of shards reaches one shard alone, `{i}` standing for its index: the prefix it strips before passing a request on. */
export const SHARD_PREFIX = '/shards/{i}';

/** Shard `i`'s prefix behind the proxy: `/shards/1`. */
export function shardPrefix(i: number): string {
  return SHARD_PREFIX.replace('{i}', String(i));
}

/** Whether a path (without its query) is the control API's or the dashboard's: `/_sim` and everything under it, not `/_simx`. */
export function isControlPath(path: string): boolean {
  return path.startsWith(CONTROL_ROOT) && (path.length === CONTROL_ROOT.length || path[CONTROL_ROOT.length] === '/');
}

/** A control endpoint: its method and its path below `CONTROL_ROOT` (`{id}`: a generation's id). */
export interface ControlEndpoint {
  readonly method: 'GET' | 'POST' | 'DELETE';
  readonly path: string;
}

/**
 * Every control endpoint, by its `operationId` in openapi.yaml: its method and its path below
 * `CONTROL_ROOT`, as the build reads them from openapi.yaml (`OPERATION_FACTS`,
 * src/generated/operations.ts). The one place a client takes them from: the methods below,
 * `sim report`, `sim replay --target`, the fan-out over shards and the dashboard (which
 * `src/http/dashboard.ts` serves them to).
 */
export const CONTROL_ENDPOINTS = Object.fromEntries(
  CONTROL_OPERATION_IDS.map((id) => [id, { method: OPERATION_FACTS[id].method, path: OPERATION_FACTS[id].path.slice(CONTROL_ROOT.length + 1) }]),
) as { readonly [K in ControlOperationId]: ControlEndpoint };

/** A control endpoint's name: its `operationId`. */
export type ControlOperation = ControlOperationId;

/** The path of a control endpoint, the generation's `id` percent-encoded into it: `/_sim/generations/vid_1/advance`. */
export function controlPath(operation: ControlOperation, id?: string): string {
  const { path } = CONTROL_ENDPOINTS[operation];
  if (!path.includes('{id}')) return `${CONTROL_ROOT}/${path}`;
  if (id === undefined) throw new TypeError(`${operation} names a generation: give its id.`);
  return `${CONTROL_ROOT}/${path.replace('{id}', encodeURIComponent(id))}`;
}

/**
 * One control request, as a transport sends it. A call for one account names it in the query
 * (`?api_key=`), never only in the body: a proxy in front of shards routes it by that key.
 */
export interface ControlCall {
  /** The endpoint: its method and path are `CONTROL_ENDPOINTS[operation]`'s. */
  operation: ControlOperation;
  method: 'GET' | 'POST' | 'DELETE';
  /** The path, ids percent-encoded. */
  path: string;
  /** Query parameters; undefined ones are left out. */
  query?: Record<string, string | number | undefined>;
  /** A JSON body (POST). */
  body?: Record<string, unknown>;
  /** The answer is text (the transcript), not JSON. */
  text?: boolean;
  /** Aborts the call (a transport that can: over HTTP, the request). */
  signal?: AbortSignal;
}

/** What a call adds to its endpoint: the generation's id, the query, the body. */
export type ControlCallParts = Omit<ControlCall, 'operation' | 'method' | 'path'> & { id?: string };

/** The call of a control endpoint, with the generation's id, the query and the body given. */
export function controlCall(operation: ControlOperation, { id, ...parts }: ControlCallParts = {}): ControlCall {
  return { operation, method: CONTROL_ENDPOINTS[operation].method, path: controlPath(operation, id), ...parts };
}

/** The control methods over a transport that sends a call and answers its value (or throws). */
export function controlMethods<Async extends boolean>(send: (call: ControlCall) => unknown): ControlMethods<Async> {
  const call = <T>(operation: ControlOperation, parts?: ControlCallParts) => send(controlCall(operation, parts)) as Answer<T, Async>;
  return {
    health: () => call('simHealth'),
    clock: {
      get: (apiKey) => call('simClock', { query: { api_key: apiKey } }),
      advance: (seconds, apiKey) => call('simAdvanceClock', { query: { api_key: apiKey }, body: { seconds } }),
      advanceTo: (instant, apiKey) =>
        call('simAdvanceClock', { query: { api_key: apiKey }, body: { to: instant instanceof Date ? instant.toISOString() : instant } }),
    },
    reset: (options = {}) =>
      call('simReset', {
        query: { api_key: options.apiKey },
        body: definedOnly({ scenario: options.scenario, seed: options.seed }),
      }),
    faults: {
      queue: ({ api_key, ...fault }) => call('simQueueFault', { query: { api_key: api_key ?? undefined }, body: fault }),
      list: () => call('simListFaults'),
      clear: (apiKey) => call('simClearFaults', { query: { api_key: apiKey } }),
    },
    generations: {
      list: (o = {}) =>
        call('simGenerations', {
          query: { api_key: o.apiKey, status: o.status, limit: o.limit, after: o.after, changed_since: o.changedSince },
        }),
      // The account goes in the query string, where a proxy in front of shards can route by it.
      get: (id, apiKey) => call('simGeneration', { id, query: { api_key: apiKey } }),
      advance: (id, apiKey) => call('simAdvanceGeneration', { id, query: { api_key: apiKey } }),
      finish: (id, apiKey) => call('simFinishGeneration', { id, query: { api_key: apiKey } }),
      fail: (id, code, apiKey) => call('simFailGeneration', { id, query: { api_key: apiKey }, body: code === undefined ? {} : { code } }),
      cancel: (id, apiKey) => call('simCancelGeneration', { id, query: { api_key: apiKey } }),
    },
    report: (apiKey) => call('simReport', { query: { api_key: apiKey } }),
    transcript: () => call('simTranscript', { text: true }),
    verify: (pattern, times) =>
      then(call<SimVerification>('simVerify', { body: definedOnly({ request: pattern, times }) }), verified) as Answer<SimVerification, Async>,
    verifySequence: (patterns) => then(call<SimVerification>('simVerify', { body: { sequence: patterns } }), verified) as Answer<SimVerification, Async>,
    waitForRequest: async (pattern, options = {}) => {
      const timeoutMs = options.timeoutMs ?? DEFAULT_WAIT_MS;
      const count = options.count ?? 1;
      const answer = await call<SimWaitAnswer>('simWaitRequests', {
        body: definedOnly({ request: pattern, count: options.count, after: options.after, timeout_ms: timeoutMs }),
      });
      if (!answer.timed_out) return answer.matched;
      throw new VerificationError(waitTimedOut(pattern, count, timeoutMs, options.after, answer.matched.length), {
        closest: answer.closest,
        matched: answer.matched,
      });
    },
    requests: (pattern) =>
      then(
        call<SimWaitAnswer>('simWaitRequests', { body: { request: pattern ?? {}, count: MAX_REQUESTS_LISTED, timeout_ms: 0 } }),
        (answer) => answer.matched,
      ) as Answer<SimJournalEntry[], Async>,
  };
}

/** A verification's answer, or the `VerificationError` it says. */
function verified(answer: SimVerification): SimVerification {
  if (answer.verified) return answer;
  throw new VerificationError(answer.message ?? 'Not verified.', { closest: answer.closest, dropped: answer.dropped, count: answer.count });
}

/** The sentence of a wait that timed out. */
function waitTimedOut(pattern: RequestPattern, count: number, timeoutMs: number, after: number | undefined, matched: number): string {
  const requests = count === 1 ? 'request' : 'requests';
  return `Timed out after ${timeoutMs} ms waiting for ${count} ${requests} matching ${JSON.stringify(pattern)}${after ? ` after #${after}` : ''}; ${matched} matched.`;
}

/** `fn` of a value, or of what a promise resolves to: a transport answers either. */
function then<T, U>(value: T | Promise<T>, fn: (value: T) => U): U | Promise<U> {
  return value instanceof Promise ? value.then(fn) : fn(value);
}

/** The query string of a call (without `?`), undefined parameters left out. */
export function queryString(query: ControlCall['query']): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query ?? {})) if (value !== undefined) params.set(name, String(value));
  return params.toString();
}

/** The fields of `fields` that are not undefined. */
export function definedOnly<T extends object>(fields: T): T {
  return Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined)) as T;
}
