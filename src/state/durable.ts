/**
 * A simulator with durable state (`--state FILE`), in two steps around the making of its core:
 *
 * 1. `prepareState`, before the core is made: the file is read and checked (refused when it is
 *    not a state file or conflicts with what was asked), and what the core must be made with is
 *    decided: the file's scenario, seed and clock, and a wall clock held at the file's anchor, so
 *    that the core's clock begins exactly where the file's began.
 * 2. `attachState`, once the core and its request path exist: the file's requests are replayed into
 *    the core (before anything is answered), and the store that keeps every later request is made.
 *    The file itself is taken (locked, appended to) only at `listening`, once the port is bound.
 */
import type { ClockMode } from '../core/clock.js';
import type { Scenario } from '../core/scenario.js';
import type { ShardSpec } from '../core/shard.js';
import type { Simulator } from '../core/simulator.js';
import { formatStateHeader, type StateHeader } from './format.js';
import { readStateFile, refusedFormat, type AskedState, type ReadState } from './open.js';
import { HeldWall, restoreState, type RestoreResult } from './restore.js';
import { StateStore } from './store.js';

/** How many replayed answers that differ from the recorded ones are named one by one. */
const DIVERGENCES_SHOWN = 10;

export interface PreparedState {
  path: string;
  /** What the file holds, or undefined: a new state. */
  read: ReadState | undefined;
  /** The wall clock to make the core with (held at the clock's anchor until the core is made). */
  wall: HeldWall;
  anchor: number;
  /** What to make the core with, where the file decides. */
  core: { scenario: Scenario | undefined; seed?: number; clockMode?: ClockMode; speed?: number; shard?: ShardSpec | null };
}

export interface DurableState {
  store: StateStore;
  /** Requests restored from the file (those its snapshot stands for included). */
  restored: number;
  /** Once the port is bound and the addresses known: restores again if the media address moved, then takes the file. */
  listening(): void;
}

export function prepareState(path: string, asked: AskedState, realWall: () => number, warn: (line: string) => void): PreparedState {
  const read = readStateFile(path, asked, warn);
  const wall = new HeldWall(realWall);
  const anchor = read ? read.file.header.clock.anchor : realWall();
  wall.hold(anchor);
  const overrides = read?.file.header.overrides;
  return {
    path,
    read,
    wall,
    anchor,
    core: {
      scenario: read?.scenario,
      seed: asked.seed ?? overrides?.seed,
      clockMode: asked.clock ?? overrides?.clock,
      speed: asked.speed ?? overrides?.speed,
      shard: asked.shard !== undefined ? asked.shard : read ? (read.file.header.shard ?? null) : undefined,
    },
  };
}

export function attachState(
  prepared: PreparedState,
  core: Simulator,
  options: { overrides: StateHeader['overrides']; explicitCdn: boolean; log: (line: string) => void },
): DurableState {
  const { read, wall, path } = prepared;
  const store = new StateStore({
    file: path,
    core,
    overrides: read ? read.file.header.overrides : options.overrides,
    anchor: prepared.anchor,
    existing: read && {
      size: read.size,
      wholeBytes: read.file.wholeBytes,
      lines: read.lines,
      lastSeq: read.lastSeq,
      lastIds: read.lastIds,
      // Without a snapshot, the header is what the tail is weighed against.
      snapshotBytes: read.snapshotBytes || Buffer.byteLength(`${formatStateHeader(read.file.header)}\n`),
      compactedAt: read.file.snapshot?.compacted_at ?? null,
    },
    warn: options.log,
  });
  let restoredWith: string | undefined;
  const restore = (): number => {
    if (!read) return 0;
    let result: RestoreResult;
    try {
      result = restoreState(core, read.file, { wall, cdnUrl: core.cdnUrl, log: options.log });
    } catch (e) {
      throw refusedFormat(path, e);
    }
    const { divergences } = result;
    for (const divergence of divergences.slice(0, DIVERGENCES_SHOWN)) {
      options.log(`state: ${path}: ${divergence} (the state was written by a simulator that answers differently: version ${read.file.header.version})`);
    }
    if (divergences.length > DIVERGENCES_SHOWN) options.log(`state: ${path}: and ${divergences.length - DIVERGENCES_SHOWN} more lines answered differently`);
    restoredWith = core.cdnUrl;
    store.restored();
    // The requests the snapshot stands for, and those replayed after it.
    return (read.file.snapshot?.seq ?? 0) + result.requests;
  };
  // The answers stored under Idempotency-Keys hold the media address: restored with the file's.
  if (read && !options.explicitCdn) core.cdnUrl = read.file.header.cdn_url;
  const restored = restore();
  wall.release();
  return {
    store,
    restored,
    listening() {
      if (read && restoredWith !== core.cdnUrl) restore();
      store.open();
    },
  };
}
