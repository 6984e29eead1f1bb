/**
 * What every /v1 request goes through before its route, in contract.md's order: journal,
 * authentication, faults (queued and scenario), rate limit, idempotent replay.
 */
import type { Request, RequestHandler, Response } from 'express';
import { SimError, fail } from '../core/errors.js';
import { requestFingerprint } from '../core/idempotency.js';
import { matchesPath } from '../core/pathPattern.js';
import { createStream } from '../core/random.js';
import { sample } from '../core/scenario.js';
import type { Account } from '../core/account.js';
import type { Simulator } from '../core/simulator.js';
import { assignRequestId, context } from './context.js';

/** Records every /v1 request in the journal when its response is finished. */
export function journal(sim: Simulator): RequestHandler {
  return (req, res, next) => {
    const ctx = context(req);
    const path = req.originalUrl;
    const method = req.method;
    res.on('finish', () => {
      const account = ctx.account?.key ?? null;
      sim.journal.record({
        method,
        path,
        status: res.statusCode,
        account,
        atMs: ctx.arrivedAtMs ?? sim.timeMsOf(account),
        request_id: ctx.requestId,
        negative_prompt_effective: ctx.negativePromptEffective,
        fault: ctx.fault,
      });
    });
    next();
  };
}

export function authenticate(sim: Simulator): RequestHandler {
  return (req, res, next) => {
    const ctx = context(req);
    let account;
    try {
      account = sim.authenticate(req.headers.authorization);
    } catch (e) {
      assignRequestId(req, res, sim.nextRequestId());
      throw e;
    }
    assignRequestId(req, res, sim.nextRequestId(account));
    ctx.account = account;
    ctx.arrivedAtMs = sim.sync(account);
    next();
  };
}

/**
 * Queued faults (POST /_sim/faults) and the scenario's probabilistic HTTP faults and latency. The
 * request stream of the account is drawn exactly twice per request, so a request's fault depends
 * only on how many requests that account made before it.
 */
export function faults(
  sim: Simulator,
  options: {
    sleep: (ms: number) => Promise<void>;
    /** The statuses the contract documents for a request's operation (undefined: unknown route). */
    documentedStatuses: (req: Request) => ReadonlySet<number> | undefined;
  },
): RequestHandler {
  return (req, _res, next) => {
    const ctx = context(req);
    const account = ctx.account;
    if (!account) return next();
    const faultDraw = account.requestStream.next();
    const latencyDraw = account.requestStream.next();
    const path = endpointOf(req);
    let error: SimError | undefined;
    const documented = options.documentedStatuses(req);
    const queued = sim.faults.take(req.method, path, account.key, (status) => documented?.has(status) ?? false);
    if (queued?.outcome) {
      ctx.forcedOutcome = queued.outcome;
      ctx.fault = `queued fault: forced outcome ${JSON.stringify(queued.outcome)}`;
    }
    if (queued && !queued.error && queued.latencyMs > 0 && !queued.outcome) ctx.fault = `queued fault: ${queued.latencyMs} ms latency`;
    if (queued?.error) {
      const e = queued.error;
      ctx.fault = `queued fault: ${e.status} ${e.code}`;
      error = new SimError(e.code, {
        type: e.type,
        status: e.status,
        message: e.message,
        headers: e.status === 429 ? { 'Retry-After': '1' } : {},
      });
    } else if (!queued) {
      let cumulative = 0;
      for (const rule of sim.scenario.http.faults) {
        if (rule.method && rule.method !== req.method) continue;
        if (rule.path && !matchesPath(rule.path, path)) continue;
        cumulative += rule.probability;
        if (faultDraw < cumulative) {
          ctx.fault = `scenario '${sim.scenario.name}' fault: ${rule.status} with probability ${rule.probability}`;
          error =
            rule.status === 429
              ? fail('rate_limit_exceeded', {
                  message: `Too many requests (injected by scenario '${sim.scenario.name}'). Retry after the Retry-After header's seconds.`,
                  headers: { 'Retry-After': '1' },
                })
              : fail('internal_error', {
                  message: `An internal error occurred (injected by scenario '${sim.scenario.name}'). Retry with exponential backoff.`,
                });
          break;
        }
      }
    }
    const latency = sim.scenario.http.latency;
    const scenarioDelayMs =
      latency && sim.clock.mode === 'realtime' ? Math.round(sample(latency, createStream(sim.seed, 'latency', latencyDraw))) : 0;
    const delayMs = scenarioDelayMs + (queued?.latencyMs ?? 0);
    const proceed = (): void => next(error);
    if (delayMs > 0) void options.sleep(delayMs).then(proceed);
    else proceed();
  };
}

/** Spends a token of the account's bucket; sets the X-RateLimit-* headers; 429 when empty. */
export function rateLimit(sim: Simulator): RequestHandler {
  return (req, res, next) => {
    const { account, arrivedAtMs: now } = context(req);
    if (!account || now === undefined) return next();
    const bucket = account.bucketFor(req.method, endpointOf(req), now);
    const result = bucket.take(now);
    res.setHeader('X-RateLimit-Limit', String(result.limit));
    res.setHeader('X-RateLimit-Remaining', String(result.remaining));
    res.setHeader('X-RateLimit-Reset', String(result.resetSeconds));
    if (!result.allowed) {
      return next(
        fail('rate_limit_exceeded', {
          message: `Rate limit of ${result.limit} requests exceeded. Retry after ${result.retryAfterSeconds} s (of virtual time).`,
          headers: { 'Retry-After': String(result.retryAfterSeconds) },
        }),
      );
    }
    next();
  };
}

interface IdempotencyTicket {
  endpoint: string;
  key: string;
  fingerprint: string;
}

/** The idempotency key under which a create stores its 200 response. */
const tickets = new WeakMap<Response, IdempotencyTicket>();

/**
 * Replays stored successes for a repeated Idempotency-Key, and serialises requests that share a
 * key, so that of concurrent duplicates one creates and the rest replay.
 */
export function idempotency(sim: Simulator): RequestHandler {
  const locks = new Map<string, Promise<void>>();
  const replayOrReserve = async (req: Request, res: Response, next: (err?: unknown) => void, account: Account, key: string, arrivedAtMs: number) => {
    const endpoint = endpointOf(req);
    const lockKey = `${account.key}\u0000${endpoint}\u0000${key}`;
    const previous = locks.get(lockKey);
    let release!: () => void;
    const mine = new Promise<void>((resolve) => (release = resolve));
    const chain = (previous ?? Promise.resolve()).then(() => mine);
    locks.set(lockKey, chain);
    const done = (): void => {
      release();
      if (locks.get(lockKey) === chain) locks.delete(lockKey);
    };
    res.once('finish', done);
    res.once('close', done);
    if (previous) await previous;

    const fingerprint = context(req).bodyError ? '\u0000unparseable' : requestFingerprint(req.body);
    const found = account.idempotency.lookup(endpoint, key, fingerprint, arrivedAtMs);
    if (found.kind === 'replay') {
      res.setHeader('Idempotent-Replayed', 'true');
      res.status(found.status).json(found.body);
      return;
    }
    if (found.kind === 'conflict') {
      return next(
        fail('idempotency_key_reused', {
          param: 'Idempotency-Key',
          message: `Idempotency-Key '${key}' was already used with a different request on ${endpoint}. Use a new key for a new request.`,
        }),
      );
    }
    tickets.set(res, { endpoint, key, fingerprint });
    next();
  };
  // Synchronous unless the request is a POST with a key: most requests pass straight through.
  return (req, res, next) => {
    const key = req.headers['idempotency-key'];
    const { account, arrivedAtMs } = context(req);
    if (req.method !== 'POST' || typeof key !== 'string' || key === '' || !account || arrivedAtMs === undefined) return next();
    return replayOrReserve(req, res, next, account, key, arrivedAtMs);
  };
}

/** Stores a create's 200 response under its Idempotency-Key, if it came with one. */
export function rememberIdempotent(res: Response, account: Account, body: unknown, nowMs: number): void {
  const ticket = tickets.get(res);
  if (!ticket) return;
  // Stored once sent as a 200: a body that failed response validation (a 500) is never replayed.
  res.once('finish', () => {
    if (res.statusCode === 200) account.idempotency.store(ticket.endpoint, ticket.key, ticket.fingerprint, 200, body, nowMs);
  });
}

/** The endpoint a request addresses, without a trailing slash (`/v1/videos/` is `/v1/videos`). */
function endpointOf(req: Request): string {
  const ctx = context(req);
  if (ctx.endpoint === undefined) {
    const path = req.baseUrl + req.path;
    ctx.endpoint = path.length > 1 && path.endsWith('/') ? path.replace(/\/+$/, '') : path;
  }
  return ctx.endpoint;
}
