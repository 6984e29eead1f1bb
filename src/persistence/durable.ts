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
import { formatStateHeader, type StateHeader } from './header.js';
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
  const anchor = read ? read.header.clock.anchor : realWall();
  wall.hold(anchor);
  const overrides = read?.header.overrides;
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
      shard: asked.shard !== undefined ? asked.shard : read ? (read.header.shard ?? null) : undefined,
    },
  };
}

export function attachState(
  prepared: PreparedState,
  core: Simulator,
  options: { overrides: StateHeader['overrides']; explicitCdn: boolean; log: (line: string) => void },
): DurableState {
  const { read, wall, path } = prepared;
  let restoredWith: string | undefined;
  const restore = (): RestoreResult | undefined => {
    if (!read) return undefined;
    let result: RestoreResult;
    try {
      result = restoreState(core, path, read.size, { wall, cdnUrl: core.cdnUrl, log: options.log });
    } catch (e) {
      throw refusedFormat(path, e);
    }
    const { divergences } = result;
    for (const divergence of divergences.slice(0, DIVERGENCES_SHOWN)) {
      options.log(`state: ${path}: ${divergence} (the state was written by a simulator that answers differently: version ${read.header.version})`);
    }
    if (divergences.length > DIVERGENCES_SHOWN) options.log(`state: ${path}: and ${divergences.length - DIVERGENCES_SHOWN} more lines answered differently`);
    restoredWith = core.cdnUrl;
    return result;
  };
  // The answers stored under Idempotency-Keys hold the media address: restored with the file's.
  if (read && !options.explicitCdn) core.cdnUrl = read.header.cdn_url;
  const result = restore();
  wall.release();
  if (result?.torn !== undefined) {
    options.log(`state: ${path}: line ${result.torn} was cut short (the simulator was stopped while writing it): dropped`);
  }
  const store = new StateStore({
    file: path,
    core,
    overrides: read ? read.header.overrides : options.overrides,
    anchor: prepared.anchor,
    existing:
      read &&
      result && {
        size: read.size,
        wholeBytes: result.wholeBytes,
        lines: result.lines,
        lastSeq: result.lastSeq,
        lastIds: result.lastIds,
        // Without a snapshot, the header is what the tail is weighed against.
        snapshotBytes: result.snapshotBytes || Buffer.byteLength(`${formatStateHeader(read.header)}\n`),
        compactedAt: result.compactedAt,
      },
    warn: options.log,
  });
  return {
    store,
    restored: result?.requests ?? 0,
    listening() {
      if (read && restoredWith !== core.cdnUrl) {
        restore();
        store.restored();
      }
      store.open();
    },
  };
}
