/**
 * Network faults: the failures a network makes between a client and the service, decided here and
 * carried out on the socket by the HTTP adapter (src/http/network.ts) and in a page by the MSW
 * adapter (src/msw/answers.ts). A queued fault (`faults.ts`) or a scenario's `http.faults` item
 * (`injection.ts`) may name one instead of a status.
 *
 *   reset     the connection is reset (TCP RST); nothing is answered
 *   close     the connection is closed cleanly; nothing is answered
 *   hang      nothing is answered; the connection is held until the client closes it or `hang_ms`
 *             passes (on the host's clock), then closed
 *   truncate  the status line and headers (with the whole body's Content-Length) and part of the
 *             body are sent, then the connection is closed
 *   gateway   a gateway's answer: status 502, 503 or 504, a short HTML page, none of the service's
 *             headers; the connection then closes
 *   slow      the whole answer, its body sent at `bytes_per_second`
 *
 * The phase says when: `before`, the service never gets the request (it takes no effect);
 * `after`, the request is handled completely and only its answer is lost. `truncate` and `slow`
 * deliver (part of) the service's answer, so they are always `after`.
 *
 * Each kind has one descriptor (`NETWORK`): its own field, whether it delivers (and so its phase), whether
 * it holds its connection, what the client sees of it, how a replay recognises it. Every list of
 * kinds (`NETWORK_KINDS`, `MEDIA_NETWORK_KINDS`, the scenario schema's, the transcript's checks,
 * the dashboard's) is derived from them; openapi.yaml states the same, held to them by a test.
 */
import { fail } from '../errors.js';

export type NetworkPhase = 'before' | 'after';
/** The phases, in the order openapi.yaml and the transcript's checks list them. */
export const NETWORK_PHASES: readonly NetworkPhase[] = ['before', 'after'];

/** The kinds' own fields, by the name a fault body, a scenario item and a fault list give them. */
export type NetworkFieldName = 'hang_ms' | 'truncate_bytes' | 'gateway_status' | 'bytes_per_second';

/** A network fault as a fault body or a scenario item states it. */
export interface NetworkSpec extends Partial<Record<NetworkFieldName, number | null>> {
  network?: NetworkKind | null;
  phase?: NetworkPhase | null;
}

/** A network fault, its defaults applied (as a state file keeps a queued one: every kind's field, in this order). */
export interface NetworkFault {
  kind: NetworkKind;
  phase: NetworkPhase;
  /** `hang`: how long the connection is held at most (ms, on the host's clock). */
  hangMs: number;
  /** `truncate`: the body bytes sent; null: the first half of the body. */
  truncateBytes: number | null;
  /** `gateway`: the gateway's status. */
  gatewayStatus: number;
  /** `slow`: the body's pace. */
  bytesPerSecond: number;
}

/** A kind's own field. */
export interface NetworkField {
  /** Its name in a fault body, a scenario item, a fault list (and a transcript line, when `seen`). */
  readonly name: NetworkFieldName;
  /** Where a `NetworkFault` holds it. */
  readonly key: Exclude<keyof NetworkFault, 'kind' | 'phase'>;
  /** Its values, as openapi.yaml and the scenario schema state them: integers in a range, or a set of them. */
  readonly values: { readonly minimum: number; readonly maximum?: number } | { readonly enum: readonly number[] };
  /** Its value when none is given; null: the kind decides (`truncate`: half the body). */
  readonly default: number | null;
  /** Its unit in the journal's words (`30000 ms`); '' for none. */
  readonly unit: string;
  /**
   * How the client sees its value: as the answer's status (a gateway's), or not at all (null). A
   * transcript line records a field the client sees, and a replay reads it back from the wire.
   */
  readonly seen: 'status' | null;
}

/** What a replay sees of a request on the wire: how the connection ended, and the answer's status and headers when one began. */
export interface WireSeen {
  readonly ended: 'answered' | 'truncated' | 'reset' | 'close' | 'hang';
  readonly status?: number;
  readonly headers?: Readonly<Record<string, string | string[] | undefined>>;
}

/**
 * One kind of network fault: everything the core, the transcripts and the dashboard know of it.
 * How an adapter carries it out is the adapter's, in a table keyed by kind (the socket's in
 * src/http/network.ts, the page's in src/msw/answers.ts).
 */
export interface NetworkKindDescriptor {
  /** The kind in a few words (the dashboard's list of faults). */
  readonly label: string;
  /** Its own field, if it takes one (given with another kind, it is refused). */
  readonly field: NetworkField | null;
  /** What of the service's answer reaches the client: none of it (false), its status, headers and part of its body, or all of it. */
  readonly delivers: false | 'part' | 'whole';
  /** Whether the client gets a whole answer it can read: the service's, or one in its place (a gateway's page). */
  readonly readable: boolean;
  /**
   * Its phase when none is given, and whether `before` may be given: read from `delivers` (a kind
   * that delivers the service's answer happens after the request took effect; one that delivers
   * nothing, before it unless asked).
   */
  readonly phase: { readonly default: NetworkPhase; readonly before: boolean };
  /** Whether a media download (`/cdn`) may get it: a CDN answers no gateway page of the service. */
  readonly media: boolean;
  /** Whether it holds its connection open a while; such faults count against `limits.max_hung_connections`. */
  readonly holdsConnection: boolean;
  /** How many bytes of the body reach the client, of a body `length` bytes long. */
  bodyBytesSent(fault: NetworkFault, length: number): number;
  /** The status line the client gets: null when it gets none. */
  statusSeen(fault: NetworkFault, serviceStatus: number): number | null;
  /** How a replay recognises it: from what it sees on the wire, and the kind the target's journal shows (if it shows one yet). */
  readonly replay: {
    recognise(seen: WireSeen, journaled: string | undefined): boolean;
    /** Whether the replay lets the connection go once the journal shows this kind, rather than wait for its end. */
    readonly letGo: boolean;
  };
}

/** The service's status, for the kinds that deliver it. */
const serviceStatus = (_fault: NetworkFault, status: number): number => status;
const noStatus = (): null => null;
const noBytes = (): number => 0;

/**
 * Every kind of network fault, in the order they are listed everywhere (openapi.yaml, the
 * scenario schema, the dashboard). A new kind is one entry here (a new own field also has its name in
 * `NetworkFieldName` and its place in `NetworkFault`), and one in each adapter's table.
 */
const DESCRIPTORS = {
  reset: {
    label: 'connection reset',
    field: null,
    delivers: false,
    readable: false,
    media: true,
    holdsConnection: false,
    bodyBytesSent: noBytes,
    statusSeen: noStatus,
    replay: { recognise: (seen) => seen.ended === 'reset', letGo: false },
  },
  close: {
    label: 'connection closed',
    field: null,
    delivers: false,
    readable: false,
    media: true,
    holdsConnection: false,
    bodyBytesSent: noBytes,
    statusSeen: noStatus,
    replay: { recognise: (seen, journaled) => seen.ended === 'close' && journaled !== 'hang', letGo: false },
  },
  hang: {
    label: 'connection hangs',
    field: { name: 'hang_ms', key: 'hangMs', values: { minimum: 0, maximum: 600_000 }, default: 30_000, unit: 'ms', seen: null },
    delivers: false,
    readable: false,
    media: true,
    holdsConnection: true,
    bodyBytesSent: noBytes,
    statusSeen: noStatus,
    // A hang that its hang_ms ended before the journal was read looks like a close on the wire.
    replay: { recognise: (seen, journaled) => seen.ended === 'hang' || (seen.ended === 'close' && journaled === 'hang'), letGo: true },
  },
  truncate: {
    label: 'body cut short',
    field: { name: 'truncate_bytes', key: 'truncateBytes', values: { minimum: 0 }, default: null, unit: 'bytes', seen: null },
    delivers: 'part',
    readable: false,
    media: true,
    holdsConnection: false,
    // The first half of the body or its first `truncate_bytes`, always short of the whole (so the client sees the body end early).
    bodyBytesSent: (fault, length) => Math.max(0, Math.min(fault.truncateBytes ?? Math.floor(length / 2), length - 1)),
    statusSeen: serviceStatus,
    replay: { recognise: (seen) => seen.ended === 'truncated', letGo: false },
  },
  gateway: {
    label: 'gateway 502',
    field: { name: 'gateway_status', key: 'gatewayStatus', values: { enum: [502, 503, 504] }, default: 502, unit: '', seen: 'status' },
    delivers: false,
    readable: true,
    media: false,
    holdsConnection: false,
    // The page is ASCII: one byte per character.
    bodyBytesSent: (fault) => gatewayPage(fault.gatewayStatus).length,
    statusSeen: (fault) => fault.gatewayStatus,
    replay: { recognise: (seen) => isGatewayPage(seen), letGo: false },
  },
  slow: {
    label: 'slow answer',
    field: { name: 'bytes_per_second', key: 'bytesPerSecond', values: { minimum: 1, maximum: 10_485_760 }, default: 1024, unit: 'B/s', seen: null },
    delivers: 'whole',
    readable: true,
    media: true,
    holdsConnection: true,
    bodyBytesSent: (_fault, length) => length,
    statusSeen: serviceStatus,
    replay: { recognise: (seen, journaled) => seen.ended === 'answered' && !isGatewayPage(seen) && journaled === 'slow', letGo: false },
  },
} as const satisfies Record<string, Omit<NetworkKindDescriptor, 'phase'>>;

export type NetworkKind = keyof typeof DESCRIPTORS;

const BEFORE_BY_DEFAULT = { default: 'before', before: true } as const;
const AFTER_ONLY = { default: 'after', before: false } as const;

/** Each kind's descriptor, its phase read from what it delivers. */
export const NETWORK: Readonly<Record<NetworkKind, NetworkKindDescriptor>> = Object.fromEntries(
  Object.entries(DESCRIPTORS).map(([kind, d]) => [kind, { ...d, phase: d.delivers ? AFTER_ONLY : BEFORE_BY_DEFAULT }]),
) as Record<NetworkKind, NetworkKindDescriptor>;

/** Every kind, in order. */
export const NETWORK_KINDS: readonly NetworkKind[] = Object.keys(DESCRIPTORS) as NetworkKind[];

/** The kinds a media download (`/cdn`) may get. */
export const MEDIA_NETWORK_KINDS: readonly NetworkKind[] = NETWORK_KINDS.filter((kind) => NETWORK[kind].media);

/** The kinds' own fields, in the kinds' order. */
export const NETWORK_FIELDS: readonly (NetworkField & { readonly kind: NetworkKind })[] = NETWORK_KINDS.flatMap((kind) => {
  const { field } = NETWORK[kind];
  return field === null ? [] : [{ ...field, kind }];
});

/** Whether `value` names a kind (a value read from a file or a body). */
export function isNetworkKind(value: unknown): value is NetworkKind {
  return typeof value === 'string' && Object.hasOwn(DESCRIPTORS, value);
}

/**
 * The network fault a spec states, its defaults applied; throws 400 `invalid_parameter` naming
 * the field when a field does not go with the kind (`hang_ms` with `reset`, `phase: before` with
 * `slow`). The spec's values and ranges are its schema's to check (openapi.yaml, the scenario schema). Undefined when
 * the spec names no `network`; then none of its fields may be given.
 */
export function networkFault(spec: NetworkSpec): NetworkFault | undefined {
  const kind = spec.network ?? null;
  if (kind === null) {
    for (const field of ['phase', ...NETWORK_FIELDS.map((f) => f.name)] as (keyof NetworkSpec)[]) {
      if (spec[field] != null) {
        throw fail('invalid_parameter', { param: field, message: `${field} goes with network (a network fault); this one names none.` });
      }
    }
    return undefined;
  }
  if (!isNetworkKind(kind)) {
    throw fail('invalid_parameter', { param: 'network', message: `network must be one of ${NETWORK_KINDS.join(', ')}; got '${String(kind).slice(0, 100)}'.` });
  }
  for (const field of NETWORK_FIELDS) {
    if (spec[field.name] != null && field.kind !== kind) {
      throw fail('invalid_parameter', { param: field.name, message: `${field.name} goes with network '${field.kind}', not '${kind}'.` });
    }
  }
  const descriptor = NETWORK[kind];
  if (!descriptor.phase.before && spec.phase === 'before') {
    throw fail('invalid_parameter', {
      param: 'phase',
      message: `network '${kind}' delivers (part of) the service's answer, so it happens after the request took effect: its phase is 'after'.`,
    });
  }
  const fault = { kind, phase: spec.phase ?? descriptor.phase.default } as NetworkFault;
  // Every kind's field, its default when not given: the shape a state file keeps.
  for (const field of NETWORK_FIELDS) (fault as unknown as Record<string, number | null>)[field.key] = spec[field.name] ?? field.default;
  return fault;
}

/** A network fault as a fault list or a scenario shows it: the kind and phase, and the kind's own field when it has a value. */
export function networkSpecOf(fault: NetworkFault): Required<Pick<NetworkSpec, 'network' | 'phase'>> & NetworkSpec {
  const spec: Required<Pick<NetworkSpec, 'network' | 'phase'>> & NetworkSpec = { network: fault.kind, phase: fault.phase };
  const field = NETWORK[fault.kind].field;
  if (field !== null && fault[field.key] !== null) spec[field.name] = fault[field.key];
  return spec;
}

/** The kind's own field and its value, when it has one (`hang_ms` 30000); undefined else. */
function ownValue(fault: NetworkFault): { field: NetworkField; value: number } | undefined {
  const field = NETWORK[fault.kind].field;
  const value = field === null ? null : fault[field.key];
  return field === null || value === null ? undefined : { field, value };
}

/** In words, for the journal's `fault` note: `network reset (after)`, `network hang 30000 ms (before)`. */
export function describeNetwork(fault: NetworkFault): string {
  const own = ownValue(fault);
  const detail = own === undefined ? '' : ` ${own.value}${own.field.unit === '' ? '' : ` ${own.field.unit}`}`;
  return `network ${fault.kind}${detail} (${fault.phase})`;
}

/** The kind's own field as a transcript line records it: only one the client sees on the wire (a gateway's status). */
export function seenFields(fault: NetworkFault): Partial<Record<NetworkFieldName, number>> {
  const own = ownValue(fault);
  return own === undefined || own.field.seen === null ? {} : { [own.field.name]: own.value };
}

/** The kind's own field as a replay reads it back from the wire, for a field the client sees. */
export function seenFieldsOnWire(kind: NetworkKind, seen: WireSeen): Partial<Record<NetworkFieldName, number>> {
  const field = NETWORK[kind].field;
  return field?.seen === 'status' && seen.status !== undefined ? { [field.name]: seen.status } : {};
}

/** The kind a replay recognises from what it saw on the wire and the kind the target's journal shows; undefined for none (an answer as any). */
export function recognisedKind(seen: WireSeen, journaled: NetworkKind | undefined): NetworkKind | undefined {
  return NETWORK_KINDS.find((kind) => NETWORK[kind].replay.recognise(seen, journaled));
}

/** How many bytes of the body reach the client, of a body `length` bytes long (the gateway's page for `gateway`). */
export function bodyBytesSent(fault: NetworkFault, length: number): number {
  return NETWORK[fault.kind].bodyBytesSent(fault, length);
}

/** The status line the client gets: null when it gets none (`reset`, `close`, `hang`); the gateway's for `gateway`. */
export function statusSeen(fault: NetworkFault, serviceStatus: number): number | null {
  return NETWORK[fault.kind].statusSeen(fault, serviceStatus);
}

const GATEWAY_REASONS: Record<number, string> = { 502: 'Bad Gateway', 503: 'Service Unavailable', 504: 'Gateway Timeout' };

/** The page a gateway in front of the service answers with (nginx's, in spirit). */
export function gatewayPage(status: number): string {
  const title = `${status} ${GATEWAY_REASONS[status] ?? 'Bad Gateway'}`;
  return `<html>\r\n<head><title>${title}</title></head>\r\n<body>\r\n<center><h1>${title}</h1></center>\r\n<hr><center>gateway</center>\r\n</body>\r\n</html>\r\n`;
}

/** Whether an answer seen on the wire is a gateway's page: a gateway's status, HTML, without the service's request id. */
function isGatewayPage(seen: WireSeen): boolean {
  const statuses: readonly number[] = DESCRIPTORS.gateway.field.values.enum;
  return (
    seen.ended === 'answered' &&
    seen.status !== undefined &&
    statuses.includes(seen.status) &&
    String(seen.headers?.['content-type']).startsWith('text/html') &&
    seen.headers?.['x-request-id'] === undefined
  );
}

/**
 * Whether a fault holds its connection open for a while: a `hang` until it ends, a `slow` answer
 * while its body trickles out. Both count against `limits.max_hung_connections`.
 */
export function holdsConnection(kind: NetworkKind): boolean {
  return NETWORK[kind].holdsConnection;
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
