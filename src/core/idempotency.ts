/**
 * Idempotency keys (interface document 7.3; openapi.yaml, Idempotency-Key): keyed by account, endpoint
 * and key; only successes are stored; entries expire after the scenario's retention, on the
 * account's clock.
 */

export interface StoredResponse {
  fingerprint: string;
  status: number;
  /** The body as it was sent, replayed byte for byte. */
  text: string;
  expiresAt: number;
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

  private prune(nowMs: number): void {
    for (const [k, v] of this.entries) {
      if (v.expiresAt > nowMs) break;
      this.entries.delete(k);
    }
  }
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

function fingerprintOf(body: unknown): string {
  if (typeof body === 'object' && body !== null && !Array.isArray(body)) {
    const trimmed: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(body)) if (v !== null) trimmed[k] = v;
    return canonicalJson(trimmed);
  }
  return canonicalJson(body);
}

function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (typeof value === 'object' && value !== null) {
    const keys = Object.keys(value).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}
