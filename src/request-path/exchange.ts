/**
 * What passes between the request path and the adapters around it: a request as the HTTP adapter
 * hands it over, the answer it gets back, and the two together as a transcript or a state file
 * records them. Types only, over the core's: every module that records or sends an exchange can
 * use them without importing the request path.
 */
import type { Readable } from 'node:stream';
import type { JournalRecord } from '../core/journal/journal.js';
import type { AnswerLoss } from '../core/faults/network.js';

/** The raw body as the adapter read it: its bytes, none at all, or more than the limit. */
export type RawBody = Buffer | null | 'too_large';

/** A request as the HTTP adapter hands it over. */
export interface ApiRequest {
  method: string;
  /** The path, percent-encoded as received, without the query string. */
  path: string;
  /** The query string as received, without the `?` ('' when none). */
  query: string;
  /** Header names in lower case. */
  headers: Record<string, string | undefined>;
  body: RawBody;
  /**
   * The `Host` the client reached the simulator under, when the addresses written into answers
   * follow it (the simulator was given no base or media URL): media URLs are then written on
   * `http://HOST/cdn`. Undefined: on the simulator's own media address.
   */
  mediaHost?: string;
}

/** A body sent from a stream (a transcript, the state: it may not fit in a string): its length in bytes, and its bytes. */
export interface StreamedBody {
  /** Its length in bytes; undefined when it is made as it is sent (it is then sent chunked). */
  readonly length: number | undefined;
  open(): Readable;
  /** All of it as text, read at once (for the in-process API). */
  text(): string;
}

/** An answer for the HTTP adapter to send. */
export interface ApiAnswer {
  /**
   * The status of the service's answer; 0 when the service gave none (a network fault in its
   * `before` phase: the request never reached it).
   */
  status: number;
  headers: Record<string, string>;
  /** The body as sent: JSON text ('' when `stream` is given). */
  body: string;
  /** A body to send from a stream instead of `body`. */
  stream: StreamedBody | undefined;
  contentType: string;
  /** Injected latency: wall-clock milliseconds to wait before sending. */
  delayMs: number;
  /** Set by `POST /_sim/shutdown`: close the server once this answer is sent. */
  shutdown?: boolean;
  /** A network fault that loses this answer (or, without one, the request): for the adapter to carry out on the socket. */
  network?: AnswerLoss;
  /**
   * The journal's record of this request (`/v1`), for the adapter to mark `undelivered` when the
   * client has gone before the answer could be sent. Not part of what is sent.
   */
  journaled?: JournalRecord;
  /**
   * A wait for requests (`POST /_sim/requests/wait`) that is not answered yet: for the adapter to
   * hold, and to send the answer `finish`, `stopped` or nothing (`cancel`) gives. Nothing else of
   * this answer is sent.
   */
  wait?: HeldWait;
}

/**
 * A wait for requests held by an adapter: it offers each record the journal adds (`offer`: true
 * once enough have matched), then sends `finish(false)`; after `timeoutMs` on the host's clock,
 * `finish(true)`; when the simulator stops, `stopped()` (503); when the client has gone, `cancel()`.
 * Each of the last three gives back the wait's place among `limits.max_waits`, once.
 */
export interface HeldWait {
  readonly timeoutMs: number;
  /** The account the wait's pattern names, if it names one: only its requests (and no other) can answer it. */
  readonly apiKey: string | undefined;
  offer(record: JournalRecord): boolean;
  finish(timedOut: boolean): ApiAnswer;
  stopped(): ApiAnswer;
  cancel(): void;
}

/** One request and its answer, as a transcript records it. */
export interface Exchange {
  /** The global virtual time at which the request was handled (ms), before it moved the clock. */
  nowMs: number;
  /** The account's virtual time then (ms), or null (no account). */
  atMs: number | null;
  method: string;
  /** The path with its query string. */
  path: string;
  headers: ApiRequest['headers'];
  body: RawBody;
  /** The request's `mediaHost`, which a transcript and a state file keep (as its `host` header). */
  mediaHost?: string;
  answer: ApiAnswer;
  /**
   * A control request that changed nothing but took an account's request id (a read with
   * `?api_key=`, or a refused one): a state file keeps it (so that a restore counts it again), a
   * transcript does not.
   */
  idOnly?: true;
}
