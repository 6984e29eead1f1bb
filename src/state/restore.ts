/**
 * Restoring a state file: its request lines replayed in order through the request path, each at the
 * instant it was first handled (the wall-clock reading it recorded, which also puts the virtual
 * clock where it was), without waiting any injected latency. Every draw depends only on an account's
 * own sequence of requests and its virtual time, so every generation, image, idempotency key,
 * balance, rate-limit bucket, queued fault, account clock, journal entry and id comes back as it was.
 * A compacted file begins from its snapshot (the state as plain data) and replays only the lines
 * after it.
 */
import { handleRequest, type ApiState } from '../api/handleRequest.js';
import type { Simulator } from '../core/simulator.js';
import { listBundledScenarios } from '../scenarios/load.js';
import { describeRecordedNetwork, recordedNetwork, recordedStatus } from '../transcript/format.js';
import { recordedRequest } from '../transcript/replay.js';
import { globalIdNumber, type StateFile } from './format.js';
import { loadSnapshot } from './snapshot.js';

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

export interface RestoreResult {
  /** Request lines replayed (after the snapshot, if any). */
  requests: number;
  /** Lines whose replayed status differs from the recorded one: `line N: ...`. */
  divergences: string[];
}

/**
 * Brings `core` (made from the file's header: its scenario, seed, overrides, and the wall held at
 * the clock's anchor) to the state the file holds: a fresh state (or the snapshot's), then every
 * line replayed. May be run again on the same core (it starts with a global reset of the core).
 * Throws a `StateFormatError` when the snapshot's state is damaged.
 */
export function restoreState(
  core: Simulator,
  file: StateFile,
  context: { wall: HeldWall; cdnUrl: string; log: (line: string) => void },
): RestoreResult {
  const { header } = file;
  const { wall } = context;
  const state: ApiState = {
    sim: core,
    control: { scenarios: listBundledScenarios },
    log: context.log,
    responseFailures: [],
  };
  const divergences: string[] = [];
  let requests = 0;
  wall.hold(header.clock.anchor);
  try {
    core.reset();
    core.seed = header.seed;
    core.cdnUrl = context.cdnUrl;
    if (file.snapshot) {
      loadSnapshot(core, file.snapshot, header.cdn_url, 2);
    }
    for (const entry of file.entries) {
      if ('ids' in entry) {
        core.skipGlobalRequestIdsTo(entry.ids);
        continue;
      }
      const { line } = entry;
      wall.hold(line.wall);
      // The wall reading puts the clock where it was; a clock moved by other means is caught up.
      const behindMs = Date.parse(line.now) - core.clock.now();
      if (behindMs > 0) core.clock.advance(behindMs);
      const globalId = globalIdNumber(line.id);
      if (globalId !== null) core.skipGlobalRequestIdsTo(globalId - 1);
      const answer = handleRequest(state, recordedRequest(line));
      requests++;
      const status = recordedStatus(answer);
      if (status !== line.status) {
        divergences.push(`line ${entry.row} (${line.method} ${line.path}): answered ${line.status} when first handled, ${status} now`);
      }
      const [was, now] = [describeRecordedNetwork(line.network), describeRecordedNetwork(recordedNetwork(answer))];
      if (was !== now) divergences.push(`line ${entry.row} (${line.method} ${line.path}): network fault ${was} when first handled, ${now} now`);
    }
  } finally {
    wall.release();
  }
  return { requests, divergences };
}
