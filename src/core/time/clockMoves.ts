/**
 * Moving the simulator's clock: the global one, or one account's (`POST /_sim/clock/advance`),
 * by some seconds or to an instant, applying every transition that falls due.
 */
import type { Account } from '../accounts/account.js';
import type { Accounts } from '../accounts/accounts.js';
import { keyRefusal } from '../accounts/auth.js';
import { secondsToMs, type ClockState, type VirtualClock } from './clock.js';
import { fail } from '../errors.js';
import * as lifecycle from '../generations/lifecycle.js';
import type { Scenario } from '../scenario/scenario.js';

/** The furthest one clock move goes (the most `seconds` of `POST /_sim/clock/advance` takes). */
const MAX_ADVANCE_MS = 31_536_000_000;

/** The simulator's clock and accounts, as a clock move reads them. */
interface Clocks {
  readonly clock: VirtualClock;
  readonly accounts: Accounts;
}

/** What a clock move needs of the simulator. */
interface Moved extends Clocks {
  readonly scenario: Scenario;
  account(key: string): Account;
  catchUp(account: Account): number;
  catchUpAll(): void;
}

/**
 * Moves time forward (one account's, with `apiKey`) and applies every transition that falls due.
 * An account's clock moves only for a key the scenario accepts (it makes the account when it is
 * new); any other key is 400 `invalid_parameter`, param `api_key`, and makes nothing.
 */
export function advance(sim: Moved, seconds: number, apiKey?: string | null): ClockState {
  const ms = secondsToMs(seconds);
  if (apiKey) {
    refuseClockKey(sim, apiKey);
    const account: Account = sim.account(apiKey);
    account.offsetMs += ms;
    sim.catchUp(account);
    return clockState(sim, apiKey);
  }
  sim.clock.advance(ms);
  sim.catchUpAll();
  return clockState(sim);
}

/**
 * Moves time (one account's, with `apiKey`) forward to the instant `toMs`, applying every
 * transition that falls due; stays where it is when it is already there or past it. So the same
 * move can be sent twice, or to every shard, and every clock ends at that instant.
 */
export function advanceTo(sim: Moved, toMs: number, apiKey?: string | null): ClockState {
  if (apiKey) refuseClockKey(sim, apiKey);
  const behindMs = toMs - (apiKey ? sim.clock.now() + (sim.accounts.peek(apiKey)?.offsetMs ?? 0) : sim.clock.now());
  if (behindMs > MAX_ADVANCE_MS) {
    throw fail('invalid_parameter', {
      param: 'to',
      message: `'to' is ${behindMs / 1000} seconds ahead of the clock; a move goes at most ${MAX_ADVANCE_MS / 1000} seconds (a year) ahead.`,
    });
  }
  return behindMs > 0 ? advance(sim, behindMs / 1000, apiKey) : clockState(sim, apiKey);
}

/** 400 `invalid_parameter`, param `api_key`, for a key the scenario refuses: it has no clock to move. */
function refuseClockKey(sim: Moved, apiKey: string): void {
  const refused = keyRefusal(sim.scenario, apiKey);
  if (refused === undefined) return;
  const shown = apiKey.length > 100 ? `${apiKey.slice(0, 100)}…` : apiKey;
  throw fail('invalid_parameter', {
    param: 'api_key',
    message: `Scenario '${sim.scenario.name}' refuses the API key '${shown}' (${refused.code}), so it has no account whose clock could move: ${refused.message}`,
  });
}

/** The global clock, or an account's (the global one for a key never used). */
export function clockState(sim: Clocks, apiKey?: string | null): ClockState {
  return sim.clock.state(apiKey ? (sim.accounts.peek(apiKey)?.offsetMs ?? 0) : 0);
}

/** `account`'s virtual time at the global time `globalNowMs`, once every transition due by then has been applied. */
export function catchUpAt(sim: lifecycle.PipelineParts, account: Account, globalNowMs: number): number {
  const now = account.now(globalNowMs);
  const { scheduler } = account;
  const due = scheduler.peekDue();
  if (due !== undefined && due <= now) scheduler.runUntil(now, (g, at) => lifecycle.endStage(sim, account, g, at));
  return now;
}
