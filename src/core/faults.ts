/**
 * One-shot faults queued through `POST /_sim/faults`: the next matching /v1 requests get the given
 * error instead of their normal answer, and take no effect.
 */
import { ERROR_CATALOGUE, STATUS_OF_TYPE, fail, isErrorCode, type ErrorCode, type ErrorType } from './errors.js';

export interface FaultRequest {
  path: string;
  method?: string | null;
  status: number;
  type?: ErrorType | null;
  code?: string | null;
  message?: string | null;
  times?: number | null;
  api_key?: string | null;
}

export interface QueuedFault {
  path: string;
  method: string | null;
  status: number;
  type: ErrorType;
  code: ErrorCode;
  message: string;
  remaining: number;
  apiKey: string | null;
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

  /** Validates and queues a fault; returns how many shots are now waiting in all. */
  add(request: FaultRequest): number {
    const status = request.status;
    const defaultCode = DEFAULT_CODE_OF_STATUS[status];
    if (!defaultCode) {
      throw fail('invalid_parameter', {
        param: 'status',
        message: `status must be one of ${Object.keys(DEFAULT_CODE_OF_STATUS).join(', ')}; got ${status}.`,
      });
    }
    const code = request.code ?? (request.type ? undefined : defaultCode);
    const resolvedCode = code ?? codeForType(request.type as ErrorType, status);
    if (!isErrorCode(resolvedCode)) {
      throw fail('invalid_parameter', {
        param: 'code',
        message: `code must be one of the catalogue's codes (see ErrorCode in openapi.yaml); got '${resolvedCode}'.`,
      });
    }
    const type = request.type ?? ERROR_CATALOGUE[resolvedCode].type;
    const expected = status === 404 ? 'invalid_request_error' : (Object.keys(STATUS_OF_TYPE) as ErrorType[]).find((t) => STATUS_OF_TYPE[t] === status);
    if (type !== expected) {
      throw fail('invalid_parameter', {
        param: 'type',
        message: `type '${type}' does not go with status ${status}; use '${expected}'.`,
      });
    }
    const times = request.times ?? 1;
    this.faults.push({
      path: request.path,
      method: request.method ? request.method.toUpperCase() : null,
      status,
      type,
      code: resolvedCode,
      message: request.message ?? `${ERROR_CATALOGUE[resolvedCode].message} (injected by a queued fault)`,
      remaining: times,
      apiKey: request.api_key ?? null,
    });
    return this.waiting();
  }

  /** Takes one shot of the first fault matching the request, if any. */
  take(method: string, path: string, apiKey: string | null): QueuedFault | undefined {
    const index = this.faults.findIndex(
      (f) =>
        (f.method === null || f.method === method) &&
        (f.apiKey === null || f.apiKey === apiKey) &&
        (f.path.endsWith('*') ? path.startsWith(f.path.slice(0, -1)) : path === f.path),
    );
    if (index < 0) return undefined;
    const fault = this.faults[index] as QueuedFault;
    if (--fault.remaining <= 0) this.faults.splice(index, 1);
    return fault;
  }

  waiting(): number {
    return this.faults.reduce((sum, f) => sum + f.remaining, 0);
  }

  forget(apiKey: string): void {
    this.faults = this.faults.filter((f) => f.apiKey !== apiKey);
  }

  clear(): void {
    this.faults = [];
  }
}

function codeForType(type: ErrorType, status: number): string {
  const match = (Object.keys(ERROR_CATALOGUE) as ErrorCode[]).find(
    (c) => ERROR_CATALOGUE[c].type === type && ERROR_CATALOGUE[c].status === status,
  );
  return match ?? DEFAULT_CODE_OF_STATUS[status] ?? 'internal_error';
}
