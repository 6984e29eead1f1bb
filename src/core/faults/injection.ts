/**
 * Request injection: what the simulator itself does to a /v1 request before handling it. A fault
 * queued through `POST /_sim/faults` (`faults.ts`) comes first; otherwise one of the scenario's HTTP
 * faults may answer instead (`http.faults`, each with its probability); and in realtime mode the
 * scenario's `http.latency` adds a wait before the answer is sent. A queued fault may also force
 * the outcome of what the request creates (`ForcedOutcome`, applied by `fate.ts` and claim linking).
 *
 * An injected error answers in place of the request: it spends no rate-limit token, and nothing is
 * created or stored. A create's prompt triggers (`promptTriggers.ts`), read later in the order of
 * checks, force the same outcomes and answer with the same errors. A network fault (`network.ts`) loses the answer instead: before the request
 * takes effect (as an injected error, nothing happens) or after (the request is handled whole).
 */
import type { Account } from '../accounts/account.js';
import type { ClockMode } from '../time/clock.js';
import { SimError, fail } from '../errors.js';
import type { ForcedOutcome } from '../generations/fate.js';
import type { FaultQueue, QueuedFault } from './faults.js';
import { describeNetwork, networkFault, type NetworkFault } from './network.js';
import { matchesPath } from '../pathPattern.js';
import { createStream } from '../random.js';
import { sample } from '../scenario/distribution.js';
import type { Scenario } from '../scenario/scenario.js';

/** What the simulator does to one request. */
export interface RequestInjection {
  /** An injected error to answer with instead. */
  error: SimError | null;
  /** A network fault that loses the answer (before or after the request takes effect). */
  network: NetworkFault | null;
  /** Milliseconds to wait before answering (wall-clock time). */
  delayMs: number;
  /** An outcome forced on what the request creates. */
  forcedOutcome: ForcedOutcome | null;
  /** Why, for the journal. */
  note: string | undefined;
}

/** What injection reads of the simulator. */
export interface InjectionSource {
  readonly faults: FaultQueue;
  readonly scenario: Scenario;
  readonly seed: number;
  readonly clock: { readonly mode: ClockMode };
}

/**
 * Draws a request's injection. The account's request stream is drawn exactly twice per request,
 * so what a request gets depends only on how many requests that account made before it.
 * `documented`: the statuses the request's operation documents (a queued error it does not
 * document never matches it; empty for a route the contract does not have).
 */
export function drawInjection(
  source: InjectionSource,
  account: Account,
  method: string,
  path: string,
  documented: readonly number[],
): RequestInjection {
  const faultDraw = account.requestStream.next();
  const latencyDraw = account.requestStream.next();
  const injection: RequestInjection = { error: null, network: null, delayMs: 0, forcedOutcome: null, note: undefined };
  const queued = source.faults.take(method, path, account.key, documented);
  if (queued) {
    injection.delayMs += queued.latencyMs;
    if (queued.error) {
      const e = queued.error;
      injection.note = `queued fault: ${e.status} ${e.code}`;
      injection.error = queuedFaultError(e);
    } else if (queued.network) {
      injection.network = queued.network;
      injection.note = `queued fault: ${describeNetwork(queued.network)}`;
    } else if (queued.outcome) {
      injection.forcedOutcome = queued.outcome;
      injection.note = `queued fault: forced outcome ${JSON.stringify(queued.outcome)}`;
    } else if (queued.latencyMs > 0) {
      injection.note = `queued fault: ${queued.latencyMs} ms latency`;
    }
  } else {
    scenarioFault(source.scenario, method, path, faultDraw, injection);
  }
  const latency = source.scenario.http.latency;
  if (latency && source.clock.mode === 'realtime') {
    injection.delayMs += Math.round(sample(latency, createStream(source.seed, 'latency', latencyDraw)));
  }
  return injection;
}

/**
 * The answer of a queued fault's error (a 429 with `Retry-After: 1`); a prompt's
 * `[sim:error=STATUS]` answers with it too (`promptTriggers.ts`).
 */
export function queuedFaultError(e: NonNullable<QueuedFault['error']>): SimError {
  return new SimError(e.code, {
    type: e.type,
    status: e.status,
    message: e.message,
    headers: e.status === 429 ? { 'Retry-After': '1' } : {},
  });
}

/** The scenario's HTTP fault the draw falls on, if any: the rules that match share [0, 1) in order. */
function scenarioFault(scenario: Scenario, method: string, path: string, draw: number, injection: RequestInjection): void {
  let cumulative = 0;
  for (const rule of scenario.http.faults) {
    if (rule.method && rule.method !== method) continue;
    if (rule.path && !matchesPath(rule.path, path)) continue;
    cumulative += rule.probability;
    if (draw < cumulative) {
      const network = networkFault(rule);
      if (network) {
        injection.network = network;
        injection.note = `scenario '${scenario.name}' fault: ${describeNetwork(network)} with probability ${rule.probability}`;
        return;
      }
      injection.note = `scenario '${scenario.name}' fault: ${rule.status} with probability ${rule.probability}`;
      injection.error =
        rule.status === 429
          ? fail('rate_limit_exceeded', {
              message: `Too many requests (injected by scenario '${scenario.name}'). Retry after the Retry-After header's seconds.`,
              headers: { 'Retry-After': '1' },
            })
          : fail('internal_error', {
              message: `An internal error occurred (injected by scenario '${scenario.name}'). Retry with exponential backoff.`,
            });
      return;
    }
  }
}
