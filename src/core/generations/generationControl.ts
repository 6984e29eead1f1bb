/**
 * What the control API shows and does beyond the service: the generations across accounts
 * (`/_sim/generations`) and live control of one generation (advance,
 * finish, fail, cancel: forced transitions through its state machine, at its account's current
 * time).
 */
import type { Account } from '../accounts/account.js';
import { clip, fail } from '../errors.js';
import { failedFate } from './fate.js';
import { controlView, type Generation } from './generation.js';
import * as lifecycle from './lifecycle.js';
import { IN_FLIGHT_STATUSES, RESOLVED_STATUSES, inWords, type TimedStage, type VideoStatus } from './pipeline.js';
import type { Simulator } from '../simulator/simulator.js';
import { REQUEST_DEFAULTS } from '../../generated/request-defaults.js';

export interface GenerationsInput {
  apiKey?: string | null;
  status?: VideoStatus | null;
  limit?: number;
  after?: string | null;
  changedSince?: number | null;
}

/**
 * Generations across accounts (or of one): in creation order, or, with `changedSince`, those
 * changed after that cursor, in the order of their latest change (what a live view needs to fetch,
 * and nothing more). `cursor` is where the next `changedSince` starts.
 */
export function controlGenerations(sim: Simulator, input: GenerationsInput) {
  sim.catchUpAll();
  // `after` names a stored generation; only those created after it are listed.
  let after: Generation | null = null;
  if (input.after != null) {
    after = sim.store.get(input.after) ?? null;
    if (!after) {
      throw fail('invalid_parameter', { param: 'after', message: `'after' must be a stored generation id; '${clip(input.after)}' is not.` });
    }
  }
  const page = sim.store.list(
    { account: input.apiKey || null, status: input.status || null, after, changedSince: input.changedSince ?? null },
    input.limit ?? REQUEST_DEFAULTS.simGenerations.limit,
  );
  return {
    object: 'list' as const,
    data: page.data.map((g) => controlView(g, sim.cdnUrl)),
    has_more: page.hasMore,
    cursor: page.cursor,
  };
}

/** One generation; with `apiKey`, only one of that account's (another's is not found). */
export function controlGeneration(sim: Simulator, id: string, apiKey: string | null = null) {
  sim.catchUpAll();
  return controlView(storedGeneration(sim, id, apiKey), sim.cdnUrl);
}

/** Its current stage ends now: it enters the next one, or resolves to its fate. Nothing else moves. */
export function advanceGeneration(sim: Simulator, id: string, apiKey: string | null = null) {
  return forceTransition(sim, id, apiKey, (account, g, now) => lifecycle.endStageNow(sim, account, g, now));
}

/** It walks all its remaining stages now and resolves to its fate. */
export function finishGeneration(sim: Simulator, id: string, apiKey: string | null = null) {
  return forceTransition(sim, id, apiKey, (account, g, now) => lifecycle.finishNow(sim, account, g, now));
}

/**
 * It fails now at its current stage, with `code` or the code a scenario failure there gives (at
 * output verification, an output rejection); 400 `invalid_parameter` when the stage cannot fail or
 * the code is not one of the stage's.
 */
export function failGeneration(sim: Simulator, id: string, code: string | null, apiKey: string | null = null) {
  return forceTransition(sim, id, apiKey, (account, g, now) => {
    const stage = g.fate.stageNames[g.stageIndex] as TimedStage;
    lifecycle.failNow(sim, account, g, failedFate(sim.scenario, g.fate, stage, code), now);
  });
}

/** Cancels it as `DELETE /v1/videos/{id}` would (the same cancel table), answering the whole generation. */
export function cancelGeneration(sim: Simulator, id: string, apiKey: string | null = null) {
  return forceTransition(sim, id, apiKey, (account, g, now) => {
    lifecycle.cancel(sim, account, g, now);
  });
}

/**
 * Applies a forced transition to an in-flight generation at its account's current time, once
 * every transition due by then has been applied; answers the generation as the control API shows
 * it. 404 for an unknown id, and for a generation of another account than `apiKey` (when given:
 * a call scoped to one account never reaches another's); 400 `generation_resolved` for a resolved one.
 */
function forceTransition(sim: Simulator, id: string, apiKey: string | null, transition: (account: Account, g: Generation, nowMs: number) => void) {
  const found = sim.store.get(id);
  if (found && apiKey !== null && found.account !== apiKey) throw notStored(id);
  // Not a use of the account by its client (as a media file or a control view is not): it is not
  // made the most recently used, so a refused call (not kept in a state file) changes no eviction order.
  const account = found && sim.accounts.peek(found.account);
  const now = account ? sim.catchUp(account) : 0;
  if (!found || !account || found.evicted) throw notStored(id);
  if (RESOLVED_STATUSES.has(found.status)) {
    throw fail('generation_resolved', {
      message: `Generation ${id} has already resolved as '${found.status}'; only a ${IN_FLIGHT_IN_WORDS} generation can be moved.`,
    });
  }
  transition(account, found, now);
  return controlView(found, sim.cdnUrl);
}

const IN_FLIGHT_IN_WORDS = inWords(IN_FLIGHT_STATUSES, 'or');

function storedGeneration(sim: Simulator, id: string, apiKey: string | null): Generation {
  const g = sim.store.get(id);
  if (!g || (apiKey !== null && g.account !== apiKey)) throw notStored(id);
  return g;
}

function notStored(id: string) {
  return fail('resource_not_found', { param: 'id', message: `No generation '${clip(id)}' is stored in the simulator.` });
}
