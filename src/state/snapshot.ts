/**
 * A snapshot: the core's state as plain data (`Simulator.toState`), the line that stands for every
 * request before it in a compacted state file:
 *
 *   {"snapshot":{"format":1,"version":"0.1.0","compacted_at":"2026-05-04T10:00:00.000Z","seq":1234,
 *    "state":{"clock_advanced_ms":...,"requests":...,"accounts":[...],"store":{...},"journal":[...],"faults":[...]}}}
 *
 * Formatting, checking and loading only (no files: compact.ts and store.ts write them).
 *
 * A snapshot is tied to its format (`format`): the shape of the core's state. Request lines replay
 * on any version of the simulator (a version that answers differently says so); a snapshot loads
 * only on versions that read its format, so a version that does not is refused with what to do.
 */
import { isoTime } from '../core/clock.js';
import type { Simulator } from '../core/simulator.js';
import type { CoreState } from '../core/simulatorState.js';
import { SIMULATOR_VERSION } from '../version.js';
import { STATE_FORMAT, StateFormatError, formatStateHeader, type StateHeader } from './format.js';

/** The format of the snapshot line this version writes and reads. */
export const SNAPSHOT_FORMAT = 1;

export interface Snapshot {
  format: typeof SNAPSHOT_FORMAT;
  /** The version of the simulator that took it. */
  version: string;
  /** When it was taken (wall clock, ISO). */
  compacted_at: string;
  /** The `seq` of the last request it stands for (the lines after it go on from there). */
  seq: number;
  state: CoreState;
}

/** The core's state now, as a snapshot standing for requests up to `seq`, taken at wall-clock time `wallMs`. */
export function takeSnapshot(core: Simulator, seq: number, wallMs: number): Snapshot {
  return { format: SNAPSHOT_FORMAT, version: SIMULATOR_VERSION, compacted_at: isoTime(wallMs), seq, state: core.toState() };
}

/** The header of a state file for the core's current run. `anchor`: the wall-clock reading its clock began at. */
export function stateHeaderOf(core: Simulator, overrides: StateHeader['overrides'], anchor: number): StateHeader {
  return {
    state: STATE_FORMAT,
    version: SIMULATOR_VERSION,
    scenario: core.scenario,
    seed: core.seed,
    overrides,
    clock: { mode: core.clock.mode, speed: core.clock.speed, start: isoTime(core.clock.startMs), anchor },
    cdn_url: core.cdnUrl,
    shard: core.shard,
  };
}

/** A compacted state file's text: the header, then the snapshot; no request line. */
export function compactedText(header: StateHeader, snapshot: Snapshot): string {
  return `${formatStateHeader(header)}\n${JSON.stringify({ snapshot })}\n`;
}

/**
 * The core's state now as a compacted state file (header and snapshot): what `GET /_sim/state`
 * answers, with or without `--state`. `anchor`: the wall-clock reading its clock began at; `seq`:
 * the requests a state file has recorded in this run (0 without one).
 */
export function compactedStateText(core: Simulator, overrides: StateHeader['overrides'], anchor: number, seq: number): string {
  return compactedText(stateHeaderOf(core, overrides, anchor), takeSnapshot(core, seq, core.hostTimeMs()));
}

/**
 * Checks a snapshot line's value (line `line`): its format first, so that a snapshot of another
 * format is refused with what to do rather than misread. The state inside is checked as it is
 * loaded (`loadSnapshot`).
 */
export function parseSnapshot(value: unknown, line: number): Snapshot {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new StateFormatError(line, 'snapshot: expected an object');
  const s = value as Record<string, unknown>;
  if (s.format !== SNAPSHOT_FORMAT) {
    const by = typeof s.version === 'string' ? s.version : 'unknown';
    throw new StateFormatError(
      line,
      `a snapshot in format ${JSON.stringify(s.format) ?? 'none'} (compacted by version ${by} of the simulator); this version reads snapshot format ${SNAPSHOT_FORMAT}. ` +
        `A snapshot is tied to its format: open the file with version ${by} (npx video-service-sim@${by} --state FILE), or start with a new state file`,
    );
  }
  if (typeof s.version !== 'string') throw new StateFormatError(line, `snapshot.version: expected a string, got ${JSON.stringify(s.version)}`);
  if (typeof s.compacted_at !== 'string' || Number.isNaN(Date.parse(s.compacted_at))) {
    throw new StateFormatError(line, `snapshot.compacted_at: expected an ISO 8601 time, got ${JSON.stringify(s.compacted_at)}`);
  }
  if (!Number.isSafeInteger(s.seq) || (s.seq as number) < 0) throw new StateFormatError(line, `snapshot.seq: expected a whole number, got ${JSON.stringify(s.seq)}`);
  const state = s.state as Record<string, unknown> | null | undefined;
  if (typeof state !== 'object' || state === null || Array.isArray(state)) throw new StateFormatError(line, 'snapshot.state: expected an object');
  for (const field of ['accounts', 'journal', 'faults'] as const) {
    if (!Array.isArray(state[field])) throw new StateFormatError(line, `snapshot.state.${field}: expected an array`);
  }
  const store = state.store as Record<string, unknown> | null | undefined;
  if (typeof store !== 'object' || store === null || !Array.isArray(store.generations) || !Array.isArray(store.images)) {
    throw new StateFormatError(line, 'snapshot.state.store: expected an object with generations and images');
  }
  for (const field of ['clock_advanced_ms', 'requests', 'evicted_accounts'] as const) {
    if (!Number.isFinite(state[field])) throw new StateFormatError(line, `snapshot.state.${field}: expected a number, got ${JSON.stringify(state[field])}`);
  }
  return value as Snapshot;
}

/**
 * Puts the snapshot's state into `core` (made for the file's run: its scenario, seed and clock).
 * Answers stored under Idempotency-Keys hold the media address they were sent with (`fileCdnUrl`,
 * the header's): on another address (`core.cdnUrl`), they are given the new one, as a replay on it
 * would have made them. Throws a `StateFormatError` naming `line` when the state is not what the
 * format says.
 */
export function loadSnapshot(core: Simulator, snapshot: Snapshot, fileCdnUrl: string, line: number): void {
  const from = `:${JSON.stringify(`${fileCdnUrl}/`).slice(0, -1)}`;
  const to = `:${JSON.stringify(`${core.cdnUrl}/`).slice(0, -1)}`;
  // In JSON text, `:"` opens a value (inside a string a quote is escaped): only addresses are rewritten.
  const storedText = from === to ? undefined : (body: string) => body.replaceAll(from, to);
  try {
    core.fromState(snapshot.state, storedText);
  } catch (e) {
    throw new StateFormatError(line, `the snapshot's state is damaged (${e instanceof Error ? e.message : String(e)})`);
  }
}
