/**
 * The request journal: /v1 requests in arrival order, bounded to the scenario's journal size (the
 * oldest entries go first).
 */
import type { Account } from '../accounts/account.js';
import { isoTime } from '../time/clock.js';
import { NETWORK, statusSeen, type AnswerLoss, type NetworkKind, type NetworkPhase } from '../faults/network.js';
import type { VideoStatus } from '../generations/pipeline.js';
import { NO_KEPT_BODY, type KeptBody } from './keptBody.js';
import { factsOf } from '../../generated/operations.js';
import { effectiveNegativePrompt } from '../generations/videos.js';

export interface JournalEntry {
  /** This simulator's arrival number of the request: increasing, never given twice (resets included). */
  seq: number;
  method: string;
  /** Path with its query string. */
  path: string;
  /**
   * The status the client got: null when a network fault left it none (`reset`, `close`, `hang`),
   * the gateway's for `gateway`.
   */
  status: number | null;
  /** Set when a network fault lost the answer (or, `slow`, slowed it): its kind, and whether the request took effect (`after`). */
  network?: { kind: NetworkKind; phase: NetworkPhase };
  /** The API key of the account, null when no key was accepted. */
  account: string | null;
  /** ISO 8601, on the account's clock (global clock when no account). */
  at: string;
  request_id: string;
  /** Only on creates: the merged negative prompt the render used (request plus account default). */
  negative_prompt_effective?: string | null;
  /** Set when the simulator itself decided the answer (a queued or scenario fault). */
  fault?: string;
  /** Set when the create's prompt triggers chose its outcome: the directives as written (`"[sim:fail=render]"`), in prompt order. */
  trigger?: string[];
  /** On error answers: the error's `code`. */
  error_code?: string;
  /** The generation statuses the answer showed (a video, a cancel, a list's videos), in pipeline order. */
  seen?: VideoStatus[];
  /** The request's Idempotency-Key, when it sent one. */
  idempotency_key?: string;
  /**
   * The fields of the request's JSON body the journal keeps (`keptBody`), each as sent; a field kept
   * only as a digest is in `body_digests` instead. Absent: no JSON object body was read.
   */
  body?: Record<string, unknown>;
  /** The body's fields too long to keep, each as a SHA-256 digest (base64) of its value's canonical JSON. */
  body_digests?: Record<string, string>;
}

/**
 * What is kept of a request: the entry with its time as a number, and what the client report reads
 * (each field a reference or a number taken from the request as it passed, except the body, of
 * which only a fingerprint is kept). Every /v1 request records one, and few are ever read, so the
 * ISO string is made when an entry is read.
 */
export type JournalRecord = Omit<
  JournalEntry,
  'at' | 'negative_prompt_effective' | 'fault' | 'trigger' | 'error_code' | 'network' | 'seen' | 'idempotency_key' | 'body' | 'body_digests'
> & {
  atMs: number;
  /**
   * The host's time when the request was handled (the injected wall clock, epoch milliseconds), not
   * the virtual time it drives: the client report's timing rules read it in realtime mode.
   */
  hostMs: number;
  negative_prompt_effective: string | null | undefined;
  fault: string | undefined;
  /**
   * The prompt triggers that chose the create's outcome, as written (`promptTriggers.ts`). Optional:
   * a record kept before they existed has none.
   */
  trigger?: readonly string[] | undefined;
  /** The operation of openapi.yaml the request addressed (`createVideo`...), null for an unknown route. */
  operation: string | null;
  /** The request's Idempotency-Key header, if any. */
  idempotencyKey: string | undefined;
  /**
   * A digest of the request body as the client report compares bodies (see `bodyIdentity` in
   * sameRequest.ts), null when none; or, for a small body, how to make it, made when the record is
   * first read (`settledFingerprint`): few records ever are. Never a large body: a record stays
   * small whatever the body's size, so the journal's memory is bounded by its entry count.
   */
  bodyFingerprint: string | null | PendingFingerprint;
  /** The answer's Retry-After (seconds), if any. */
  retryAfter: number | undefined;
  /** The network fault that lost (or slowed) the answer, if any. */
  network: { kind: NetworkKind; phase: NetworkPhase } | undefined;
  /**
   * The id of the generation or image a create made (the create ran and answered 200, whether or
   * not the client got the answer); undefined for any other request, an idempotent replay included.
   */
  createdId: string | undefined;
  /** The video the answer showed (create, retrieve, cancel): its id and status. */
  videoId: string | undefined;
  videoStatus: string | undefined;
  /** An error answer's `param` (the request field at fault), if any. */
  errorParam: string | null | undefined;
  /** An error answer's `code`, if any. */
  errorCode: string | undefined;
  /**
   * Set by the HTTP adapter when the client had gone (closed its connection) before the answer
   * could be sent: the client got no answer.
   */
  undelivered: boolean;
  /**
   * The body's fields the journal keeps (see `keptBody`); null when no JSON object body was read.
   * Optional: a record kept before the journal kept bodies has none (no body pattern matches it).
   */
  body?: Record<string, unknown> | null;
  /** The body's fields kept only as digests (see `keptBody`), if any. */
  bodyDigests?: Record<string, string> | undefined;
  /** The statuses the answer showed, as bits of `SEEN_STATUSES` (0: none). Optional: a record kept before has none. */
  seen?: number;
};

/** A body fingerprint still to be made (from a small body's parsed value). */
export type PendingFingerprint = () => string | null;

/** A record as it is read: its body fingerprint made. */
export type SettledRecord = Omit<JournalRecord, 'bodyFingerprint'> & { bodyFingerprint: string | null };

/** The record's body fingerprint, made now (and kept) if it was still to be made. */
function settledFingerprint(record: JournalRecord): string | null {
  const fingerprint = record.bodyFingerprint;
  if (typeof fingerprint !== 'function') return fingerprint;
  return (record.bodyFingerprint = fingerprint());
}

/** What the journal reads of a /v1 request as it was handled. */
export interface HandledRequest {
  readonly method: string;
  /** The path with its query string. */
  readonly target: string;
  /** The authenticated account; null when no key was accepted. */
  readonly account: Account | null;
  /** The account's time when the request was handled (ms); the global time when no account. */
  readonly atMs: number;
  /** The operation of openapi.yaml the request addressed; null for an unknown route. */
  readonly operationId: string | null;
  readonly idempotencyKey: string | undefined;
  /** Why the simulator itself decided the answer, if it did (see `RequestInjection`). */
  readonly note: string | undefined;
  /** The prompt triggers the create took, as written, if any. */
  readonly trigger: readonly string[] | undefined;
  /** Whether the operation ran: every check before it passed. */
  readonly performed: boolean;
  /** The body as the operation read it. */
  readonly body: Record<string, unknown>;
  /** The body's fingerprint, or how to make it (`bodyFingerprint` in the request path), null when there is none. */
  bodyFingerprint(): string | null | PendingFingerprint;
  /** What the journal keeps of the body's fields (`keptBody`, with the request path's digest). */
  keptBody(): KeptBody;
}

/** The statuses `seen` counts, each a bit (`1 << index`). */
const SEEN_STATUSES: readonly VideoStatus[] = ['queued', 'processing', 'verifying', 'succeeded', 'failed', 'canceled'];

/** The bit of a status in `seen`; 0 for a string that is none. */
export function seenBit(status: unknown): number {
  const i = SEEN_STATUSES.indexOf(status as VideoStatus);
  return i < 0 ? 0 : 1 << i;
}

/** The statuses of a `seen` value, in pipeline order. */
function seenStatuses(seen: number | undefined): VideoStatus[] {
  return SEEN_STATUSES.filter((_, i) => ((seen ?? 0) & (1 << i)) !== 0);
}

/** The statuses an answer showed: a video object's (a cancel answer is one too), or those of a list's videos. */
function seenIn(value: unknown): number {
  if (value === null || typeof value !== 'object') return 0;
  const v = value as { object?: unknown; status?: unknown; data?: unknown };
  if (v.object === 'video') return seenBit(v.status);
  if (v.object !== 'list' || !Array.isArray(v.data)) return 0;
  let seen = 0;
  for (const item of v.data) if (item !== null && typeof item === 'object' && (item as { object?: unknown }).object === 'video') seen |= seenBit((item as { status?: unknown }).status);
  return seen;
}

/** What the journal reads of the answer: its status and headers, and its JSON value when it was built from one. */
export interface SentAnswer {
  readonly status: number;
  readonly headers: Record<string, string>;
  /** A network fault that lost the answer (or the request, `before`). */
  readonly network?: AnswerLoss;
}

/**
 * The journal's record of one /v1 request and its answer. `value` is the answer's JSON value
 * (undefined for an answer replayed as stored text); `shown` the answer's value as the client got
 * it, replays included (for `seen`); `hostMs` the host's time of the request. Its `seq` is given
 * by the journal that records it.
 */
export function journalRecord(request: HandledRequest, answer: SentAnswer, value: unknown, hostMs: number, shown: unknown = value): JournalRecord {
  const { account } = request;
  const video = value !== undefined && answer.status === 200 ? videoShown(value) : undefined;
  // oxlint-disable-next-line typescript/no-unnecessary-type-assertion -- tsc needs it: the value is unknown
  const error = value !== undefined && answer.status >= 400 ? (value as { error?: { param?: unknown; code?: unknown } } | null)?.error : undefined;
  const retryAfter = answer.headers['Retry-After'];
  const loss = answer.network;
  const creates = factsOf(request.operationId)?.creates ?? null;
  const created = request.performed && answer.status === 200 && creates !== null;
  const kept = account === null ? NO_KEPT_BODY : request.keptBody();
  return {
    seq: 0,
    method: request.method,
    path: request.target,
    status: loss === undefined ? answer.status : statusSeen(loss.fault, answer.status),
    network: loss && { kind: loss.fault.kind, phase: loss.fault.phase },
    createdId: created ? ((value as { id?: unknown } | undefined)?.id as string | undefined) : undefined,
    account: account?.key ?? null,
    atMs: request.atMs,
    hostMs,
    request_id: answer.headers['X-Request-Id'] as string,
    // Only on creates that reached the operation: the merged negative prompt the render used.
    negative_prompt_effective:
      account !== null && request.performed && creates === 'video'
        ? effectiveNegativePrompt(account.negativePrompt, (request.body.negative_prompt as string | undefined) ?? null)
        : undefined,
    fault: request.note,
    trigger: request.trigger,
    operation: request.operationId,
    idempotencyKey: request.idempotencyKey,
    // Only a request of an account is ever reported on.
    bodyFingerprint: account === null ? null : request.bodyFingerprint(),
    retryAfter: retryAfter === undefined ? undefined : Number(retryAfter),
    videoId: video?.id,
    videoStatus: video?.status,
    errorParam: error === null || typeof error !== 'object' ? undefined : (error.param as string | null | undefined),
    errorCode: typeof error?.code === 'string' ? error.code : undefined,
    undelivered: false,
    body: kept.body,
    bodyDigests: kept.digests,
    // What the client saw: nothing of an answer a network fault lost (but one it delivers whole: a slow one).
    seen: answer.status === 200 && (loss === undefined || NETWORK[loss.fault.kind].delivers === 'whole') ? seenIn(shown) : 0,
  };
}

/** The video an answer shows (a video object or a cancel answer). */
function videoShown(value: unknown): { id: string; status: string } | undefined {
  const v = value as { object?: unknown; id?: unknown; status?: unknown } | null;
  return v !== null && typeof v === 'object' && v.object === 'video' ? { id: v.id as string, status: v.status as string } : undefined;
}

/** A record as the control API shows it. */
export function entryOf(r: JournalRecord): JournalEntry {
  const entry: JournalEntry = { seq: r.seq, method: r.method, path: r.path, status: r.status, account: r.account, at: isoTime(r.atMs), request_id: r.request_id };
  if (r.network !== undefined) entry.network = r.network;
  if (r.negative_prompt_effective !== undefined) entry.negative_prompt_effective = r.negative_prompt_effective;
  if (r.fault !== undefined) entry.fault = r.fault;
  if (r.trigger !== undefined) entry.trigger = [...r.trigger];
  if (r.errorCode !== undefined) entry.error_code = r.errorCode;
  if (r.seen) entry.seen = seenStatuses(r.seen);
  if (r.idempotencyKey !== undefined) entry.idempotency_key = r.idempotencyKey;
  if (r.body != null) entry.body = { ...r.body };
  if (r.bodyDigests !== undefined) entry.body_digests = { ...r.bodyDigests };
  return entry;
}

/**
 * The records of the most recent `capacity` requests, oldest first. Forgetting an account (a
 * per-account reset, or an account dropped for `max_accounts`) takes constant time: its records are
 * hidden at once (they no longer count against the capacity) and removed from memory in batches.
 *
 * Each record gets its `seq` as it is recorded: one more than the last, which a global reset (a new
 * journal, `continueFrom`) and a restore carry on from. It counts the records dropped for the
 * capacity (of all accounts, and of each account), so that what asks about requests it no longer
 * holds can say so (`requestPattern.ts`), and tells `onRecord` of each record it adds.
 */
export class Journal {
  /** Records in arrival order from `start`, hidden ones included; `base + i` numbers `entries[i]`. */
  private entries: JournalRecord[] = [];
  private start = 0;
  private base = 0;
  /** Visible records from `start` on. */
  private live = 0;
  /** Hidden records from `start` on. */
  private hidden = 0;
  /** Visible records per account (accounts with none are left out). */
  private readonly perAccount = new Map<string, number>();
  /** Forgotten accounts: their records numbered below the value are hidden. */
  private forgotten = new Map<string, number>();
  /** The `seq` of the last record. */
  private lastSeq = 0;
  /** Visible records dropped for the capacity, of all accounts (the forgotten ones' taken back). */
  private droppedAll = 0;
  /** Visible records dropped for the capacity, per account (accounts with none are left out). */
  private readonly droppedOf = new Map<string, number>();
  /** Told of every record as it is added (the journal grew): what waits for requests listens here. */
  onRecord: ((record: JournalRecord) => void) | undefined = undefined;

  constructor(private readonly capacity: number) {}

  /** Adds the record of a request just answered, with the next `seq`, and tells `onRecord`. */
  record(entry: JournalRecord): void {
    entry.seq = ++this.lastSeq;
    this.add(entry);
    this.onRecord?.(entry);
  }

  /** The `seq` of the last record (0 before any). */
  get seq(): number {
    return this.lastSeq;
  }

  /** Goes on numbering after `seq` (a journal that replaces another: a global reset, a restore); never moves back. */
  continueFrom(seq: number): void {
    if (seq > this.lastSeq) this.lastSeq = seq;
  }

  /** Records dropped for the capacity that were of `account` (of every account, without one). */
  dropped(account?: string): number {
    return account === undefined ? this.droppedAll : (this.droppedOf.get(account) ?? 0);
  }

  /** The counts of `dropped` as plain data (a snapshot's), accounts with none left out. */
  droppedState(): { all: number; accounts: Map<string, number> } {
    return { all: this.droppedAll, accounts: new Map(this.droppedOf) };
  }

  /** Puts back the counts `droppedState` gave (into a journal that dropped nothing yet). */
  restoreDropped(all: number, accounts: Iterable<[string, number]>): void {
    this.droppedAll = all;
    for (const [account, count] of accounts) if (count > 0) this.droppedOf.set(account, count);
  }

  /** How many records are shown now. */
  get size(): number {
    return this.live;
  }

  /** The records shown with a `seq` above `after`, oldest first (settled as they are read). */
  *after(after: number): Generator<JournalRecord, void, undefined> {
    // Records are in `seq` order: the first above `after` is found by halving.
    let lo = this.start;
    let hi = this.entries.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if ((this.entries[mid] as JournalRecord).seq <= after) lo = mid + 1;
      else hi = mid;
    }
    for (let i = lo; i < this.entries.length; i++) {
      const e = this.entries[i] as JournalRecord;
      if (this.isVisible(e, i)) yield e;
    }
  }

  /** Adds a record as it is (its `seq` given), without telling `onRecord`. */
  private add(entry: JournalRecord): void {
    this.entries.push(entry);
    this.live++;
    if (entry.account !== null) this.perAccount.set(entry.account, (this.perAccount.get(entry.account) ?? 0) + 1);
    while (this.live > this.capacity) {
      const oldest = this.entries[this.start] as JournalRecord;
      if (this.isVisible(oldest, this.start)) {
        this.live--;
        this.droppedAll++;
        if (oldest.account !== null) {
          this.countDown(oldest.account);
          this.droppedOf.set(oldest.account, (this.droppedOf.get(oldest.account) ?? 0) + 1);
        }
      } else {
        this.hidden--;
      }
      this.start++;
    }
    // Dropped entries are released in batches: at most a quarter of the capacity (and at least
    // 1,024) waits for the next copy.
    if (this.start >= Math.max(1024, this.capacity / 4)) {
      this.entries = this.entries.slice(this.start);
      this.base += this.start;
      this.start = 0;
      for (const [account, before] of this.forgotten) if (before <= this.base) this.forgotten.delete(account);
    }
  }

  /** The records kept of one account's requests, oldest first (for the client report). */
  recordsOf(account: string): SettledRecord[] {
    const out: SettledRecord[] = [];
    for (let i = this.start; i < this.entries.length; i++) {
      const e = this.entries[i] as JournalRecord;
      if (e.account !== account || !this.isVisible(e, i)) continue;
      settledFingerprint(e);
      out.push(e as SettledRecord);
    }
    return out;
  }

  /** The most recent `limit` entries (of one account, when given), oldest first. */
  recent(limit: number, account?: string): { data: JournalEntry[]; has_more: boolean } {
    const out: JournalEntry[] = [];
    let more = false;
    for (let i = this.entries.length - 1; i >= this.start; i--) {
      const e = this.entries[i] as JournalRecord;
      if ((account !== undefined && e.account !== account) || !this.isVisible(e, i)) continue;
      if (out.length === limit) {
        more = true;
        break;
      }
      out.push(entryOf(e));
    }
    return { data: out.reverse(), has_more: more };
  }

  /** The records shown, oldest first (a snapshot: hidden ones are never shown again). */
  toState(): SettledRecord[] {
    return [...this.capture().records()];
  }

  /**
   * The records shown now, oldest first, each made as plain data as it is read: a record changes
   * only its `undelivered` (an answer that could not be sent), which is kept as it is now. With
   * `release`, each record is let go once read (see `StateCapture.rows`).
   */
  capture(): { count: number; records(release?: boolean): Generator<SettledRecord, void, undefined> } {
    const shown: JournalRecord[] = [];
    const undelivered: boolean[] = [];
    for (let i = this.start; i < this.entries.length; i++) {
      const e = this.entries[i] as JournalRecord;
      if (!this.isVisible(e, i)) continue;
      shown.push(e);
      undelivered.push(e.undelivered);
    }
    return {
      count: shown.length,
      *records(release = false) {
        // `undelivered` is left out when false (nearly always).
        for (let i = 0; i < shown.length; i++) {
          const record = shown[i] as JournalRecord;
          if (release) shown[i] = undefined as unknown as JournalRecord;
          yield { ...record, bodyFingerprint: settledFingerprint(record), undelivered: (undelivered[i] || undefined) as boolean };
        }
      },
    };
  }

  /**
   * Puts back the records `toState` gave, into an empty journal, with their `seq` (a record kept
   * before records had one is numbered as it comes).
   */
  fromState(records: readonly JournalRecord[]): void {
    for (const record of records) {
      const seq = Number.isSafeInteger(record.seq) && record.seq > this.lastSeq ? record.seq : this.lastSeq + 1;
      this.lastSeq = seq;
      // `seq` first, where a record made here has it.
      this.add(Object.assign({ seq }, record, { seq, undelivered: record.undelivered === true }));
    }
  }

  /** Drops one account's entries (a per-account reset, or the account dropped). */
  forget(account: string): void {
    // As if it had never been used: the requests of it the journal dropped are no longer counted.
    const dropped = this.droppedOf.get(account);
    if (dropped !== undefined) {
      this.droppedOf.delete(account);
      this.droppedAll -= dropped;
    }
    const count = this.perAccount.get(account);
    if (count === undefined) return;
    this.perAccount.delete(account);
    this.live -= count;
    this.hidden += count;
    this.forgotten.set(account, this.base + this.entries.length);
    // Hidden records are removed once they outnumber the visible ones (and at least 1,024).
    if (this.hidden > Math.max(1024, this.live)) {
      this.entries = this.entries.slice(this.start).filter((e, i) => this.isVisible(e, this.start + i));
      this.base = 0;
      this.start = 0;
      this.hidden = 0;
      this.forgotten = new Map();
    }
  }

  /** Whether `entries[i]` is shown: its account has not been forgotten since it was recorded. */
  private isVisible(e: JournalRecord, i: number): boolean {
    if (this.forgotten.size === 0 || e.account === null) return true;
    const before = this.forgotten.get(e.account);
    return before === undefined || this.base + i >= before;
  }

  private countDown(account: string): void {
    const count = (this.perAccount.get(account) as number) - 1;
    if (count === 0) this.perAccount.delete(account);
    else this.perAccount.set(account, count);
  }
}
