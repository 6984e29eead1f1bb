/**
 * A snapshot: the core's state as plain data, the rows that stand for every request before them in
 * a compacted state file. A head row, one row per item of the state, an end row:
 *
 *   {"snapshot":{"format":2,"version":"0.1.0","compacted_at":"2026-05-04T10:00:00.000Z","seq":1234,
 *    "state":{"clock_advanced_ms":4000,"requests":57,"evicted_accounts":0,"store":{"next_seq":..,"change_seq":..,"evicted_generations":..}}}}
 *   {"control_requests":{"key":"sk_test_a","count":3}}
 *   {"account":{"key":"sk_test_a",...}}
 *   {"idempotency":{"account":"sk_test_a","key":"/v1/videos k1",...}}
 *   {"generation":{"id":"vid_...",...}}
 *   {"account_changes":{"account":"sk_test_a","changes":12}}
 *   {"image":{...}}  {"journal":{...}}  {"fault":{...}}
 *   {"snapshot_end":{"rows":5678}}
 *
 * Rows, never one string: a state of any size is written a row at a time and read a row at a time
 * (V8's limit on a string's length never applies). Formatting, checking and loading only (no files:
 * stateStore.ts writes them, restore.ts reads them).
 *
 * A snapshot is tied to its format (`format`): the shape of the core's state. Request lines replay
 * on any version of the simulator (a version that answers differently says so); a snapshot loads
 * only on versions that read its format, so a version that does not is refused with what to do.
 * Format 1, the single line `{"snapshot":{"format":1,...,"state":{...the whole state...}}}` of
 * earlier versions, is still read.
 */
import { isoTime } from '../core/time/clock.js';
import type { Simulator } from '../core/simulator/simulator.js';
import type { CoreState, StateCapture, StateHead, StateRow } from '../core/simulator/simulatorState.js';
import { SIMULATOR_VERSION } from '../version.js';
import { STATE_FORMAT, StateFormatError, formatStateHeader, type StateHeader } from './header.js';

/** The format of the snapshot this version writes. */
const SNAPSHOT_FORMAT = 2;
/** The format of the single-line snapshot of earlier versions, which this version still reads. */
export const SINGLE_LINE_SNAPSHOT_FORMAT = 1;

/** A snapshot's head row (line 2). */
export interface Snapshot {
  format: typeof SNAPSHOT_FORMAT;
  /** The version of the simulator that took it. */
  version: string;
  /** When it was taken (wall clock, ISO). */
  compacted_at: string;
  /** The `seq` of the last request it stands for (the lines after it go on from there). */
  seq: number;
  /** The state's counters; its items are the rows that follow, up to the end row. */
  state: StateHead;
}

/** A single-line snapshot of format 1: the whole state in its line. */
export interface SingleLineSnapshot extends Omit<Snapshot, 'format' | 'state'> {
  format: typeof SINGLE_LINE_SNAPSHOT_FORMAT;
  state: CoreState;
}

/** The kinds of a snapshot's rows, as the first (only) key of each. */
export const ROW_KINDS: ReadonlySet<string> = new Set(['control_requests', 'account', 'idempotency', 'generation', 'account_changes', 'image', 'journal', 'fault']);

/** The key of the row that ends a snapshot. */
export const SNAPSHOT_END = 'snapshot_end';

/** The header of a state file for the core's current run. `anchor`: the wall-clock reading its clock began at. */
export function stateHeaderOf(core: Simulator, overrides: StateHeader['overrides'], anchor: number): StateHeader {
  return {
    state: STATE_FORMAT,
    version: SIMULATOR_VERSION,
    scenario: core.scenario,
    seed: core.seed,
    overrides,
    clock: { mode: core.clock.mode, speed: core.clock.speed, start: isoTime(core.clock.startMs), anchor },
    cdn_url: core.ownCdnUrl,
    shard: core.shard,
  };
}

/**
 * A compacted state file, line by line (each with its newline): the header, then the snapshot of
 * `capture` standing for the requests up to `seq`, taken at wall-clock time `wallMs`. Each line is
 * made as it is read; with `release`, the capture lets go of each item once its line is made (its
 * lines can then be read only once: see `StateCapture.rows`).
 */
export function* compactedLines(header: StateHeader, capture: StateCapture, seq: number, wallMs: number, release = false): Generator<string, void, undefined> {
  yield `${formatStateHeader(header)}\n`;
  const snapshot: Snapshot = { format: SNAPSHOT_FORMAT, version: SIMULATOR_VERSION, compacted_at: isoTime(wallMs), seq, state: capture.head };
  yield `${JSON.stringify({ snapshot })}\n`;
  for (const row of capture.rows(release)) yield `${JSON.stringify(row)}\n`;
  yield `${JSON.stringify({ [SNAPSHOT_END]: { rows: capture.count } })}\n`;
}

/**
 * `lines` packed into chunks of at most `chunkBytes` bytes (a line longer than that is a chunk of its
 * own), each line encoded into the chunk as it comes: no string longer than a line is made. With
 * `reuse`, one buffer is filled again for each chunk (use a chunk before asking for the next);
 * without, each chunk is a buffer of its own.
 */
export function* chunksOf(lines: Iterable<string>, chunkBytes: number, reuse: boolean): Generator<Buffer, void, undefined> {
  let buffer = Buffer.allocUnsafe(chunkBytes);
  let used = 0;
  for (const line of lines) {
    // A UTF-16 code unit takes at most 3 bytes in UTF-8.
    if (used > 0 && used + 3 * line.length > chunkBytes) {
      yield buffer.subarray(0, used);
      if (!reuse) buffer = Buffer.allocUnsafe(chunkBytes);
      used = 0;
    }
    if (3 * line.length > chunkBytes) yield Buffer.from(line, 'utf8');
    else used += buffer.write(line, used, 'utf8');
  }
  if (used > 0) yield buffer.subarray(0, used);
}

/**
 * Checks a snapshot line's value (line `line`): its format first, so that a snapshot of another
 * format is refused with what to do rather than misread; then the head's fields (format 2) or the
 * state's outline (format 1). The items are checked as they are loaded.
 */
export function parseSnapshot(value: unknown, line: number): Snapshot | SingleLineSnapshot {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new StateFormatError(line, 'snapshot: expected an object');
  const s = value as Record<string, unknown>;
  if (s.format !== SNAPSHOT_FORMAT && s.format !== SINGLE_LINE_SNAPSHOT_FORMAT) {
    const by = typeof s.version === 'string' ? s.version : 'unknown';
    throw new StateFormatError(
      line,
      `a snapshot in format ${JSON.stringify(s.format) ?? 'none'} (compacted by version ${by} of the simulator); this version reads snapshot formats ${SINGLE_LINE_SNAPSHOT_FORMAT} and ${SNAPSHOT_FORMAT}. ` +
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
  for (const field of ['clock_advanced_ms', 'requests', 'evicted_accounts'] as const) {
    if (!Number.isFinite(state[field])) throw new StateFormatError(line, `snapshot.state.${field}: expected a number, got ${JSON.stringify(state[field])}`);
  }
  const store = state.store as Record<string, unknown> | null | undefined;
  if (typeof store !== 'object' || store === null || Array.isArray(store)) throw new StateFormatError(line, 'snapshot.state.store: expected an object');
  for (const field of ['next_seq', 'change_seq', 'evicted_generations'] as const) {
    if (!Number.isFinite(store[field])) throw new StateFormatError(line, `snapshot.state.store.${field}: expected a number, got ${JSON.stringify(store[field])}`);
  }
  if (s.format === SINGLE_LINE_SNAPSHOT_FORMAT) {
    for (const field of ['accounts', 'journal', 'faults'] as const) {
      if (!Array.isArray(state[field])) throw new StateFormatError(line, `snapshot.state.${field}: expected an array`);
    }
    if (!Array.isArray(store.generations) || !Array.isArray(store.images)) {
      throw new StateFormatError(line, 'snapshot.state.store: expected an object with generations and images');
    }
    return value as SingleLineSnapshot;
  }
  return value as Snapshot;
}

/**
 * Checks a row of a snapshot (line `line`): one key, a kind of row, whose value is an object. What
 * the value holds is checked as it is loaded.
 */
export function parseSnapshotRow(value: Record<string, unknown>, line: number): StateRow {
  const keys = Object.keys(value);
  const kind = keys[0];
  if (keys.length !== 1 || kind === undefined || !ROW_KINDS.has(kind)) {
    throw new StateFormatError(
      line,
      `expected a row of the snapshot (${[...ROW_KINDS].join(', ')}) or its end row, got ${keys.length === 0 ? 'an empty object' : `one with ${keys.map((k) => JSON.stringify(k)).join(', ')}`}`,
    );
  }
  const item = value[kind];
  if (typeof item !== 'object' || item === null || Array.isArray(item)) throw new StateFormatError(line, `${kind}: expected an object`);
  return value as unknown as StateRow;
}

/** Checks a snapshot's end row (line `line`): the number of rows it says the snapshot holds. */
export function parseSnapshotEnd(value: unknown, line: number): number {
  const rows = (value as { rows?: unknown } | null)?.rows;
  if (!Number.isSafeInteger(rows) || (rows as number) < 0) throw new StateFormatError(line, `${SNAPSHOT_END}.rows: expected a whole number, got ${JSON.stringify(rows)}`);
  return rows as number;
}
