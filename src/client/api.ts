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
export type Answer<T, Async extends boolean> = Async extends true ? Promise<T> : T;

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
}

/** The control methods of either kind: await every call. */
export type SimulatorControlApi = ControlMethods<boolean>;

/**
 * One control request, as a transport sends it. A call for one account names it in the query
 * (`?api_key=`), never only in the body: a proxy in front of shards routes it by that key.
 */
export interface ControlCall {
  method: 'GET' | 'POST' | 'DELETE';
  /** The path, ids percent-encoded. */
  path: string;
  /** Query parameters; undefined ones are left out. */
  query?: Record<string, string | number | undefined>;
  /** A JSON body (POST). */
  body?: Record<string, unknown>;
  /** The answer is text (the transcript), not JSON. */
  text?: boolean;
}

/** The control methods over a transport that sends a call and answers its value (or throws). */
export function controlMethods<Async extends boolean>(send: (call: ControlCall) => unknown): ControlMethods<Async> {
  const call = <T>(c: ControlCall) => send(c) as Answer<T, Async>;
  const generation = (id: string, action?: string) => `/_sim/generations/${encodeURIComponent(id)}${action ? `/${action}` : ''}`;
  return {
    health: () => call({ method: 'GET', path: '/_sim/health' }),
    clock: {
      get: (apiKey) => call({ method: 'GET', path: '/_sim/clock', query: { api_key: apiKey } }),
      advance: (seconds, apiKey) => call({ method: 'POST', path: '/_sim/clock/advance', query: { api_key: apiKey }, body: { seconds } }),
      advanceTo: (instant, apiKey) =>
        call({ method: 'POST', path: '/_sim/clock/advance', query: { api_key: apiKey }, body: { to: instant instanceof Date ? instant.toISOString() : instant } }),
    },
    reset: (options = {}) =>
      call({
        method: 'POST',
        path: '/_sim/reset',
        query: { api_key: options.apiKey },
        body: definedOnly({ scenario: options.scenario, seed: options.seed }),
      }),
    faults: {
      queue: ({ api_key, ...fault }) =>
        call({ method: 'POST', path: '/_sim/faults', query: { api_key: api_key ?? undefined }, body: fault as Record<string, unknown> }),
      list: () => call({ method: 'GET', path: '/_sim/faults' }),
      clear: (apiKey) => call({ method: 'DELETE', path: '/_sim/faults', query: { api_key: apiKey } }),
    },
    generations: {
      list: (o = {}) =>
        call({
          method: 'GET',
          path: '/_sim/generations',
          query: { api_key: o.apiKey, status: o.status, limit: o.limit, after: o.after, changed_since: o.changedSince },
        }),
      // The account goes in the query string, where a proxy in front of shards can route by it.
      get: (id, apiKey) => call({ method: 'GET', path: generation(id), query: { api_key: apiKey } }),
      advance: (id, apiKey) => call({ method: 'POST', path: generation(id, 'advance'), query: { api_key: apiKey } }),
      finish: (id, apiKey) => call({ method: 'POST', path: generation(id, 'finish'), query: { api_key: apiKey } }),
      fail: (id, code, apiKey) => call({ method: 'POST', path: generation(id, 'fail'), query: { api_key: apiKey }, body: code === undefined ? {} : { code } }),
      cancel: (id, apiKey) => call({ method: 'POST', path: generation(id, 'cancel'), query: { api_key: apiKey } }),
    },
    report: (apiKey) => call({ method: 'GET', path: '/_sim/report', query: { api_key: apiKey } }),
    transcript: () => call({ method: 'GET', path: '/_sim/transcript', text: true }),
  };
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
