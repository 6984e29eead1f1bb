/**
 * Idempotency keys (interface document 7.3): only a POST's `Idempotency-Key` counts; keys are
 * scoped by account and endpoint; only successes (200) are stored, once answered; a request under a
 * stored key is answered with the stored status and body, byte for byte and marked
 * `Idempotent-Replayed: true`, when it is the same request (see `requestFingerprint`), and refused
 * as a reuse (400 `idempotency_key_reused`) otherwise; entries expire after the scenario's
 * retention, on the account's clock. At most `limits.max_idempotency_keys` answers are stored, all
 * accounts together (`IdempotencyLedger`): past it the oldest goes, and its key then behaves as an
 * expired one.
 *
 * A stored answer keeps a digest of its request (`KeyedRequest.fingerprint`, made by the request
 * path), not the request itself, so that an answer costs its own text and little more.
 */
import { clip, fail, type SimError } from '../errors.js';
import { MEDIA_URL_FIELDS } from '../generations/mediaPaths.js';
import { SlotList } from '../paging.js';
import { sameBodyText } from './sameRequest.js';

export interface StoredResponse {
  /** Where its account's store files it: `<endpoint> <Idempotency-Key>`. */
  readonly filed: string;
  fingerprint: string;
  status: number;
  /** The body as it was sent, replayed byte for byte. */
  text: string;
  expiresAt: number;
  /** Its place in the order answers were stored in, all accounts together. */
  seq: number;
  /** The store that holds it, and its slot in the ledger's order. */
  owner: IdempotencyStore | null;
  slot: number;
}

/** A stored answer as a snapshot keeps it; `key` is `<endpoint> <Idempotency-Key>`. */
export interface IdempotencyEntryState {
  key: string;
  fingerprint: string;
  status: number;
  text: string;
  expires_at: number;
  /** The order it was stored in, all accounts together (absent from files of earlier versions). */
  seq?: number;
}

/**
 * The stored answers of all accounts in the order they were stored, and the limit on them
 * (`limits.max_idempotency_keys`): past it the oldest goes, whatever its account.
 */
export class IdempotencyLedger {
  private readonly order = new SlotList<StoredResponse>({ get: (e) => e.slot, set: (e, slot) => (e.slot = slot) });
  private nextSeq = 0;

  constructor(private readonly max: number) {}

  /** How many answers are stored, all accounts together. */
  get size(): number {
    return this.order.size;
  }

  /** An answer was stored: it takes the next place, and past the limit the oldest goes. */
  added(entry: StoredResponse): void {
    entry.seq = this.nextSeq++;
    this.order.push(entry);
    this.trim();
  }

  /** An answer left its store (expired, replaced, or its account dropped). */
  removed(entry: StoredResponse): void {
    this.order.remove(entry);
  }

  /** Each stored answer's rank in the order answers were stored (0 the oldest): what a snapshot keeps of that order. */
  ranks(): Map<StoredResponse, number> {
    return new Map(this.order.values().map((entry, rank) => [entry, rank]));
  }

  /** Puts back the answers of restored stores, in the order they were stored (those of files without that order first, store by store). */
  restore(stores: readonly IdempotencyStore[]): void {
    const entries = stores.flatMap((store) => store.entries());
    entries.sort((a, b) => a.seq - b.seq);
    for (const entry of entries) this.order.push(entry);
    this.nextSeq = entries.reduce((next, entry) => Math.max(next, entry.seq + 1), 0);
    this.trim();
  }

  private trim(): void {
    while (this.order.size > this.max) {
      const oldest = this.order.first() as StoredResponse;
      this.order.remove(oldest);
      oldest.owner?.drop(oldest);
    }
  }
}

/** An account's stored answers as captured (`IdempotencyStore.capture`): with `release`, each is let go once read (see `StateCapture.rows`). */
export interface AnswersCapture {
  count: number;
  entries(release?: boolean): Generator<IdempotencyEntryState, void, undefined>;
}

export type IdempotencyLookup =
  | { kind: 'miss' }
  | { kind: 'replay'; status: number; text: string }
  | { kind: 'conflict' };

/** One account's stored answers. */
export class IdempotencyStore {
  /** Insertion order is expiry order, because an account's clock only moves forward. */
  private byKey = new Map<string, StoredResponse>();

  constructor(
    private readonly retentionMs: number,
    private readonly ledger: IdempotencyLedger,
  ) {}

  /**
   * `fingerprint`: the request's digest. `canonical`: the request itself in canonical form, which a
   * state file of an earlier version holds instead of the digest.
   */
  lookup(endpoint: string, key: string, fingerprint: string, nowMs: number, canonical?: string): IdempotencyLookup {
    this.prune(nowMs);
    const stored = this.byKey.get(`${endpoint} ${key}`);
    if (!stored) return { kind: 'miss' };
    if (stored.fingerprint !== fingerprint && stored.fingerprint !== canonical) return { kind: 'conflict' };
    return { kind: 'replay', status: stored.status, text: stored.text };
  }

  store(endpoint: string, key: string, fingerprint: string, status: number, text: string, nowMs: number): void {
    const filed = `${endpoint} ${key}`;
    const replaced = this.byKey.get(filed);
    if (replaced) {
      this.byKey.delete(filed);
      this.ledger.removed(replaced);
    }
    const entry: StoredResponse = { filed, fingerprint, status, text, expiresAt: nowMs + this.retentionMs, seq: 0, owner: this, slot: -1 };
    this.byKey.set(filed, entry);
    this.ledger.added(entry);
  }

  /** The stored answers, in expiry order. */
  entries(): StoredResponse[] {
    return [...this.byKey.values()];
  }

  /** Drops an answer the ledger let go (past the limit): its key then behaves as an expired one. */
  drop(entry: StoredResponse): void {
    if (this.byKey.get(entry.filed) === entry) this.byKey.delete(entry.filed);
    entry.owner = null;
  }

  /** Drops every answer (the account is dropped). */
  clear(): void {
    for (const entry of this.byKey.values()) this.ledger.removed(entry);
    this.byKey.clear();
  }

  /** The stored answers as plain data, in expiry order (a snapshot); `ranks`: the ledger's (`IdempotencyLedger.ranks`). */
  toState(ranks: ReadonlyMap<StoredResponse, number>): IdempotencyEntryState[] {
    return [...this.capture(ranks).entries()];
  }

  /**
   * The stored answers now, in expiry order, each made as plain data as it is read (a stored
   * answer is replaced or dropped, never changed but by `readdress`); `ranks`: the ledger's, taken
   * at the same time (read now: the capture does not hold the ledger's other answers).
   */
  capture(ranks: ReadonlyMap<StoredResponse, number>): AnswersCapture {
    const stored = this.entries();
    const seqs: number[] = [];
    for (const v of stored) seqs.push(ranks.get(v) ?? -1);
    return {
      count: stored.length,
      *entries(release = false) {
        for (let i = 0; i < stored.length; i++) {
          const v = stored[i] as StoredResponse;
          if (release) stored[i] = undefined as unknown as StoredResponse;
          yield { key: v.filed, fingerprint: v.fingerprint, status: v.status, text: v.text, expires_at: v.expiresAt, seq: seqs[i] };
        }
      },
    };
  }

  /** Puts back what `toState` gave, for the ledger's `restore` to place. */
  fromState(entries: readonly IdempotencyEntryState[]): void {
    this.byKey = new Map(
      entries.map((e) => [e.key, { filed: e.key, fingerprint: e.fingerprint, status: e.status, text: e.text, expiresAt: e.expires_at, seq: e.seq ?? -1, owner: this, slot: -1 }]),
    );
  }

  /** Maps every stored body (`readdressed`: the media address they hold moved). */
  readdress(text: (body: string) => string): void {
    for (const entry of this.byKey.values()) entry.text = text(entry.text);
  }

  private prune(nowMs: number): void {
    for (const [k, v] of this.byKey) {
      if (v.expiresAt > nowMs) break;
      this.byKey.delete(k);
      this.ledger.removed(v);
    }
  }
}

/**
 * A stored answer's body as it would have been answered on the media address `to` rather than
 * `from`, or undefined when the two are the same: the value of each media URL field
 * (`MEDIA_URL_FIELDS`) that begins with `from` takes `to` instead; every other value (a prompt that
 * reads like a media URL included) stays as sent. In the compact JSON text of an answer a member
 * reads `"url":"...`; within a string every quote is escaped, so that text begins only a member
 * named so, never a part of a value.
 */
export function readdressed(from: string, to: string): ((body: string) => string) | undefined {
  if (from === to) return undefined;
  const replacements = MEDIA_URL_FIELDS.map((field) => {
    const member = (address: string) => `${JSON.stringify(field)}:${JSON.stringify(`${address}/`).slice(0, -1)}`;
    return [member(from), member(to)] as const;
  });
  return (body: string) => replacements.reduce((text, [was, now]) => text.replaceAll(was, now), body);
}

/** A request under an Idempotency-Key: what its stored answer is filed and matched under. */
export interface KeyedRequest {
  /** The path the request was sent to. */
  endpoint: string;
  key: string;
  /** A digest of the request's identity (`requestFingerprint`); a body that could not be read is one of its own. */
  fingerprint: string;
  /** The request's identity itself, for answers stored by earlier versions (see `IdempotencyStore.lookup`). */
  canonical: string;
}

/** The stored answer a repeated request gets again. */
export interface Replay {
  status: number;
  /** The body as it was first sent. */
  text: string;
}

/**
 * The key a request is under, if any: only a POST's `Idempotency-Key` counts. `digest` makes the
 * request's fingerprint from its identity (the request path gives a cryptographic hash).
 */
export function keyedRequest(
  method: string,
  path: string,
  key: string | undefined,
  body: unknown,
  readable: boolean,
  digest: (identity: string) => string,
): KeyedRequest | undefined {
  if (method !== 'POST' || !key) return undefined;
  const canonical = readable ? requestFingerprint(body) : '\u0000unreadable';
  return { endpoint: path, key, fingerprint: digest(canonical), canonical };
}

/**
 * What the store says of a keyed request before it is handled: the stored answer to send again
 * (its `Idempotent-Replayed` header added to `headers`), the 400 for a key reused with another
 * request, or undefined: handle it.
 */
export function replayFor(
  store: IdempotencyStore,
  request: KeyedRequest,
  nowMs: number,
  headers: Record<string, string>,
): Replay | SimError | undefined {
  const found = store.lookup(request.endpoint, request.key, request.fingerprint, nowMs, request.canonical);
  if (found.kind === 'replay') {
    headers['Idempotent-Replayed'] = 'true';
    return { status: found.status, text: found.text };
  }
  if (found.kind === 'conflict') {
    return fail('idempotency_key_reused', {
      message: `Idempotency-Key '${clip(request.key)}' was already used with a different request on ${clip(request.endpoint)}. Use a new key for a new request.`,
    });
  }
  return undefined;
}

/** Files a handled request's answer under its key: only a success (200) is stored. */
export function remember(store: IdempotencyStore, request: KeyedRequest, status: number, text: string, nowMs: number): void {
  if (status === 200) store.store(request.endpoint, request.key, request.fingerprint, status, text, nowMs);
}

/** The identity of a request for idempotency: its body, compared as `sameBodyText` says. */
export function requestFingerprint(body: unknown): string {
  try {
    return sameBodyText(body);
  } catch {
    // Nesting too deep to walk (such a body fails validation anyway, so it is never stored).
    return '\u0000too-deep';
  }
}
