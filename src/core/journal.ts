/**
 * The request journal: /v1 requests in arrival order, bounded to the scenario's journal size (the
 * oldest entries go first).
 */
import type { Account } from './account.js';
import { isoTime } from './clock.js';
import { statusSeen, type AnswerLoss, type NetworkKind, type NetworkPhase } from './network.js';
import { effectiveNegativePrompt } from './videos.js';

export interface JournalEntry {
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
}

/**
 * What is kept of a request: the entry with its time as a number, and what the client report reads
 * (each field a reference or a number taken from the request as it passed, except the body, of
 * which only a fingerprint is kept). Every /v1 request records one, and few are ever read, so the
 * ISO string is made when an entry is read.
 */
export type JournalRecord = Omit<JournalEntry, 'at' | 'negative_prompt_effective' | 'fault' | 'trigger' | 'error_code' | 'network'> & {
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
   * clientReport.ts), null when none; or, for a small body, how to make it, made when the record is
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
};

/** A body fingerprint still to be made (from a small body's parsed value). */
export type PendingFingerprint = () => string | null;

/** A record as it is read: its body fingerprint made. */
export type SettledRecord = Omit<JournalRecord, 'bodyFingerprint'> & { bodyFingerprint: string | null };

/** The record's body fingerprint, made now (and kept) if it was still to be made. */
export function settledFingerprint(record: JournalRecord): string | null {
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
 * (undefined for an answer replayed as stored text); `hostMs` the host's time of the request.
 */
export function journalRecord(request: HandledRequest, answer: SentAnswer, value: unknown, hostMs: number): JournalRecord {
  const { account } = request;
  const video = value !== undefined && answer.status === 200 ? videoShown(value) : undefined;
  const error = value !== undefined && answer.status >= 400 ? (value as { error?: { param?: unknown; code?: unknown } } | null)?.error : undefined;
  const retryAfter = answer.headers['Retry-After'];
  const loss = answer.network;
  const created = request.performed && answer.status === 200 && (request.operationId === 'createVideo' || request.operationId === 'createImage');
  return {
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
      account !== null && request.performed && request.operationId === 'createVideo'
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
  };
}

/** The video an answer shows (a video object or a cancel answer). */
function videoShown(value: unknown): { id: string; status: string } | undefined {
  const v = value as { object?: unknown; id?: unknown; status?: unknown } | null;
  return v !== null && typeof v === 'object' && v.object === 'video' ? { id: v.id as string, status: v.status as string } : undefined;
}

function entryOf(r: JournalRecord): JournalEntry {
  const entry: JournalEntry = { method: r.method, path: r.path, status: r.status, account: r.account, at: isoTime(r.atMs), request_id: r.request_id };
  if (r.network !== undefined) entry.network = r.network;
  if (r.negative_prompt_effective !== undefined) entry.negative_prompt_effective = r.negative_prompt_effective;
  if (r.fault !== undefined) entry.fault = r.fault;
  if (r.trigger !== undefined) entry.trigger = [...r.trigger];
  if (r.errorCode !== undefined) entry.error_code = r.errorCode;
  return entry;
}

/**
 * The records of the most recent `capacity` requests, oldest first. Forgetting an account (a
 * per-account reset, or an account dropped for `max_accounts`) takes constant time: its records are
 * hidden at once (they no longer count against the capacity) and removed from memory in batches.
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

  constructor(private readonly capacity: number) {}

  record(entry: JournalRecord): void {
    this.entries.push(entry);
    this.live++;
    if (entry.account !== null) this.perAccount.set(entry.account, (this.perAccount.get(entry.account) ?? 0) + 1);
    while (this.live > this.capacity) {
      const oldest = this.entries[this.start] as JournalRecord;
      if (this.isVisible(oldest, this.start)) {
        this.live--;
        if (oldest.account !== null) this.countDown(oldest.account);
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

  /** Puts back the records `toState` gave, into an empty journal. */
  fromState(records: readonly JournalRecord[]): void {
    for (const record of records) this.record({ ...record, undelivered: record.undelivered === true });
  }

  /** Drops one account's entries (a per-account reset, or the account dropped). */
  forget(account: string): void {
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
