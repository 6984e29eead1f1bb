/**
 * Restoring a state file: its request lines replayed in order through the request path, each at the
 * instant it was first handled (the wall-clock reading it recorded, which also puts the virtual
 * clock where it was), without waiting any injected latency. Every draw depends only on an account's
 * own sequence of requests and its virtual time, so every generation, image, idempotency key,
 * balance, rate-limit bucket, queued fault, account clock, journal entry and id comes back as it was.
 * A compacted file begins from its snapshot (the state as rows of plain data) and replays only the
 * lines after it.
 *
 * The file is read once, a row at a time, each row loaded or replayed as it comes: memory holds the
 * state being restored and one row, whatever the file's size, and the time is linear in it.
 */
import { constants } from 'node:buffer';
import { handleRequest, type RequestPathDeps } from '../api/handleRequest.js';
import type { Simulator } from '../core/simulator.js';
import type { StateRow } from '../core/simulatorState.js';
import { fileRows, RowTooLongError } from '../fileRows.js';
import { listBundledScenarios } from '../scenarios/load.js';
import { describeRecordedNetwork, recordedNetwork, recordedStatus } from '../transcript/format.js';
import { recordedRequest } from '../transcript/replay.js';
import { globalIdNumber } from '../core/requestIds.js';
import { readStateRows } from './format.js';
import { StateFormatError, type StateHeader } from './header.js';
import { storedTextOn } from './snapshot.js';

/**
 * The longest row a state file holds, but for line 2: a request line's body is at most 1 MiB, and
 * its JSON string, with every byte escaped, at most six times that; a snapshot's row holds one item
 * (a stored answer is a body the simulator sent, far smaller).
 */
const MAX_ROW_CHARS = 16 * 1024 * 1024;

/** Line 2 may be a single-line snapshot of format 1, as long as a string can be (what wrote it could not write more). */
const rowLimit = (row: number): number => (row === 2 ? constants.MAX_STRING_LENGTH : MAX_ROW_CHARS);

/** The wall clock a simulator with state reads: the real one, or a reading held while restoring. */
export class HeldWall {
  private held: number | undefined;

  constructor(private readonly real: () => number) {}

  now = (): number => this.held ?? this.real();

  hold(ms: number): void {
    this.held = ms;
  }

  release(): void {
    this.held = undefined;
  }
}

/** What a state file held, as it was restored: enough to go on appending to it. */
export interface RestoreResult {
  /** Requests the file stands for: those its snapshot stands for, and the lines replayed after it. */
  requests: number;
  /** Request lines replayed (after the snapshot, if any). */
  lines: number;
  /** The `seq` of the last request line (or of the snapshot's last request). */
  lastSeq: number;
  /** The highest global request id the file accounts for. */
  lastIds: number;
  /** Bytes of the header and the snapshot (its end row included); 0 without a snapshot. */
  snapshotBytes: number;
  /** When the snapshot was taken (ISO), or null without one. */
  compactedAt: string | null;
  /** Bytes of the file's complete lines: a torn last line starts there. */
  wholeBytes: number;
  /** The torn last line that was dropped, if any (its 1-based number). */
  torn?: number;
  /** Lines whose replayed status differs from the recorded one: `line N: ...`. */
  divergences: string[];
}

/**
 * Brings `core` (made from the file's header: its scenario, seed, overrides, and the wall held at
 * the clock's anchor) to the state the file at `path` holds, reading its first `size` bytes: a fresh
 * state (or the snapshot's), then every line replayed. May be run again on the same core (it starts
 * with a global reset of the core). Throws a `StateFormatError` when a row is not what the format
 * says or the snapshot's state is damaged.
 */
export function restoreState(
  core: Simulator,
  path: string,
  size: number,
  context: { wall: HeldWall; cdnUrl: string; log: (line: string) => void },
): RestoreResult {
  const { wall } = context;
  const deps: RequestPathDeps = {
    sim: core,
    app: { scenarios: listBundledScenarios },
    log: context.log,
    responseFailures: [],
  };
  const progress = { bytes: 0 };
  const rows = fileRows(path, rowLimit, { end: size, progress });
  const result: RestoreResult = { requests: 0, lines: 0, lastSeq: 0, lastIds: 0, snapshotBytes: 0, compactedAt: null, wholeBytes: 0, divergences: [] };
  let header: StateHeader;
  let snapshotSeq = 0;
  try {
    const reading = readStateRows(rows, () => progress.bytes);
    header = reading.header;
    wall.hold(header.clock.anchor);
    core.reset();
    core.seed = header.seed;
    core.cdnUrl = context.cdnUrl;
    let loading: { add(row: StateRow): void; finish(): void } | undefined;
    const damaged = (row: number, e: unknown): StateFormatError =>
      new StateFormatError(row, `the snapshot's state is damaged (${e instanceof Error ? e.message : String(e)})`);
    for (const entry of reading.entries) {
      if ('item' in entry) {
        try {
          loading?.add(entry.item);
        } catch (e) {
          throw damaged(entry.row, e);
        }
        continue;
      }
      if ('snapshot' in entry || 'singleLine' in entry) {
        const snapshot = 'snapshot' in entry ? entry.snapshot : entry.singleLine;
        snapshotSeq = snapshot.seq;
        result.lastSeq = snapshot.seq;
        result.lastIds = snapshot.state.requests;
        result.compactedAt = snapshot.compacted_at;
        const storedText = storedTextOn(core, header.cdn_url);
        try {
          if ('snapshot' in entry) loading = core.loadState(entry.snapshot.state, storedText);
          else core.fromState(entry.singleLine.state, storedText);
        } catch (e) {
          throw damaged(entry.row, e);
        }
        if ('singleLine' in entry) result.snapshotBytes = entry.end;
        continue;
      }
      if ('snapshotEnd' in entry) {
        try {
          loading?.finish();
        } catch (e) {
          throw damaged(entry.row, e);
        }
        loading = undefined;
        result.snapshotBytes = entry.end;
        continue;
      }
      if ('ids' in entry) {
        core.skipGlobalRequestIdsTo(entry.ids);
        result.lastIds = Math.max(result.lastIds, entry.ids);
        continue;
      }
      const { line } = entry;
      wall.hold(line.wall);
      // The wall reading puts the clock where it was; a clock moved by other means is caught up.
      const behindMs = Date.parse(line.now) - core.clock.now();
      if (behindMs > 0) core.clock.advance(behindMs);
      const globalId = globalIdNumber(line.id);
      if (globalId !== null) core.skipGlobalRequestIdsTo(globalId - 1);
      const answer = handleRequest(deps, recordedRequest(line));
      result.lines++;
      result.lastSeq = line.seq;
      result.lastIds = Math.max(result.lastIds, globalId ?? 0);
      const status = recordedStatus(answer);
      if (status !== line.status) {
        result.divergences.push(`line ${entry.row} (${line.method} ${line.path}): answered ${line.status} when first handled, ${status} now`);
      }
      const [was, now] = [describeRecordedNetwork(line.network), describeRecordedNetwork(recordedNetwork(answer))];
      if (was !== now) result.divergences.push(`line ${entry.row} (${line.method} ${line.path}): network fault ${was} when first handled, ${now} now`);
    }
    result.wholeBytes = reading.ending.wholeBytes;
    if (reading.ending.torn !== undefined) result.torn = reading.ending.torn;
  } catch (e) {
    if (e instanceof RowTooLongError) throw new StateFormatError(e.row, `longer than ${e.maxRowChars} characters, more than any line the simulator writes`);
    throw e;
  } finally {
    wall.release();
  }
  result.requests = snapshotSeq + result.lines;
  return result;
}
