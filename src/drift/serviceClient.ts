/**
 * The drift check's HTTP client: sends one probe request to the target with global `fetch`,
 * records every exchange (for the checks made over all answers afterwards), and retries what the
 * interface document says is safe to retry (429 after its Retry-After, 500 with backoff).
 */
import { JSON_MEDIA_TYPE } from '../jsonType.js';
import { sleep as sleepOn, systemClock } from '../hostClock.js';

export interface ProbeRequest {
  method: string;
  /** The path under the target's base URL, with its query string: `/v1/videos?limit=0`. */
  path: string;
  /** `key` (default): `Authorization: Bearer <the key given>`; `none`: no header; else this header value. */
  auth?: 'key' | 'none' | { header: string };
  /** A JSON body. */
  json?: unknown;
  /** A body sent as is (with `contentType`, default `application/json`). */
  raw?: string;
  contentType?: string;
  idempotencyKey?: string;
}

export interface ServiceExchange {
  request: ProbeRequest;
  /** Sent with the key given to the drift check. */
  authenticated: boolean;
  status: number;
  /** Response headers, names in lower case. */
  headers: Record<string, string>;
  text: string;
  /** The body read as JSON, or undefined when it is not JSON. */
  json: unknown;
}

/** The target could not be reached (refused, reset, timed out). */
export class TargetUnreachable extends Error {}

/** The target answered 401 to a request sent with the key. */
export class KeyRefused extends Error {
  constructor(readonly exchange: ServiceExchange) {
    super(`the key was refused: ${exchange.request.method} ${exchange.request.path} answered 401 ${exchange.text.slice(0, 200)}`);
  }
}

export interface SendOptions {
  /** Asked before each retry; false stops retrying (a paid request whose retry would exceed the spend limit). */
  mayRetry?: () => boolean;
  /** Do not throw KeyRefused on a 401 (cancels during clean-up). */
  tolerate401?: boolean;
}

const TIMEOUT_MS = 30_000;
const RETRIES = 2;
/** The longest Retry-After the drift check waits for before giving up on a request. */
const MAX_WAIT_S = 10;

export class DriftClient {
  readonly exchanges: ServiceExchange[] = [];

  constructor(
    readonly base: string,
    private readonly apiKey: string,
    private readonly sleep: (ms: number) => Promise<void> = (ms) => sleepOn(systemClock, ms),
  ) {}

  async send(request: ProbeRequest, options: SendOptions = {}): Promise<ServiceExchange> {
    for (let attempt = 0; ; attempt++) {
      const exchange = await this.once(request);
      this.exchanges.push(exchange);
      if (exchange.status === 401 && exchange.authenticated && !options.tolerate401) throw new KeyRefused(exchange);
      const retryable = exchange.status === 429 || exchange.status === 500;
      if (!retryable || attempt >= RETRIES || (options.mayRetry && !options.mayRetry())) return exchange;
      const retryAfter = Number(exchange.headers['retry-after']);
      const waitS = exchange.status === 429 && Number.isFinite(retryAfter) ? retryAfter : 2 ** attempt;
      if (waitS > MAX_WAIT_S) return exchange;
      await this.sleep(waitS * 1000);
    }
  }

  /** A GET of a media address (no key), for the first bytes only. */
  async fetchMedia(url: string): Promise<{ status: number; contentType: string; bytes: Uint8Array } | { error: string }> {
    try {
      const res = await fetch(url, { headers: { Range: 'bytes=0-63' }, signal: AbortSignal.timeout(TIMEOUT_MS) });
      const bytes = new Uint8Array(await res.arrayBuffer()).slice(0, 64);
      return { status: res.status, contentType: res.headers.get('content-type') ?? '', bytes };
    } catch (e) {
      return { error: describeFailure(e) };
    }
  }

  private async once(request: ProbeRequest): Promise<ServiceExchange> {
    const headers: Record<string, string> = {};
    const auth = request.auth ?? 'key';
    if (auth === 'key') headers.Authorization = `Bearer ${this.apiKey}`;
    else if (auth !== 'none') headers.Authorization = auth.header;
    const body = request.raw ?? (request.json === undefined ? undefined : JSON.stringify(request.json));
    if (body !== undefined) headers['Content-Type'] = request.contentType ?? JSON_MEDIA_TYPE;
    if (request.idempotencyKey !== undefined) headers['Idempotency-Key'] = request.idempotencyKey;
    let res: Response;
    let text: string;
    try {
      res = await fetch(`${this.base}${request.path}`, {
        method: request.method,
        headers,
        body,
        redirect: 'manual',
        signal: AbortSignal.timeout(TIMEOUT_MS),
      });
      text = await res.text();
    } catch (e) {
      throw new TargetUnreachable(`${request.method} ${this.base}${request.path}: ${describeFailure(e)}`);
    }
    const responseHeaders: Record<string, string> = {};
    res.headers.forEach((value, name) => {
      responseHeaders[name.toLowerCase()] = value;
    });
    let json: unknown;
    try {
      json = text === '' ? undefined : JSON.parse(text);
    } catch {
      json = undefined;
    }
    return { request, authenticated: auth === 'key', status: res.status, headers: responseHeaders, text, json };
  }
}

function describeFailure(e: unknown): string {
  if (!(e instanceof Error)) return String(e);
  if (e.name === 'TimeoutError') return `no answer within ${TIMEOUT_MS / 1000} s`;
  const cause = (e as Error & { cause?: { code?: string; message?: string } }).cause;
  return cause?.code ?? cause?.message ?? e.message;
}
