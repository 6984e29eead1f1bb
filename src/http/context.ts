/**
 * Per-request state the middlewares hand on to each other, kept beside the request (not on it).
 */
import type { Request, Response } from 'express';
import type { Account } from '../core/account.js';
import type { SimError } from '../core/errors.js';
import type { ForcedOutcome } from '../core/pipeline.js';

export interface RequestContext {
  requestId: string;
  /** The authenticated account (/v1 only). */
  account?: Account;
  /** The account's clock at arrival (ms), after due transitions: the time the checks use. */
  arrivedAtMs?: number;
  /** The body as read: a parse problem to report at its turn in the order of checks. */
  bodyError?: SimError;
  /** Set on creates, for the journal. */
  negativePromptEffective?: string | null;
  /** An outcome forced on the generation this request creates (a queued fault). */
  forcedOutcome?: ForcedOutcome;
  /** Why the simulator itself answered (a queued or scenario fault). */
  fault?: string;
  /** The endpoint the request addresses, once worked out (see endpointOf in v1.ts). */
  endpoint?: string;
  /** The statuses its operation documents (null: not a route of the contract), once looked up. */
  documentedStatuses?: ReadonlySet<number> | null;
  /** A problem the validator found matching the route, reported at the parameters' turn. */
  validatorProblem?: unknown;
}

/**
 * The context rides on the request under a private symbol (invisible to enumeration and JSON): a
 * property read, where a WeakMap costs a hash lookup per call and an ephemeron per request in GC.
 */
const CONTEXT = Symbol('simulator request context');

type WithContext = Request & { [CONTEXT]?: RequestContext };

export function context(req: Request): RequestContext {
  return ((req as WithContext)[CONTEXT] ??= newContext());
}

/** Every field from the start: one object shape for all requests, whichever fields they set. */
function newContext(): RequestContext {
  return {
    requestId: '',
    account: undefined,
    arrivedAtMs: undefined,
    bodyError: undefined,
    negativePromptEffective: undefined,
    forcedOutcome: undefined,
    fault: undefined,
    endpoint: undefined,
    documentedStatuses: undefined,
    validatorProblem: undefined,
  };
}

/** Gives the request its id, in the context (for the journal) and in the X-Request-Id header. */
export function assignRequestId(req: Request, res: Response, id: string): void {
  context(req).requestId = id;
  res.setHeader('X-Request-Id', id);
}
