/**
 * A simulator with durable state (`--state FILE`), opened in one pass over its file: the header is
 * read and checked (open.ts refuses a file that is not a state file or conflicts with what was
 * asked), the core is opened from it (its scenario, seed, clock, media address and shard, on a wall
 * clock held at the file's anchor so that the core's clock begins exactly where the file's began),
 * then every row after it is loaded or replayed as it is read, and the store that keeps every later
 * request is made. Without a file to restore (none, an empty one, a header cut short), the core is
 * a new one and the file begins with it. The file itself is taken (locked, appended to) only at
 * `listening`, once the port is bound.
 *
 * Restoring: the request lines are replayed in order through the request path, each at the instant
 * it was first handled (the wall-clock reading it recorded, which also puts the virtual clock where
 * it was), without waiting any injected latency. Every draw depends only on an account's own
 * sequence of requests and its virtual time, so every generation, image, idempotency key, balance,
 * rate-limit bucket, queued fault, account clock, journal entry and id comes back as it was. A
 * compacted file begins from its snapshot (the state as rows of plain data) and replays only the
 * lines after it.
 *
 * The file is opened and read once, a row at a time, each row loaded or replayed as it comes:
 * memory holds the state being restored and one row, whatever the file's size, and the time is
 * linear in it. The state is restored on the file's media address (its header's `cdn_url`); then
 * the simulator takes its own (the one given, at once, else the one it listens on, at `listening`)
 * and the answers stored under Idempotency-Keys take it too, once
 * (`Simulator.readdressStoredAnswers`), without a second pass.
 */
import { handleRequest, requestPathDeps } from '../request-path/handleRequest.js';
import { openSimulator } from '../core/simulator/openSimulator.js';
import type { Scenario } from '../core/scenario/scenario.js';
import type { Simulator } from '../core/simulator/simulator.js';
import type { StateRow } from '../core/simulator/simulatorState.js';
import { RowTooLongError } from '../fileRows.js';
import type { HostClock } from '../hostClock.js';
import { listBundledScenarios } from '../scenarios/load.js';
import { describeRecordedNetwork, recordedNetwork, recordedRequest, recordedStatus, replayedOnSocket } from '../transcript/lineFormat.js';
import { clip } from '../core/errors.js';
import { globalIdNumber } from '../core/requests/requestIds.js';
import { formatStateHeader, StateFormatError, type StateHeader } from './header.js';
import { openStateFile, refusedFormat, type AskedState, type OpenedStateFile } from './open.js';
import type { StateLine } from './stateLines.js';
import { StateStore } from './stateStore.js';

/** How many replayed answers that differ from the recorded ones are named one by one. */
const DIVERGENCES_SHOWN = 10;

/** The wall clock a simulator with state reads: the real one, or a reading held while it is opened. */
class HeldWall {
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

/** What restoring a state file is given beside it. */
export interface RestoreOpening {
  /** What was asked for explicitly: a file's that differs is refused, and what was not asked for is the file's. */
  asked: AskedState;
  /** The host's clock: its wall clock, and the timers the state file's store runs on (and its lock). */
  hostClock: HostClock;
  /** The media address given explicitly; default: the file's until the simulator listens, then the adapter's (`Simulator.configure`). */
  cdnUrl?: string;
  /** How a core restored from the file resolves a scenario a reset names, given the scenario it runs; default: none. */
  resetScenarios?: (scenario: Scenario) => (name: string) => Scenario;
  log: (line: string) => void;
}

/** What opening a state file is given beside it: what restoring it is, and what a new state begins with. */
export interface StateOpening extends RestoreOpening {
  /** The overrides a new file records (a restored file keeps its own). */
  overrides: StateHeader['overrides'];
  /** The core of a new state (no file to restore), made on the wall clock given. */
  newCore: (wallClock: () => number) => Simulator;
}

export interface DurableState {
  core: Simulator;
  store: StateStore;
  /** Requests restored from the file (those its snapshot stands for included); undefined: a new state. */
  restored: number | undefined;
  /** Once the port is bound and the addresses known (the adapter has set the media address): stored answers take it if it moved, then the file is taken. */
  listening(): void;
}

/**
 * Opens the simulator kept in the state file `path`: restored from what the file holds (see
 * `restoreState`), or a new state, which the file begins with, when it holds none.
 */
export function openState(path: string, opening: StateOpening): DurableState {
  return restoreState(path, opening) ?? newState(path, opening);
}

/** A new state kept in `path`: the core `newCore` makes, on the wall held at the file's anchor. */
function newState(path: string, opening: StateOpening): DurableState {
  const wall = new HeldWall(() => opening.hostClock.now());
  const anchor = opening.hostClock.now();
  wall.hold(anchor);
  const core = opening.newCore(wall.now);
  wall.release();
  const store = new StateStore({ file: path, core, overrides: opening.overrides, anchor, warn: opening.log, hostClock: opening.hostClock });
  return { core, store, restored: undefined, listening: () => store.open() };
}

/**
 * Restores the simulator kept in the state file `path` (see above), or undefined when the file
 * holds no state to restore (none, an empty one, a header cut short). Throws `StateRefusedError`
 * or `FileLockedError` (open.ts), or a `StateRefusedError` naming the row that is not what the
 * format says or a snapshot whose state is damaged.
 */
export function restoreState(path: string, opening: RestoreOpening): DurableState | undefined {
  const { asked, log } = opening;
  const file = openStateFile(path, asked, log);
  if (!file) return undefined;
  const wall = new HeldWall(() => opening.hostClock.now());
  const { header, scenario } = file;
  const fileOverrides = header.overrides;
  wall.hold(header.clock.anchor);
  const core = openSimulator(
    { ...header, scenario },
    {
      wallClock: wall.now,
      overrides: { seed: asked.seed ?? fileOverrides.seed, clock: asked.clock ?? fileOverrides.clock, speed: asked.speed ?? fileOverrides.speed },
      loadScenario: opening.resetScenarios?.(scenario),
      shard: asked.shard,
    },
  );
  let restored: Restored;
  try {
    restored = restoreRows(core, file, wall, log);
  } catch (e) {
    throw refusedFormat(path, e);
  } finally {
    file.close();
    wall.release();
  }
  const { divergences } = restored;
  for (const divergence of divergences.slice(0, DIVERGENCES_SHOWN)) {
    log(`state: ${path}: ${divergence} (the state was written by a simulator that answers differently: version ${header.version})`);
  }
  if (divergences.length > DIVERGENCES_SHOWN) log(`state: ${path}: and ${divergences.length - DIVERGENCES_SHOWN} more lines answered differently`);
  if (restored.torn !== undefined) log(`state: ${path}: line ${restored.torn} was cut short (the simulator was stopped while writing it): dropped`);
  // Restored on the file's media address: the stored answers take the simulator's own once it is
  // known, the one given now, or the one it listens on at `listening`.
  const restoredOn = core.ownCdnUrl;
  if (opening.cdnUrl !== undefined) {
    core.configure({ cdnUrl: opening.cdnUrl });
    core.readdressStoredAnswers(restoredOn);
  }
  const store = new StateStore({
    file: path,
    core,
    overrides: fileOverrides,
    anchor: header.clock.anchor,
    existing: {
      size: file.size,
      wholeBytes: restored.wholeBytes,
      lines: restored.lines,
      lastSeq: restored.lastSeq,
      lastIds: restored.lastIds,
      // Without a snapshot, the header is what the tail is weighed against.
      snapshotBytes: restored.snapshotBytes || Buffer.byteLength(`${formatStateHeader(header)}\n`),
      compactedAt: restored.compactedAt,
    },
    warn: log,
    hostClock: opening.hostClock,
  });
  return {
    core,
    store,
    restored: restored.requests,
    listening() {
      if (opening.cdnUrl === undefined) core.readdressStoredAnswers(restoredOn);
      store.open();
    },
  };
}

/** What a state file held, as it was restored: enough to go on appending to it. */
interface Restored {
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
 * Brings `core` (opened from the file's header, the wall held at the clock's anchor) to the state
 * the rows after the header hold, reading them as they come: the snapshot's, then every line
 * replayed. Throws a `StateFormatError` when a row is not what the format says or the snapshot's
 * state is damaged.
 */
function restoreRows(core: Simulator, file: OpenedStateFile, wall: HeldWall, log: (line: string) => void): Restored {
  const { reading } = file;
  // The request line being handled again.
  let replaying: StateLine | undefined;
  const deps = requestPathDeps(core, { app: { scenarios: listBundledScenarios }, log, onSocket: replayedOnSocket(() => replaying) });
  const result: Restored = { requests: 0, lines: 0, lastSeq: 0, lastIds: 0, snapshotBytes: 0, compactedAt: null, wholeBytes: 0, divergences: [] };
  let snapshotSeq = 0;
  try {
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
        try {
          if ('snapshot' in entry) loading = core.loadState(entry.snapshot.state);
          else core.fromState(entry.singleLine.state);
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
      if ('mediaFault' in entry) {
        const { method, path } = entry.mediaFault;
        if (core.faults.takeMedia(method, path) === undefined) {
          result.divergences.push(`line ${entry.row} (${method} ${clip(path)}): took a queued media fault when first downloaded, none is queued for it now`);
        }
        continue;
      }
      const { line } = entry;
      replaying = line;
      wall.hold(line.wall);
      // The wall reading puts the clock where it was; a clock moved by other means is caught up.
      core.clock.forwardTo(Date.parse(line.now));
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
  }
  result.requests = snapshotSeq + result.lines;
  return result;
}
