/**
 * Idempotency keys (interface document 7.3): only a POST's `Idempotency-Key` counts; keys are
 * scoped by account and endpoint; only successes (200) are stored, once answered; a request under a
 * stored key is answered with the stored status and body, byte for byte and marked
 * `Idempotent-Replayed: true`, when it is the same request (see `requestFingerprint`), and refused
 * as a reuse (400 `idempotency_key_reused`) otherwise; entries expire after the scenario's
 * retention, on the account's clock.
 */
import stableStringify from 'safe-stable-stringify';
import { clip, fail, type SimError } from './errors.js';

export interface StoredResponse {
  fingerprint: string;
  status: number;
  /** The body as it was sent, replayed byte for byte. */
  text: string;
  expiresAt: number;
}

/** A stored answer as a snapshot keeps it; `key` is `<endpoint> <Idempotency-Key>`. */
export interface IdempotencyEntryState {
  key: string;
  fingerprint: string;
  status: number;
  text: string;
  expires_at: number;
}

export type IdempotencyLookup =
  | { kind: 'miss' }
  | { kind: 'replay'; status: number; text: string }
  | { kind: 'conflict' };

export class IdempotencyStore {
  /** Insertion order is expiry order, because an account's clock only moves forward. */
  private entries = new Map<string, StoredResponse>();

  constructor(private readonly retentionMs: number) {}

  lookup(endpoint: string, key: string, fingerprint: string, nowMs: number): IdempotencyLookup {
    this.prune(nowMs);
    const stored = this.entries.get(`${endpoint} ${key}`);
    if (!stored) return { kind: 'miss' };
    if (stored.fingerprint !== fingerprint) return { kind: 'conflict' };
    return { kind: 'replay', status: stored.status, text: stored.text };
  }

  store(endpoint: string, key: string, fingerprint: string, status: number, text: string, nowMs: number): void {
    this.entries.set(`${endpoint} ${key}`, { fingerprint, status, text, expiresAt: nowMs + this.retentionMs });
  }

  /** The stored answers as plain data, in expiry order (a snapshot). */
  toState(): IdempotencyEntryState[] {
    return [...this.entries].map(([filed, v]) => ({ key: filed, fingerprint: v.fingerprint, status: v.status, text: v.text, expires_at: v.expiresAt }));
  }

  /** Puts back what `toState` gave; `text` maps each stored body (a restore on another media address rewrites it). */
  fromState(entries: readonly IdempotencyEntryState[], text: (body: string) => string = (body) => body): void {
    this.entries = new Map(entries.map((e) => [e.key, { fingerprint: e.fingerprint, status: e.status, text: text(e.text), expiresAt: e.expires_at }]));
  }

  private prune(nowMs: number): void {
    for (const [k, v] of this.entries) {
      if (v.expiresAt > nowMs) break;
      this.entries.delete(k);
    }
  }
}

/** A request under an Idempotency-Key: what its stored answer is filed and matched under. */
export interface KeyedRequest {
  /** The path the request was sent to. */
  endpoint: string;
  key: string;
  /** The request's identity (`requestFingerprint`); a body that could not be read is one of its own. */
  fingerprint: string;
}

/** The stored answer a repeated request gets again. */
export interface Replay {
  status: number;
  /** The body as it was first sent. */
  text: string;
}

/** The key a request is under, if any: only a POST's `Idempotency-Key` counts. */
export function keyedRequest(
  method: string,
  path: string,
  key: string | undefined,
  body: unknown,
  readable: boolean,
): KeyedRequest | undefined {
  if (method !== 'POST' || !key) return undefined;
  return { endpoint: path, key, fingerprint: readable ? requestFingerprint(body) : '\u0000unreadable' };
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
  const found = store.lookup(request.endpoint, request.key, request.fingerprint, nowMs);
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

/**
 * The identity of a request for idempotency: the same JSON value after dropping top-level fields
 * that are null (an optional field's null means "left out"); key order and white space do not matter.
 */
export function requestFingerprint(body: unknown): string {
  try {
    return fingerprintOf(body);
  } catch {
    // Nesting too deep to walk (such a body fails validation anyway, so it is never stored).
    return '\u0000too-deep';
  }
}

/** The body as JSON text with object keys sorted at every depth (no body: `null`). */
function fingerprintOf(body: unknown): string {
  if (typeof body === 'object' && body !== null && !Array.isArray(body)) {
    const trimmed: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(body)) if (v !== null) trimmed[k] = v;
    return stableStringify(trimmed);
  }
  return stableStringify(body) ?? 'null';
}
