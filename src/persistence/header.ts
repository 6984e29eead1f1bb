/**
 * The state file's header, the first line of every state file (stateLines.ts has the rest of the
 * format): what it holds, how it is written, and the error of a file that is not what the format
 * says. A module of its own so that the snapshot (snapshot.ts) and the file's lines (stateLines.ts)
 * both build on it.
 */
import type { ClockMode } from '../core/time/clock.js';
import type { RunHeader } from '../core/simulator/openSimulator.js';
import { JsonLinesError } from '../jsonLine.js';

export const STATE_FORMAT = 1;

/** A state file's header: the run it holds (see `RunHeader`, which a transcript's header shares), and how to go on with it. */
export interface StateHeader extends RunHeader {
  state: typeof STATE_FORMAT;
  /** The version of the simulator that began the file. */
  version: string;
  /**
   * What the simulator was started with beside its scenario (a command line's `--seed`, `--clock`,
   * `--speed`): they outlive a global reset, so a restored simulator keeps them too.
   */
  overrides: { seed?: number; clock?: ClockMode; speed?: number };
  /**
   * The virtual clock: virtual time = `start` + (wall − `anchor`) × `speed` (realtime) plus every
   * advance, with `anchor` the wall-clock reading (epoch ms) at which the clock began. Wall time
   * keeps counting while the process is down.
   */
  clock: RunHeader['clock'] & { anchor: number };
}

export function formatStateHeader(header: StateHeader): string {
  return JSON.stringify(header);
}

/** A state file that cannot be used as it is: the line (1-based) and what is wrong with it. */
export class StateFormatError extends JsonLinesError {
  override readonly name = 'StateFormatError';
}
