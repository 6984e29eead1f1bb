/**
 * One-shot faults queued through `POST /_sim/faults`: the next matching /v1 requests get the given
 * error instead of their normal answer, and take no effect; or lose their answer to a network
 * fault (`network.ts`), before or after taking effect. A media download (`/cdn`) may get a network
 * fault too. At most `limits.max_queued_faults` faults wait at once (each counts once, whatever its
 * `times`); adding one, and a request's look for the first that matches it, cost the same at any
 * queue length (`FaultQueue` files them by what they match on).
 *
 * Which `type` and `code` go with which `status` is decided here (the status's type, and any code of
 * that type); openapi.yaml's SimFaultRequest states the same pairs per status, and a test holds the
 * two together.
 */
import { ACCESS_ERROR_CODES, ERROR_CATALOGUE, PAGE_ERROR_CODES, PROXY_ERROR_CODES, SHARD_ERROR_CODES, clip, fail, isErrorCode, type ErrorCode, type ErrorType } from '../errors.js';
import { MEDIA_ROOT } from '../generations/mediaPaths.js';
import type { ForcedOutcome } from '../generations/fate.js';
import { SlotList, type SlotField } from '../paging.js';
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

/** The codes a fault cannot inject, and whose answers they are. */
const NOT_INJECTABLE: readonly { codes: readonly ErrorCode[]; whose: string }[] = [
  { codes: ACCESS_ERROR_CODES, whose: "an answer of the simulator's own access checks" },
  { codes: PROXY_ERROR_CODES, whose: 'an answer of the proxy in front of shards' },
  { codes: PAGE_ERROR_CODES, whose: "the answer of a simulator that stopped (a page's handlers once closed, a wait held when a simulator stopped)" },
  { codes: SHARD_ERROR_CODES, whose: "a shard's answer to a key of another shard" },
];

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

/** A queued fault with its place in the queue: `seq` rises in the order faults were queued. */
interface Entry {
  readonly fault: QueuedFault;
  readonly seq: number;
  /** Its slot in the queue's order (`SlotList`). */
  slot: number;
  readonly bucket: Bucket;
}

/**
 * The faults of one path pattern, method, account and error status, in the order they were queued
 * (so the first is the one a request takes first), with where the bucket is filed.
 */
interface Bucket {
  readonly entries: Entry[];
  /** Every entry before it has left. */
  head: number;
  readonly pattern: string;
  readonly method: string | null;
  readonly apiKey: string | null;
  readonly status: number;
}

/** A pattern's buckets: by method (null: any), then account (null: any), then error status (0: none). */
type ByMethod = Map<string | null, Map<string | null, Map<number, Bucket>>>;

const ENTRY_SLOT: SlotField<Entry> = { get: (e) => e.slot, set: (e, slot) => (e.slot = slot) };

/**
 * The queued faults, in the order they match: a request takes a shot of the first one that
 * matches it (path, method, account, a status its operation documents). They are filed by what
 * they match on, so that a request looks only at faults that could match it, whatever else waits:
 * by pattern (an exact path by the path, a prefix by the prefix, looked up for the lengths of
 * prefix the queue holds), then method, account and status, each bucket in queue order. Among the
 * first faults of the buckets that match, the one queued first is the first that matches in the
 * whole queue: the order is the queue's, as when the queue was scanned.
 */
export class FaultQueue {
  /** Every waiting fault, in queue order. */
  private order = new SlotList<Entry>(ENTRY_SLOT);
  /** Patterns without `*`, by the path they match. */
  private readonly exact = new Map<string, ByMethod>();
  /** Patterns ending with `*`, by their prefix (the pattern without its `*`). */
  private readonly prefixes = new Map<string, ByMethod>();
  /** How many prefixes of each length `prefixes` holds (a request looks up its path cut at these lengths). */
  private readonly prefixLengths = new Map<number, number>();
  /** The buckets of each account (null-key buckets aside), for `forget`. */
  private readonly accounts = new Map<string, Set<Bucket>>();
  private nextSeq = 0;
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
    if (this.order.size >= this.maxQueued) {
      throw fail('invalid_request', {
        message: `The fault queue is full: it holds ${this.maxQueued} faults, the scenario's limits.max_queued_faults. Clear it (DELETE /_sim/faults), let requests take the faults, or raise the limit.`,
      });
    }
    this.enqueue(fault);
    return this.shots;
  }

  /**
   * Takes one shot of the first fault matching the request, if any; `documented`: the statuses the
   * request's operation documents. An error the contract does not document for this operation
   * (402 on a GET) never matches it.
   */
  take(method: string, path: string, apiKey: string | null, documented: readonly number[]): QueuedFault | undefined {
    if (this.order.size === 0) return undefined;
    const methods = [method, null];
    const keys = apiKey === null ? [null] : [apiKey, null];
    const statusMatches = (status: number) => status === 0 || documented.includes(status);
    let first: Entry | undefined;
    for (const byMethod of this.patternsOf(path)) first = earliest(first, byMethod, methods, keys, statusMatches);
    return first && this.shoot(first);
  }

  /** Takes one shot of the first media fault (a `/cdn/...` pattern) matching a download, if any. */
  takeMedia(method: string, path: string): QueuedFault | undefined {
    if (this.order.size === 0) return undefined;
    // A HEAD is a GET without its body, as Express routes it.
    const asMethod = method === 'HEAD' ? 'GET' : method;
    const methods = asMethod === method ? [null, method] : [null, asMethod, method];
    let first: Entry | undefined;
    for (const byMethod of this.patternsOf(path, MEDIA_PREFIX)) first = earliest(first, byMethod, methods, null, ANY_STATUS);
    return first && this.shoot(first);
  }

  /** The pattern groups that match a path: its exact one, and each prefix of it the queue holds (only those starting with `within`). */
  private patternsOf(path: string, within = ''): ByMethod[] {
    const found: ByMethod[] = [];
    if (!path.startsWith(within)) return found;
    const exact = this.exact.get(path);
    if (exact !== undefined) found.push(exact);
    for (const length of this.prefixLengths.keys()) {
      if (length > path.length || length < within.length) continue;
      const prefix = this.prefixes.get(path.slice(0, length));
      if (prefix !== undefined) found.push(prefix);
    }
    return found;
  }

  /** One shot of a waiting fault, the first of its bucket; a fault with none left leaves the queue. */
  private shoot(entry: Entry): QueuedFault {
    const { fault, bucket } = entry;
    this.shots--;
    if (--fault.remaining <= 0) {
      this.order.remove(entry);
      bucket.entries[bucket.head++] = undefined as unknown as Entry;
      if (bucket.head === bucket.entries.length) this.dropBucket(bucket);
      else if (bucket.head > 1024 && bucket.head * 2 > bucket.entries.length) {
        bucket.entries.splice(0, bucket.head);
        bucket.head = 0;
      }
    }
    return fault;
  }

  /** Files a valid fault at the end of the queue. */
  private enqueue(fault: QueuedFault): void {
    const bucket = this.bucketOf(fault);
    const entry: Entry = { fault, seq: this.nextSeq++, slot: -1, bucket };
    bucket.entries.push(entry);
    this.order.push(entry);
    this.shots += fault.remaining;
  }

  /** The bucket a fault is filed in, made when it has none. */
  private bucketOf(fault: QueuedFault): Bucket {
    const prefix = fault.path.endsWith('*');
    const patterns = prefix ? this.prefixes : this.exact;
    const key = prefix ? fault.path.slice(0, -1) : fault.path;
    let byMethod = patterns.get(key);
    if (byMethod === undefined) {
      byMethod = new Map();
      patterns.set(key, byMethod);
      if (prefix) this.prefixLengths.set(key.length, (this.prefixLengths.get(key.length) ?? 0) + 1);
    }
    let byKey = byMethod.get(fault.method);
    if (byKey === undefined) byMethod.set(fault.method, (byKey = new Map<string | null, Map<number, Bucket>>()));
    let byStatus = byKey.get(fault.apiKey);
    if (byStatus === undefined) byKey.set(fault.apiKey, (byStatus = new Map<number, Bucket>()));
    const status = fault.error?.status ?? 0;
    let bucket = byStatus.get(status);
    if (bucket === undefined) {
      bucket = { entries: [], head: 0, pattern: fault.path, method: fault.method, apiKey: fault.apiKey, status };
      byStatus.set(status, bucket);
      if (fault.apiKey !== null) {
        let buckets = this.accounts.get(fault.apiKey);
        if (buckets === undefined) this.accounts.set(fault.apiKey, (buckets = new Set()));
        buckets.add(bucket);
      }
    }
    return bucket;
  }

  /** Unfiles a bucket whose faults have all left, and every map it leaves empty. */
  private dropBucket(bucket: Bucket): void {
    const prefix = bucket.pattern.endsWith('*');
    const patterns = prefix ? this.prefixes : this.exact;
    const key = prefix ? bucket.pattern.slice(0, -1) : bucket.pattern;
    const byMethod = patterns.get(key) as ByMethod;
    const byKey = byMethod.get(bucket.method) as Map<string | null, Map<number, Bucket>>;
    const byStatus = byKey.get(bucket.apiKey) as Map<number, Bucket>;
    byStatus.delete(bucket.status);
    if (bucket.apiKey !== null) {
      const buckets = this.accounts.get(bucket.apiKey) as Set<Bucket>;
      buckets.delete(bucket);
      if (buckets.size === 0) this.accounts.delete(bucket.apiKey);
    }
    if (byStatus.size > 0) return;
    byKey.delete(bucket.apiKey);
    if (byKey.size > 0) return;
    byMethod.delete(bucket.method);
    if (byMethod.size > 0) return;
    patterns.delete(key);
    if (!prefix) return;
    const left = (this.prefixLengths.get(key.length) as number) - 1;
    if (left > 0) this.prefixLengths.set(key.length, left);
    else this.prefixLengths.delete(key.length);
  }

  /** The faults waiting, in the order they match. */
  list(): ({ path: string; method: string | null; status?: number; latency_ms?: number; outcome?: ForcedOutcome; times_left: number; api_key: string | null } & NetworkSpec)[] {
    return this.order.values().map(({ fault: f }) => ({
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

  /**
   * The faults waiting, as plain data, in the order they match (a snapshot). Each fault's own fields
   * are copied (its `remaining` goes down as requests take it); what they hold is never changed, so
   * it is shared rather than copied: a snapshot taken while a compaction runs holds no second copy
   * of the queue's strings (up to 100 MB of them at `max_queued_faults`).
   */
  toState(): QueuedFault[] {
    return this.order.values().map((e) => ({ ...e.fault }));
  }

  /** Puts back the faults `toState` gave, all of them (a state kept under a higher limit included). */
  fromState(faults: readonly QueuedFault[]): void {
    this.clear();
    // A fault of a snapshot without `network` has none.
    for (const f of faults) this.enqueue({ ...structuredClone(f), network: f.network ?? null });
  }

  /** The shots waiting in all. */
  waiting(): number {
    return this.shots;
  }

  /** Drops every fault of one account (its own buckets: those of any account stay). */
  forget(apiKey: string): void {
    const buckets = this.accounts.get(apiKey);
    if (buckets === undefined) return;
    for (const bucket of [...buckets]) {
      for (let i = bucket.head; i < bucket.entries.length; i++) {
        const entry = bucket.entries[i] as Entry;
        this.order.remove(entry);
        this.shots -= entry.fault.remaining;
      }
      this.dropBucket(bucket);
    }
  }

  clear(): void {
    this.order = new SlotList<Entry>(ENTRY_SLOT);
    this.exact.clear();
    this.prefixes.clear();
    this.prefixLengths.clear();
    this.accounts.clear();
    this.shots = 0;
  }
}

/** Any error status (a media fault has none). */
const ANY_STATUS = (): boolean => true;

/**
 * The fault queued first among `first` and the first fault of each bucket of a pattern that
 * matches: its methods, its accounts (null: every account's buckets) and the statuses `statusMatches` takes.
 */
function earliest(
  first: Entry | undefined,
  byMethod: ByMethod,
  methods: readonly (string | null)[],
  keys: readonly (string | null)[] | null,
  statusMatches: (status: number) => boolean,
): Entry | undefined {
  for (const method of methods) {
    const byKey = byMethod.get(method);
    if (byKey === undefined) continue;
    const groups = keys === null ? [...byKey.values()] : keys.map((k) => byKey.get(k));
    for (const byStatus of groups) {
      if (byStatus === undefined) continue;
      for (const [status, bucket] of byStatus) {
        if (!statusMatches(status)) continue;
        const head = bucket.entries[bucket.head] as Entry;
        if (first === undefined || head.seq < first.seq) first = head;
      }
    }
  }
  return first;
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

/** The error a fault with `status` answers with (`type`, `code` and `message` from the request, else the status's defaults). */
export function faultError(request: FaultRequest, status: number): NonNullable<QueuedFault['error']> {
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
  const notTheService = NOT_INJECTABLE.find(({ codes }) => codes.includes(code));
  if (notTheService !== undefined) {
    throw fail('invalid_parameter', {
      param: 'code',
      message: `code '${code}' is ${notTheService.whose}, not an error of the service; a fault cannot inject it.`,
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
