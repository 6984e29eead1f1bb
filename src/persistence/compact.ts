/**
 * Compacting a state file on demand (`sim state compact FILE`), with no simulator running on it:
 * the file is restored into a core of its own (as `sim --state FILE` would restore it), then
 * rewritten as its header and a snapshot of that state, atomically (see `StateStore.compact`).
 * The file is locked meanwhile, so no simulator starts on it halfway.
 */
import { systemClock, type HostClock } from '../hostClock.js';
import { StateRefusedError } from './open.js';
import { restoreState } from './restore.js';

export interface CompactedFile {
  /** The file's size before and after, in bytes. */
  before: number;
  after: number;
  /** The requests the snapshot stands for. */
  requests: number;
}

/** The file was read but could not be rewritten (the simulator's own failure, not the file's). */
export class CompactionFailedError extends StateRefusedError {}

/**
 * Compacts `path`. Rejects with `FileLockedError` when a running simulator holds it,
 * `StateRefusedError` when it is missing, unreadable or not a state file this version restores, or
 * `CompactionFailedError` when it cannot be rewritten (`warn` has said why). `hostClock`: the
 * host's, which a realtime clock follows, the snapshot's time is read from and the compaction's
 * turns and the file's lock run on.
 */
export async function compactStateFile(path: string, warn: (line: string) => void, hostClock: HostClock = systemClock): Promise<CompactedFile> {
  const durable = restoreState(path, { asked: {}, hostClock, log: warn });
  if (!durable) throw new StateRefusedError(`${path} holds no state to compact (no such file, or an empty one)`);
  // Takes the file (its lock): refused when a simulator started on it since it was read.
  durable.listening();
  try {
    const done = await durable.store.compact();
    if (!done) throw new CompactionFailedError(`${path} could not be compacted; it is as it was`);
    return { ...done, requests: durable.restored ?? 0 };
  } finally {
    durable.store.close();
  }
}
