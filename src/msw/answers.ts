/**
 * The request path's answers as `Response`s in a page, network faults as a page sees them (each
 * kind by its entry in `IN_PAGE`):
 *
 *   reset, close, truncate   a network error (`fetch` rejects with a TypeError)
 *   hang                     a network error after `hang_ms`, or when the page aborts the request
 *   gateway                  the gateway's HTML page with its status
 *   slow                     the whole answer, once its body would have arrived at `bytes_per_second`
 *
 * before or after the request took effect, as on the server (the request path decides which).
 * Injected latency, `hang_ms` and a slow body wait on the handlers' host clock; `close()` cancels every wait.
 */
import { HttpResponse } from 'msw';
import type { ApiAnswer } from '../request-path/exchange.js';
import { fail } from '../core/errors.js';
import { gatewayPage, holdsConnection, type NetworkFault, type NetworkKind } from '../core/faults/network.js';
import type { QueuedFault } from '../core/faults/faults.js';
import { RATE_LIMIT_HEADERS } from '../core/accounts/rateLimit.js';
import { JSON_TYPE } from '../jsonType.js';
import type { MediaAnswer } from '../media/files.js';
import type { HostClock } from '../hostClock.js';

/** A wait on the handlers' host clock that `close()` can end. */
interface PageTimer {
  cancel(): void;
}

/** The waits the handlers hold now, and the host clock they wait on. */
export interface PageTimers {
  readonly held: Set<PageTimer>;
  readonly hostClock: HostClock;
}

/** The answers' headers a page may read across origins, as the server exposes them. */
const EXPOSED_HEADERS = ['X-Request-Id', ...RATE_LIMIT_HEADERS, 'Retry-After', 'Idempotent-Replayed', 'Content-Range', 'Content-Length', 'Accept-Ranges', 'ETag'].join(',');
const CORS: Readonly<Record<string, string>> = { 'Access-Control-Allow-Origin': '*', 'Access-Control-Expose-Headers': EXPOSED_HEADERS };

/** Waits `ms` on the handlers' host clock; ends early (false) when the page aborts the request or the handlers close. */
function wait(ms: number, timers: PageTimers, signal?: AbortSignal): Promise<boolean> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve(false);
    const timer: PageTimer = { cancel: () => done(false) };
    const done = (waited: boolean): void => {
      handle.clear();
      signal?.removeEventListener('abort', aborted);
      timers.held.delete(timer);
      resolve(waited);
    };
    const aborted = (): void => done(false);
    const handle = timers.hostClock.setTimeout(() => done(true), ms);
    timers.held.add(timer);
    signal?.addEventListener('abort', aborted, { once: true });
  });
}

/** The 503 of handlers that were closed. */
export function closedResponse(): Response {
  return jsonResponse(503, JSON.stringify(fail('simulator_closed').toBody()), {});
}

function jsonResponse(status: number, text: string, headers: Record<string, string>): Response {
  return new HttpResponse(text, { status, headers: { ...headers, 'Content-Type': JSON_TYPE } });
}

/** How a page sees each kind of fault (the compiler asks for a new kind's entry): a network error, the gateway's page, or the answer after its slow delivery. */
export const IN_PAGE: Record<NetworkKind, (fault: NetworkFault, whole: () => Response, bodyBytes: number, timers: PageTimers, signal?: AbortSignal) => Response | Promise<Response>> = {
  reset: () => HttpResponse.error(),
  close: () => HttpResponse.error(),
  hang: async (fault, _whole, _bodyBytes, timers, signal) => {
    await wait(fault.hangMs, timers, signal);
    return HttpResponse.error();
  },
  truncate: () => HttpResponse.error(),
  gateway: (fault) => new HttpResponse(gatewayPage(fault.gatewayStatus), { status: fault.gatewayStatus, headers: { ...CORS, 'Content-Type': 'text/html' } }),
  slow: async (fault, whole, bodyBytes, timers, signal) => {
    if (!(await wait(Math.ceil((bodyBytes * 1000) / fault.bytesPerSecond), timers, signal))) return HttpResponse.error();
    return whole();
  },
};

/** A fault's loss as a page sees it. */
async function lost(fault: NetworkFault, whole: () => Response, bodyBytes: number, timers: PageTimers, signal?: AbortSignal): Promise<Response> {
  return IN_PAGE[fault.kind](fault, whole, bodyBytes, timers, signal);
}

/** The request path's answer as a Response: its latency waited out, its network fault carried out. `cors`: a `/v1` answer's headers. */
export async function apiResponse(
  request: Request,
  answer: ApiAnswer,
  options: { cors: boolean; timers: PageTimers; signal: AbortSignal; released: () => void },
): Promise<Response> {
  if (answer.delayMs > 0 && !(await wait(answer.delayMs, options.timers, options.signal))) return HttpResponse.error();
  const body = answer.stream ? answer.stream.text() : answer.body;
  const whole = (): Response => {
    const headers: Record<string, string> = { ...(options.cors ? CORS : {}), ...answer.headers, 'Content-Type': answer.contentType };
    return new HttpResponse(request.method === 'HEAD' ? null : body, { status: answer.status, headers });
  };
  if (!answer.network) return whole();
  const { fault } = answer.network;
  try {
    return await lost(fault, whole, new TextEncoder().encode(body).length, options.timers, options.signal);
  } finally {
    if (holdsConnection(fault.kind)) options.released();
  }
}

/** A media file's answer as a Response, after a queued media fault if one matched the download. */
export async function mediaResponse(
  request: Request,
  answer: MediaAnswer,
  options: { requestId: string; fault: QueuedFault | undefined; timers: PageTimers; onSocket: (fault: NetworkFault) => NetworkFault; released: () => void },
): Promise<Response> {
  const { fault, timers } = options;
  if (fault !== undefined && fault.latencyMs > 0 && !(await wait(fault.latencyMs, timers, request.signal))) return HttpResponse.error();
  const whole = (): Response => {
    const headers = { 'X-Request-Id': options.requestId, ...CORS, ...answer.headers };
    return new HttpResponse(answer.body === undefined ? null : (answer.body as Uint8Array<ArrayBuffer>), { status: answer.status, headers });
  };
  if (fault?.network == null) return whole();
  const network = options.onSocket(fault.network);
  try {
    return await lost(network, whole, answer.body?.length ?? 0, timers, request.signal);
  } finally {
    if (holdsConnection(network.kind)) options.released();
  }
}
