/**
 * One request as the request path handles it (`RequestContext`): what the checks found, for the
 * checks after them, the operation and the journal; with the shapes the checks and last steps of
 * a surface share (handleRequest.ts puts them in order).
 */
import type { Account } from '../core/accounts/account.js';
import { SimError, fail } from '../core/errors.js';
import type { ForcedOutcome } from '../core/generations/fate.js';
import type { KeyedRequest } from '../core/requests/idempotency.js';
import type { HandledRequest, PendingFingerprint } from '../core/journal/journal.js';
import { NO_KEPT_BODY, keptBody, type KeptBody } from '../core/journal/keptBody.js';
import type { NetworkFault } from '../core/faults/network.js';
import type { Simulator } from '../core/simulator/simulator.js';
import { OPERATION_FACTS, type OperationFacts } from '../generated/operations.js';
import { JSON_TYPE } from '../jsonType.js';
import { digest, journalFingerprint, readJsonBody } from './body.js';
import type { ApiAnswer, ApiRequest, Exchange, StreamedBody } from './exchange.js';
import type { AppParts, HeldWaitAnswer, OperationInput } from './operations.js';
import { takesBody } from './requestCheck.js';
import { matchRoute, type Operation } from './router.js';

/** What the request path needs beside the request: the simulator and the parts of the app around it (one per app, restore or replay). */
export interface RequestPathDeps {
  sim: Simulator;
  app: AppParts;
  /** Where the simulator's own bugs are reported. */
  log: (line: string) => void;
  /** Answers that failed validation against openapi.yaml (each became a 500). */
  responseFailures: { method: string; path: string; status: number; message: string }[];
  /** Sees every /v1 request and every state-changing control request, once answered. */
  onExchange?: (exchange: Exchange) => void;
  /**
   * What becomes of a network fault on its way to the socket. The HTTP adapter's: a `hang` takes
   * a place among the held connections, or is a `close` past the scenario's bound
   * (`Simulator.onSocket`). A replay's and a restore's hold no connections: a hang is closed as
   * its recording shows (`replayedOnSocket`). Default: as drawn.
   */
  onSocket?: (fault: NetworkFault) => NetworkFault;
}

/** An answer before it is checked and serialised: a JSON value, text already serialised, or a stream; or a wait to hold. */
export type Draft =
  | ({ status: number; headers: Record<string, string>; contentType: string } & ({ value: unknown } | { text: string } | { stream: StreamedBody }))
  | { held: HeldWaitAnswer }
  | typeof NO_ANSWER;

/** An answer that is one (not a wait held, nor none). */
export type Answered = Exclude<Draft, typeof NO_ANSWER | { held: HeldWaitAnswer }>;

/** The request never reached the service (a network fault in its `before` phase): there is no answer. */
export const NO_ANSWER = { noAnswer: true } as const;

/** A check: an early answer, or undefined to go on. */
type Check = (ctx: RequestContext) => Draft | undefined;
/** A step after the answer was checked; `value` is its JSON value when it was built from one. */
type After = (ctx: RequestContext, sent: ApiAnswer, value: unknown) => void;

/** One surface of the JSON API: its checks in order, how it reads a body, and its last steps in order. */
export interface Surface {
  readonly checks: readonly Check[];
  /**
   * How a body is read (see `readJsonBody`) by an operation that takes one, or on a route the
   * surface does not have: what an empty body without a content type reads as; null: the method
   * takes no body. (An operation without a request body reads none for GET and HEAD, else `none`.)
   */
  readonly emptyBody: (method: string) => 'object' | 'none' | 'error' | null;
  readonly after: readonly After[];
}

/** One request as it is handled: what the checks found, for the next checks, the operation and the journal. */
export class RequestContext implements OperationInput, HandledRequest {
  readonly sim: Simulator;
  readonly app: AppParts;
  readonly method: string;
  /** The path with its query string. */
  readonly target: string;
  readonly operation: Operation | undefined;
  readonly operationId: string | null;
  /** What the simulator reads of the operation beside its contract (`x-sim-operation`); undefined on an unknown route. */
  readonly facts: OperationFacts | undefined;
  /** The path parameters, percent-decoded. */
  readonly params: Record<string, string>;
  /** Whether a path parameter's percent-encoding is malformed (no resource can have that id). */
  readonly malformedId: boolean;
  readonly idempotencyKey: string | undefined;
  /** The answer's headers so far. */
  readonly headers: Record<string, string> = {};
  account: Account | null = null;
  /** The account's time (ms), or the global time without one. */
  atMs: number;
  delayMs = 0;
  note: string | undefined = undefined;
  forcedOutcome: ForcedOutcome | null = null;
  /** The prompt triggers the create took, as written. */
  trigger: readonly string[] | undefined = undefined;
  /** The network fault that loses the answer, if one was drawn. */
  network: NetworkFault | null = null;
  keyed: KeyedRequest | undefined = undefined;
  /** Whether the answer is one stored under the request's Idempotency-Key, replayed as its text. */
  replayed = false;
  /** The query and the body, once checked. */
  query: Record<string, unknown> = NO_FIELDS;
  body: Record<string, unknown> = NO_FIELDS;
  performed = false;
  /** A control request that names an account in its query: its request id is that account's. */
  namesAccount = false;
  private read: { value: Record<string, unknown> | undefined; error: SimError | undefined } | undefined = undefined;

  constructor(
    readonly deps: RequestPathDeps,
    readonly request: ApiRequest,
    /** The surface its path is on: the service's (`/v1`) or the control API's. */
    readonly surface: Surface,
  ) {
    this.sim = deps.sim;
    this.app = deps.app;
    this.method = request.method;
    this.target = request.query === '' ? request.path : `${request.path}?${request.query}`;
    const route = matchRoute(request.method, request.path);
    this.operation = route?.operation;
    this.operationId = route?.operation.operationId ?? null;
    this.facts = route && OPERATION_FACTS[route.operation.operationId];
    this.params = route?.params ?? NO_FIELDS;
    this.malformedId = route?.params === null;
    this.idempotencyKey = request.headers['idempotency-key'];
    this.atMs = this.sim.clock.now();
  }

  /** The body, read once (the idempotency check fingerprints it before its own check reports it). */
  readBody(): { value: Record<string, unknown> | undefined; error: SimError | undefined } {
    if (this.read === undefined) {
      const emptyAs = this.operation === undefined || takesBody(this.operation) ? this.surface.emptyBody(this.method) : bodyless(this.method);
      const read = emptyAs === null ? { value: undefined } : readJsonBody(this.request.body, this.request.headers, emptyAs);
      this.read = 'error' in read ? { value: undefined, error: read.error } : { value: read.value, error: undefined };
    }
    return this.read;
  }

  /** The body's fingerprint for the journal (or how to make it), from the value already read when there is one. */
  bodyFingerprint(): string | null | PendingFingerprint {
    return journalFingerprint(this.request.body, this.read?.value);
  }

  /** What the journal keeps of the body's fields: read (once) if no check has read it yet. */
  keptBody(): KeptBody {
    const { value } = this.readBody();
    const raw = this.request.body;
    return value === undefined ? NO_KEPT_BODY : keptBody(value, raw === null || raw === 'too_large' ? 0 : raw.length, digest);
  }

  /** A catalogue error as the answer. */
  refuse(e: SimError): Answered {
    // The error's own headers (a Retry-After) join the answer's, after them.
    for (const name in e.headers) this.headers[name] = e.headers[name] as string;
    return { status: e.status, headers: this.headers, contentType: JSON_TYPE, value: e.toBody() };
  }

  /** What an operation threw as the answer: a catalogue error, or the simulator's bug (logged, 500). */
  failure(e: unknown): Answered {
    if (e instanceof SimError) return this.refuse(e);
    this.deps.log(`internal error on ${this.method} ${this.target}: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
    return { status: 500, headers: this.headers, contentType: JSON_TYPE, value: fail('internal_error').toBody() };
  }

  exchange(sent: ApiAnswer): Exchange {
    const { request } = this;
    return {
      nowMs: this.sim.instantStart(),
      atMs: this.account ? this.atMs : null,
      method: request.method,
      path: this.target,
      headers: request.headers,
      body: request.body,
      mediaHost: request.mediaHost,
      answer: sent,
    };
  }
}

const NO_FIELDS: Record<string, never> = Object.freeze({}) as Record<string, never>;

/**
 * How an operation without a request body reads one: a GET's or HEAD's is not read; any other
 * method's (a cancel, `DELETE /_sim/faults`, `POST /_sim/shutdown`) is none when it is empty or
 * `{}`, whatever its Content-Type, and its fields are refused as unknown parameters otherwise.
 */
function bodyless(method: string): 'none' | null {
  return method === 'GET' || method === 'HEAD' ? null : 'none';
}
