/**
 * One-shot faults queued through `POST /_sim/faults`: the next matching /v1 requests get the given
 * error instead of their normal answer, and take no effect; or lose their answer to a network
 * fault (`network.ts`), before or after taking effect. A media download (`/cdn`) may get a network
 * fault too. At most `limits.max_queued_faults` faults wait at once (each counts once, whatever its
 * `times`); adding one costs the same at any queue length.
 *
 * Which `type` and `code` go with which `status` is decided here (the status's type, and any code of
 * that type); openapi.yaml's SimFaultRequest states the same pairs per status, and a test holds the
 * two together.
 */
import { ACCESS_ERROR_CODES, ERROR_CATALOGUE, PROXY_ERROR_CODES, SHARD_ERROR_CODES, clip, fail, isErrorCode, type ErrorCode, type ErrorType } from './errors.js';
import { MEDIA_ROOT } from './mediaPaths.js';
import { matchesPath } from './pathPattern.js';
import type { ForcedOutcome } from './fate.js';
import { MEDIA_NETWORK_KINDS, networkFault, networkSpecOf, type NetworkFault, type NetworkSpec } from './network.js';

export interface FaultRequest extends NetworkSpec {
  path: string;
  method?: string | null;
  /** An HTTP error to answer with; optional when `latency_ms` or `outcome` is given. */
  status?: number | null;
  /** Delay before the request is handled (any clock mode: it is wall-clock time). */
  latency_ms?: number | null;
  /** The fate forced on the generation (or image) that the matching create makes. */
  outcome?: ForcedOutcome | null;
  type?: ErrorType | null;
  code?: string | null;
  message?: string | null;
  times?: number | null;
  api_key?: string | null;
}

export interface QueuedFault {
  path: string;
  method: string | null;
  /** The error to answer with; null for a fault that only delays or forces an outcome. */
  error: { status: number; type: ErrorType; code: ErrorCode; message: string } | null;
  latencyMs: number;
  outcome: ForcedOutcome | null;
  /** The network fault the request gets instead of an answer; null for any other fault. */
  network: NetworkFault | null;
  remaining: number;
  apiKey: string | null;
}

/** Media downloads: their paths begin with this. */
const MEDIA_PREFIX = `${MEDIA_ROOT}/`;

/** Whether a fault's path pattern names media downloads (`/cdn/...`) rather than the service's API. */
export function isMediaPattern(pattern: string): boolean {
  return pattern.startsWith(MEDIA_PREFIX);
}

/** The error each status gives when the fault names no type or code. */
const DEFAULT_CODE_OF_STATUS: Record<number, ErrorCode> = {
  400: 'invalid_parameter',
  401: 'invalid_api_key',
  402: 'insufficient_balance',
  404: 'resource_not_found',
  422: 'claim_linking_rejected',
  429: 'rate_limit_exceeded',
  500: 'internal_error',
};

export class FaultQueue {
  private faults: QueuedFault[] = [];
  /** The shots waiting in all (the sum of every fault's `remaining`). */
  private shots = 0;

  constructor(private readonly maxQueued: number) {}

  /** Validates and queues a fault; returns how many shots are now waiting in all. */
  add(request: FaultRequest): number {
    const status = request.status ?? null;
    const network = networkFault(request) ?? null;
    if (network !== null && (status !== null || request.outcome != null)) {
      throw fail('invalid_parameter', {
        param: 'network',
        message: `network replaces the answer, so it cannot go with ${status !== null ? 'status' : 'outcome'}; queue them as two faults.`,
      });
    }
    if (status === null && request.latency_ms == null && request.outcome == null && network === null) {
      throw fail('missing_parameter', {
        param: 'status',
        message: 'A fault needs a status (an HTTP error), a network failure, a latency_ms, or an outcome for the next generation.',
      });
    }
    if (isMediaPattern(request.path)) checkMediaFault(request, network);
    const times = request.times ?? 1;
    const fault: QueuedFault = {
      path: request.path,
      method: request.method ? request.method.toUpperCase() : null,
      error: status === null ? null : faultError(request, status),
      latencyMs: request.latency_ms ?? 0,
      outcome: request.outcome ?? null,
      network,
      remaining: times,
      apiKey: request.api_key ?? null,
    };
    if (this.faults.length >= this.maxQueued) {
      throw fail('invalid_request', {
        message: `The fault queue is full: it holds ${this.maxQueued} faults, the scenario's limits.max_queued_faults. Clear it (DELETE /_sim/faults), let requests take the faults, or raise the limit.`,
      });
    }
    this.faults.push(fault);
    this.shots += times;
    return this.shots;
  }

  /**
   * Takes one shot of the first fault matching the request, if any; `documented`: the statuses the
   * request's operation documents.
   */
  take(method: string, path: string, apiKey: string | null, documented: readonly number[]): QueuedFault | undefined {
    return this.takeWhere(
      (f) =>
        (f.method === null || f.method === method) &&
        (f.apiKey === null || f.apiKey === apiKey) &&
        matchesPath(f.path, path) &&
        // An error the contract does not document for this operation (402 on a GET) never matches it.
        (f.error === null || documented.includes(f.error.status)),
    );
  }

  /** Takes one shot of the first media fault (a `/cdn/...` pattern) matching a download, if any. */
  takeMedia(method: string, path: string): QueuedFault | undefined {
    // A HEAD is a GET without its body, as Express routes it.
    const asMethod = method === 'HEAD' ? 'GET' : method;
    return this.takeWhere((f) => isMediaPattern(f.path) && (f.method === null || f.method === asMethod || f.method === method) && matchesPath(f.path, path));
  }

  private takeWhere(matches: (f: QueuedFault) => boolean): QueuedFault | undefined {
    const index = this.faults.findIndex(matches);
    if (index < 0) return undefined;
    const fault = this.faults[index] as QueuedFault;
    this.shots--;
    if (--fault.remaining <= 0) this.faults.splice(index, 1);
    return fault;
  }

  /** The faults waiting, in the order they match. */
  list(): ({ path: string; method: string | null; status?: number; latency_ms?: number; outcome?: ForcedOutcome; times_left: number; api_key: string | null } & NetworkSpec)[] {
    return this.faults.map((f) => ({
      path: f.path,
      method: f.method,
      ...(f.error ? { status: f.error.status } : {}),
      ...(f.network ? networkSpecOf(f.network) : {}),
      ...(f.latencyMs > 0 ? { latency_ms: f.latencyMs } : {}),
      ...(f.outcome ? { outcome: f.outcome } : {}),
      times_left: f.remaining,
      api_key: f.apiKey,
    }));
  }

  /** The faults waiting, as plain data, in the order they match (a snapshot). */
  toState(): QueuedFault[] {
    return this.faults.map((f) => structuredClone(f));
  }

  /** Puts back the faults `toState` gave, all of them (a state kept under a higher limit included). */
  fromState(faults: readonly QueuedFault[]): void {
    // A fault of a snapshot without `network` has none.
    this.faults = faults.map((f) => ({ ...structuredClone(f), network: f.network ?? null }));
    this.shots = this.faults.reduce((sum, f) => sum + f.remaining, 0);
  }

  /** The shots waiting in all. */
  waiting(): number {
    return this.shots;
  }

  forget(apiKey: string): void {
    this.faults = this.faults.filter((f) => f.apiKey !== apiKey);
    this.shots = this.faults.reduce((sum, f) => sum + f.remaining, 0);
  }

  clear(): void {
    this.faults = [];
    this.shots = 0;
  }
}

/** A media download takes only a network fault of the kinds a CDN makes, and carries no API key. */
function checkMediaFault(request: FaultRequest, network: NetworkFault | null): void {
  if (network === null) {
    throw fail('invalid_parameter', {
      param: 'path',
      message: `A media path (${MEDIA_PREFIX}...) takes only a network fault (network: ${MEDIA_NETWORK_KINDS.join(', ')}); its answers are files, not the service's errors.`,
    });
  }
  if (!MEDIA_NETWORK_KINDS.includes(network.kind)) {
    throw fail('invalid_parameter', {
      param: 'network',
      message: `A media download takes network ${MEDIA_NETWORK_KINDS.join(', ')}; '${network.kind}' is the service's gateway, not the CDN's.`,
    });
  }
  if (request.api_key != null) {
    throw fail('invalid_parameter', {
      param: 'api_key',
      message: 'A media download carries no API key, so a fault on a media path cannot name one.',
    });
  }
}

function faultError(request: FaultRequest, status: number): NonNullable<QueuedFault['error']> {
  const defaultCode = DEFAULT_CODE_OF_STATUS[status];
  if (!defaultCode) {
    throw fail('invalid_parameter', {
      param: 'status',
      message: `status must be one of ${Object.keys(DEFAULT_CODE_OF_STATUS).join(', ')}; got ${status}.`,
    });
  }
  // The type a status answers with is its default code's: every catalogue code of that status has it.
  const expected = ERROR_CATALOGUE[defaultCode].type;
  const code = request.code ?? defaultCode;
  if (!isErrorCode(code)) {
    throw fail('invalid_parameter', {
      param: 'code',
      message: `code must be one of the catalogue's codes (see ErrorCode in openapi.yaml); got '${clip(code)}'.`,
    });
  }
  if (ACCESS_ERROR_CODES.includes(code)) {
    throw fail('invalid_parameter', {
      param: 'code',
      message: `code '${code}' is an answer of the simulator's own access checks, not an error of the service; a fault cannot inject it.`,
    });
  }
  if (PROXY_ERROR_CODES.includes(code)) {
    throw fail('invalid_parameter', {
      param: 'code',
      message: `code '${code}' is an answer of the proxy in front of shards, not an error of the service; a fault cannot inject it.`,
    });
  }
  if (SHARD_ERROR_CODES.includes(code)) {
    throw fail('invalid_parameter', {
      param: 'code',
      message: `code '${code}' is a shard's answer to a key of another shard, not an error of the service; a fault cannot inject it.`,
    });
  }
  const type = request.type ?? ERROR_CATALOGUE[code].type;
  if (type !== expected) {
    throw fail('invalid_parameter', {
      param: request.type ? 'type' : 'code',
      message: `${request.type ? `type '${type}'` : `code '${code}' (of type '${type}')`} does not go with status ${status}; the type of status ${status} is '${expected}'.`,
    });
  }
  // A code given with a type is of that type too: an answer never pairs a type with another type's code.
  if (ERROR_CATALOGUE[code].type !== expected) {
    throw fail('invalid_parameter', {
      param: 'code',
      message: `code '${code}' (of type '${ERROR_CATALOGUE[code].type}') does not go with status ${status}; the type of status ${status} is '${expected}'.`,
    });
  }
  return {
    status,
    type,
    code,
    message: request.message ?? `${ERROR_CATALOGUE[code].message} (injected by a queued fault)`,
  };
}
