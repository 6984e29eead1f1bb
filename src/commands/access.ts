/**
 * The control token a started server uses, from `--control-token` and the listen address: the
 * given one; none on a loopback address; else one generated at start (and printed), so that a
 * simulator reachable from a network never has an open control API unless told so
 * (`--control-token none`, which prints a warning).
 */
import { randomBytes } from 'node:crypto';
import { controlTokenProblem } from '../http/accessGuard.js';
import { isLoopbackAddress } from '../hostNames.js';

export interface ControlAccess {
  /** The token /_sim needs; undefined when it needs none. */
  token: string | undefined;
  /** Whether the token was generated at start (then it is printed). */
  generated: boolean;
  /** `--control-token none`: the control API is open on purpose (a warning is printed). */
  open: boolean;
}

/** The warning line of `--control-token none`, for a server listening at `address`. */
export function openControlWarning(address: string): string {
  return `--control-token none: the control API (/_sim: reset, shutdown, faults, the journal with its keys and prompts) needs no token; anyone who can reach ${address} can use it.`;
}

/**
 * Throws an Error with the message to print (a usage error) for a token that cannot be used (one
 * that cannot be sent, or is too short), naming where it was given: `--control-token`, or
 * `SIM_CONTROL_TOKEN` when `fromEnv`.
 */
export function controlAccess(opts: { host: string; controlToken?: string }, fromEnv = false): ControlAccess {
  const given = opts.controlToken === '' ? undefined : opts.controlToken;
  if (given === 'none') return { token: undefined, generated: false, open: true };
  if (given !== undefined) {
    const problem = controlTokenProblem(given);
    if (problem !== undefined) throw new Error(`${fromEnv ? 'SIM_CONTROL_TOKEN' : '--control-token'} ${problem}, or give none for no token.`);
    return { token: given, generated: false, open: false };
  }
  if (isLoopbackAddress(opts.host)) return { token: undefined, generated: false, open: false };
  return { token: randomBytes(24).toString('base64url'), generated: true, open: false };
}
