/**
 * What the probes found, per assumption id: checks that held, departures (each with its evidence:
 * the request, what the simulator expects, what the target answered), and reasons an assumption
 * could not be observed. A row is contradicted when any check departed, confirmed when at least
 * one held and none departed, and not observed otherwise.
 */
import type { ServiceExchange, ProbeRequest } from './serviceClient.js';

export interface Evidence {
  request: string;
  expected: string;
  observed: string;
}

type RowResult = 'confirmed' | 'contradicted' | 'not_observed';

export interface Row {
  id: string;
  result: RowResult;
  /** How many checks held. */
  checks: number;
  /** For a contradicted row: every departure. */
  evidence: Evidence[];
  /** For a row not observed: why. */
  reason?: string;
}

/** What an answer must be. Unset fields are not checked. */
export interface Expect {
  status?: number;
  type?: string;
  code?: string;
  /** The error's `param` (checked when the key is present: null means "present and null"). */
  param?: string | null;
  /** The answer must not carry this error code. */
  notCode?: string;
  /** The answer must not be an idempotent replay. */
  notReplayed?: boolean;
}

export class Findings {
  private readonly held = new Map<string, number>();
  private readonly departures = new Map<string, Evidence[]>();
  private readonly reasons = new Map<string, string[]>();

  confirm(id: string): void {
    this.held.set(id, (this.held.get(id) ?? 0) + 1);
  }

  contradict(id: string, evidence: Evidence): void {
    const list = this.departures.get(id) ?? [];
    list.push(evidence);
    this.departures.set(id, list);
  }

  /** Why `id` could not be observed (kept only if nothing else observes it). */
  notObserved(id: string, reason: string): void {
    const list = this.reasons.get(id) ?? [];
    if (!list.includes(reason)) list.push(reason);
    this.reasons.set(id, list);
  }

  /** Records one check: held, or a departure with its evidence. Returns whether it held. */
  record(id: string, ok: boolean, evidence: () => Evidence): boolean {
    if (ok) this.confirm(id);
    else this.contradict(id, evidence());
    return ok;
  }

  /** Checks an answer against `expect` for assumption `id`. */
  expect(id: string, exchange: ServiceExchange, expect: Expect, why?: string): boolean {
    const ok = matches(exchange, expect);
    return this.record(id, ok, () => ({
      request: describeRequest(exchange.request),
      expected: describeExpect(expect) + (why ? ` (${why})` : ''),
      observed: describeAnswer(exchange, expect),
    }));
  }

  row(id: string, fallbackReason = 'no probe observed it'): Row {
    const evidence = this.departures.get(id) ?? [];
    const checks = this.held.get(id) ?? 0;
    if (evidence.length > 0) return { id, result: 'contradicted', checks, evidence };
    if (checks > 0) return { id, result: 'confirmed', checks, evidence: [] };
    return { id, result: 'not_observed', checks: 0, evidence: [], reason: (this.reasons.get(id) ?? [fallbackReason]).join('; ') };
  }
}

export function errorOf(exchange: ServiceExchange): Record<string, unknown> | undefined {
  const body = exchange.json as { error?: unknown } | undefined;
  return body !== null && typeof body === 'object' && body.error !== null && typeof body.error === 'object'
    ? (body.error as Record<string, unknown>)
    : undefined;
}

export function isReplay(exchange: ServiceExchange): boolean {
  return exchange.headers['idempotent-replayed'] !== undefined;
}

function matches(exchange: ServiceExchange, expect: Expect): boolean {
  const error = errorOf(exchange);
  if (expect.status !== undefined && exchange.status !== expect.status) return false;
  if (expect.type !== undefined && error?.type !== expect.type) return false;
  if (expect.code !== undefined && error?.code !== expect.code) return false;
  if (expect.param !== undefined && (!error || !Object.hasOwn(error, 'param') || error.param !== expect.param)) return false;
  if (expect.notCode !== undefined && error?.code === expect.notCode) return false;
  if (expect.notReplayed && isReplay(exchange)) return false;
  return true;
}

function describeExpect(expect: Expect): string {
  const parts: string[] = [];
  if (expect.status !== undefined) parts.push(String(expect.status));
  if (expect.type !== undefined) parts.push(expect.type);
  if (expect.code !== undefined) parts.push(expect.code);
  let text = parts.join(' ');
  if (expect.param !== undefined) text += `${text ? ', ' : ''}param ${JSON.stringify(expect.param)}`;
  if (expect.notCode !== undefined) text += `${text ? ', ' : ''}not ${expect.notCode}`;
  if (expect.notReplayed) text += `${text ? ', ' : ''}not a replay (no Idempotent-Replayed)`;
  return text;
}

/** An answer, in the terms of what was expected of it. */
export function describeAnswer(exchange: ServiceExchange, expect: Expect = {}): string {
  const error = errorOf(exchange);
  let text = String(exchange.status);
  if (error) {
    text += ` ${String(error.type)} ${String(error.code)}`;
    if (expect.param !== undefined || Object.hasOwn(error, 'param')) {
      text += Object.hasOwn(error, 'param') ? `, param ${JSON.stringify(error.param)}` : ', no param';
    }
  } else {
    text += ` ${excerpt(exchange.text, 160)}`;
  }
  if (isReplay(exchange)) text += `, Idempotent-Replayed: ${exchange.headers['idempotent-replayed']}`;
  return text;
}

/** A request as the report shows it: method, path, the headers that matter, the body (long strings shortened). */
export function describeRequest(request: ProbeRequest): string {
  const parts = [`${request.method} ${request.path}`];
  if (request.auth === 'none') parts.push('(no Authorization)');
  else if (request.auth && typeof request.auth === 'object') parts.push(`(Authorization: ${request.auth.header})`);
  if (request.idempotencyKey !== undefined) parts.push(`Idempotency-Key: ${request.idempotencyKey}`);
  if (request.contentType !== undefined) parts.push(`Content-Type: ${request.contentType}`);
  if (request.raw !== undefined) parts.push(request.raw === '' ? '(empty body)' : excerpt(request.raw, 160));
  else if (request.json !== undefined) parts.push(JSON.stringify(request.json, (_k, v: unknown) => (typeof v === 'string' && v.length > 80 ? `<${v.length} characters>` : v)));
  return parts.join(' ');
}

function excerpt(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  if (flat === '') return '(empty body)';
  return flat.length > max ? `${flat.slice(0, max)}...` : flat;
}
