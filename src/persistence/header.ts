/**
 * The state file's header, the first line of every state file (format.ts has the rest of the
 * format): what it holds, how it is written, and the error of a file that is not what the format
 * says. A module of its own so that the snapshot (snapshot.ts) and the file's lines (format.ts)
 * both build on it.
 */
import type { ClockMode } from '../core/clock.js';
import type { Scenario } from '../core/scenario.js';
import type { ShardSpec } from '../core/shard.js';
import { JsonLinesError } from '../jsonLine.js';

export const STATE_FORMAT = 1;

export interface StateHeader {
  state: typeof STATE_FORMAT;
  /** The version of the simulator that began the file. */
  version: string;
  /** The scenario in use, resolved (`extends` applied, every field present). */
  scenario: Scenario;
  /** The seed in use. */
  seed: number;
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
  clock: { mode: ClockMode; speed: number; start: string; anchor: number };
  /** The media address written into responses (a restore on the same address stores the same answers). */
  cdn_url: string;
  /** The shard whose accounts the file holds (`--shard I/N`); null or absent: a simulator running alone. */
  shard?: ShardSpec | null;
}

export function formatStateHeader(header: StateHeader): string {
  return JSON.stringify(header);
}

/** A state file that cannot be used as it is: the line (1-based) and what is wrong with it. */
export class StateFormatError extends JsonLinesError {
  override readonly name = 'StateFormatError';
}
