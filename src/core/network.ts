/**
 * Network faults: the failures a network makes between a client and the service, decided here and
 * carried out on the socket by the HTTP adapter (src/http/network.ts). A queued fault
 * (`faults.ts`) or a scenario's `http.faults` item (`injection.ts`) may name one instead of a
 * status.
 *
 *   reset     the connection is reset (TCP RST); nothing is answered
 *   close     the connection is closed cleanly; nothing is answered
 *   hang      nothing is answered; the connection is held until the client closes it or `hang_ms`
 *             passes (wall-clock time), then closed
 *   truncate  the status line and headers (with the whole body's Content-Length) and part of the
 *             body are sent, then the connection is closed
 *   gateway   a gateway's answer: status 502, 503 or 504, a short HTML page, none of the service's
 *             headers; the connection then closes
 *   slow      the whole answer, its body sent at `bytes_per_second`
 *
 * The phase says when: `before`, the service never gets the request (it takes no effect);
 * `after`, the request is handled completely and only its answer is lost. `truncate` and `slow`
 * deliver (part of) the service's answer, so they are always `after`.
 */
import { fail } from './errors.js';

export const NETWORK_KINDS = ['reset', 'close', 'hang', 'truncate', 'gateway', 'slow'] as const;
export type NetworkKind = (typeof NETWORK_KINDS)[number];
export type NetworkPhase = 'before' | 'after';

/** The kinds a media download (`/cdn`) may get: a CDN answers no gateway page of the service. */
export const MEDIA_NETWORK_KINDS: readonly NetworkKind[] = ['reset', 'close', 'hang', 'truncate', 'slow'];

/** The bounds of each kind's own field (openapi.yaml and the scenario schema state the same). */
export const NETWORK_LIMITS = {
  hangMs: { default: 30_000, max: 600_000 },
  gatewayStatuses: [502, 503, 504] as const,
  gatewayStatusDefault: 502,
  bytesPerSecond: { default: 1024, min: 1, max: 10_485_760 },
} as const;

/** A network fault as a fault body or a scenario item states it. */
export interface NetworkSpec {
  network?: NetworkKind | null;
  phase?: NetworkPhase | null;
  hang_ms?: number | null;
  truncate_bytes?: number | null;
  gateway_status?: number | null;
  bytes_per_second?: number | null;
}

/** A network fault, its defaults applied. */
export interface NetworkFault {
  kind: NetworkKind;
  phase: NetworkPhase;
  /** `hang`: how long the connection is held at most (wall-clock ms). */
  hangMs: number;
  /** `truncate`: the body bytes sent; null: the first half of the body. */
  truncateBytes: number | null;
  /** `gateway`: the gateway's status. */
  gatewayStatus: number;
  /** `slow`: the body's pace. */
  bytesPerSecond: number;
}

/** Each kind's own field: given with another kind, it is refused. */
const OWN_FIELD: Record<'hang_ms' | 'truncate_bytes' | 'gateway_status' | 'bytes_per_second', NetworkKind> = {
  hang_ms: 'hang',
  truncate_bytes: 'truncate',
  gateway_status: 'gateway',
  bytes_per_second: 'slow',
};

/** The kinds that deliver (part of) the service's answer: they happen after it took effect. */
const DELIVERING: readonly NetworkKind[] = ['truncate', 'slow'];

/**
 * The network fault a spec states, its defaults applied; throws 400 `invalid_parameter` naming
 * the field when a field does not go with the kind (`hang_ms` with `reset`, `phase: before` with
 * `slow`). The spec's values and ranges are its schema's to check (openapi.yaml, the scenario schema). Undefined when
 * the spec names no `network`; then none of its fields may be given.
 */
export function networkFault(spec: NetworkSpec): NetworkFault | undefined {
  const kind = spec.network ?? null;
  if (kind === null) {
    for (const field of ['phase', ...Object.keys(OWN_FIELD)] as (keyof NetworkSpec)[]) {
      if (spec[field] != null) {
        throw fail('invalid_parameter', { param: field, message: `${field} goes with network (a network fault); this one names none.` });
      }
    }
    return undefined;
  }
  if (!(NETWORK_KINDS as readonly string[]).includes(kind)) {
    throw fail('invalid_parameter', { param: 'network', message: `network must be one of ${NETWORK_KINDS.join(', ')}; got '${String(kind).slice(0, 100)}'.` });
  }
  for (const [field, owner] of Object.entries(OWN_FIELD) as [keyof typeof OWN_FIELD, NetworkKind][]) {
    if (spec[field] != null && owner !== kind) {
      throw fail('invalid_parameter', { param: field, message: `${field} goes with network '${owner}', not '${kind}'.` });
    }
  }
  const delivering = DELIVERING.includes(kind);
  if (delivering && spec.phase === 'before') {
    throw fail('invalid_parameter', {
      param: 'phase',
      message: `network '${kind}' delivers (part of) the service's answer, so it happens after the request took effect: its phase is 'after'.`,
    });
  }
  return {
    kind,
    phase: spec.phase ?? (delivering ? 'after' : 'before'),
    hangMs: spec.hang_ms ?? NETWORK_LIMITS.hangMs.default,
    truncateBytes: spec.truncate_bytes ?? null,
    gatewayStatus: spec.gateway_status ?? NETWORK_LIMITS.gatewayStatusDefault,
    bytesPerSecond: spec.bytes_per_second ?? NETWORK_LIMITS.bytesPerSecond.default,
  };
}

/** A network fault as a fault list or a scenario shows it: the kind and phase, and the kind's own field when it has one. */
export function networkSpecOf(fault: NetworkFault): Required<Pick<NetworkSpec, 'network' | 'phase'>> & NetworkSpec {
  const spec: Required<Pick<NetworkSpec, 'network' | 'phase'>> & NetworkSpec = { network: fault.kind, phase: fault.phase };
  if (fault.kind === 'hang') spec.hang_ms = fault.hangMs;
  if (fault.kind === 'truncate' && fault.truncateBytes !== null) spec.truncate_bytes = fault.truncateBytes;
  if (fault.kind === 'gateway') spec.gateway_status = fault.gatewayStatus;
  if (fault.kind === 'slow') spec.bytes_per_second = fault.bytesPerSecond;
  return spec;
}

/** In words, for the journal's `fault` note: `network reset (after)`. */
export function describeNetwork(fault: NetworkFault): string {
  const detail =
    fault.kind === 'hang'
      ? ` ${fault.hangMs} ms`
      : fault.kind === 'gateway'
        ? ` ${fault.gatewayStatus}`
        : fault.kind === 'slow'
          ? ` ${fault.bytesPerSecond} B/s`
          : fault.kind === 'truncate' && fault.truncateBytes !== null
            ? ` ${fault.truncateBytes} bytes`
            : '';
  return `network ${fault.kind}${detail} (${fault.phase})`;
}

/**
 * How many bytes of the body reach the client, of a body `length` bytes long: none for `reset`,
 * `close` and `hang`; for `truncate`, the first half of the body or its first `truncate_bytes`,
 * always short of the whole (so the client sees the body end early); the gateway's page for
 * `gateway`; all of it for `slow`.
 */
export function bodyBytesSent(fault: NetworkFault, length: number): number {
  switch (fault.kind) {
    case 'reset':
    case 'close':
    case 'hang':
      return 0;
    case 'truncate':
      return Math.max(0, Math.min(fault.truncateBytes ?? Math.floor(length / 2), length - 1));
    case 'gateway':
      // The page is ASCII: one byte per character.
      return gatewayPage(fault.gatewayStatus).length;
    case 'slow':
      return length;
  }
}

/** The status line the client gets: null when it gets none (`reset`, `close`, `hang`); the gateway's for `gateway`. */
export function statusSeen(fault: NetworkFault, serviceStatus: number): number | null {
  if (fault.kind === 'gateway') return fault.gatewayStatus;
  if (fault.kind === 'truncate' || fault.kind === 'slow') return serviceStatus;
  return null;
}

/** Whether the client gets the service's answer whole: only `slow` delivers it. */
export function losesAnswer(kind: NetworkKind): boolean {
  return kind !== 'slow';
}

const GATEWAY_REASONS: Record<number, string> = { 502: 'Bad Gateway', 503: 'Service Unavailable', 504: 'Gateway Timeout' };

/** The page a gateway in front of the service answers with (nginx's, in spirit). */
export function gatewayPage(status: number): string {
  const title = `${status} ${GATEWAY_REASONS[status] ?? 'Bad Gateway'}`;
  return `<html>\r\n<head><title>${title}</title></head>\r\n<body>\r\n<center><h1>${title}</h1></center>\r\n<hr><center>gateway</center>\r\n</body>\r\n</html>\r\n`;
}

/**
 * Whether a fault holds its connection open for a while: a `hang` until it ends, a `slow` answer
 * while its body trickles out. Both count against `limits.max_hung_connections`.
 */
export function holdsConnection(kind: NetworkKind): boolean {
  return kind === 'hang' || kind === 'slow';
}

/**
 * The connections held by `hang` and `slow` faults, across accounts and resets (they are the
 * process's sockets, not the state's): at most the scenario's `limits.max_hung_connections` at
 * once; a fault that would hold one past that bound is a `close`.
 */
export class HeldConnections {
  private count = 0;

  get held(): number {
    return this.count;
  }

  /** Takes a place for one more held connection; false when `max` are held already. */
  take(max: number): boolean {
    if (this.count >= max) return false;
    this.count++;
    return true;
  }

  /** A held connection was closed. */
  release(): void {
    if (this.count > 0) this.count--;
  }
}

/**
 * What a fault decided for a held connection (`holdsConnection`) once the bound is applied: the
 * fault itself when a place was taken (or none is needed), else a `close` in its place.
 */
export function boundedHold(fault: NetworkFault, held: HeldConnections, max: number): NetworkFault {
  if (!holdsConnection(fault.kind) || held.take(max)) return fault;
  return closedByBound(fault);
}

/** The `close` a hang or a slow answer becomes past the held-connections bound. */
export function closedByBound(fault: NetworkFault): NetworkFault {
  return { ...fault, kind: 'close' };
}

/** How an answer was lost: the fault, and how many bytes of its body reached the client (`bodyBytesSent`). */
export interface AnswerLoss {
  fault: NetworkFault;
  bodyBytes: number;
}
