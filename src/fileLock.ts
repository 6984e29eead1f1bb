/**
 * A file a simulator writes as it runs (a transcript, a state file) is held through a lock file
 * beside it, `FILE.lock`. A second simulator that would write the same file is refused, naming the
 * holder, instead of overwriting or interleaving with it; a lock whose holder is gone is stale and
 * is taken over. Locks are released when the file is closed, and by the process's `exit`.
 *
 * Node has no portable kernel lock (no `flock` without a native addon), so the lock file records
 * who holds it, and a pid alone is not enough: in a container the simulator is PID 1, and two
 * containers sharing a volume would each take the other's lock for their own. The record
 * (`LockHolder`) names the process (pid, and its start time, so that a reused pid is told apart),
 * the pid namespace its pid belongs to, the machine's boot (the kernel's boot id, the same in every
 * container on one machine) and the host name. `judgeLock` decides from it:
 *
 * - a holder in this pid namespace (same boot, same namespace) is checked directly: held while
 *   that process runs with the recorded start time and is not a zombie;
 * - a holder this process cannot see (another container, another machine on a shared volume) is
 *   held while it keeps its lock fresh: every holder touches its lock files every `REFRESH_MS`, and
 *   a lock not touched for `STALE_MS` is stale (its holder was killed, or its machine stopped);
 * - a holder of the same host name whose machine booted since is stale.
 *
 * A file that is not a regular file (a device such as `/dev/full`, a pipe) is not locked: nothing
 * of it can be lost.
 *
 * The lock is the file's, not the name's: a symbolic link is followed to the file it names
 * (`resolvedFile`), whose lock file lies beside it. A file with more than one name (hard links)
 * has no name to put one lock beside, so a file of more than one link is also checked for a
 * holder under another of its names: a simulator holds the file it writes open, and the processes
 * of this pid namespace that have it open are found in /proc (`heldUnderAnotherName`). A
 * simulator in another container writing it under another name is not seen.
 */
import { accessSync, closeSync, constants, openSync, readFileSync, statSync, unlinkSync, utimesSync, writeSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { heldUnderAnotherName, otherName, resolvedFile } from './fileNames.js';
import { OUT_OF_ROOM } from './fileRows.js';
import { every, nextTurn, systemClock, type HostClock, type HostTimer } from './hostClock.js';
import {
  FileLockedError,
  judgeLock,
  parseHolder,
  processOf,
  readLock,
  removeIfUnchanged,
  selfHolder,
  type FoundLock,
  type LockVerdict,
} from './lockHolder.js';

export { resolvedFile } from './fileNames.js';
export { FileLockedError } from './lockHolder.js';

/** How often a holder touches its lock files. */
export const REFRESH_MS = 2_000;
/**
 * The lock file could not be written (a full disk): it is removed, and the file is not taken, since
 * another simulator could not tell that it is held.
 */
export class LockFileWriteError extends Error {
  constructor(
    readonly file: string,
    readonly lockFile: string,
    readonly code: string,
  ) {
    super(`cannot write the lock file ${lockFile} (${code})`);
    this.name = 'LockFileWriteError';
  }
}

export interface FileLock {
  /** The lock file, or null when the file needs none (not a regular file) or it could not be made. */
  readonly lockFile: string | null;
  /** Removes the lock file if it is still this holder's. */
  release(): void;
}

/** Lock files this process holds, by their absolute path: what each holds, where to warn, the host clock its refresh runs on. */
const held = new Map<string, { file: string; record: string; warn: (line: string) => void; clock: HostClock }>();
let releaseOnExit = false;
/** The refresh of the locks held, one per host clock the locks were taken with. */
const refreshers = new Map<HostClock, HostTimer>();

/** How many locks this process holds now (a test suite checks that none is left behind). */
export function heldLockCount(): number {
  return held.size;
}

/**
 * Throws `FileLockedError` when another running simulator (or another part of this process) holds
 * `file`, under this name or another (a symbolic link, a hard link). Reads only: nothing is created
 * or changed.
 */
export function refuseIfHeld(file: string): void {
  if (!needsLock(file)) return;
  const resolved = resolvedFile(file);
  const lockFile = `${resolved}.lock`;
  const found = readLock(lockFile);
  if (found !== null) {
    const verdict = judge(lockFile, found);
    if (verdict.held) throw new FileLockedError(file, lockFile, found.holder, verdict, found.ageMs, otherName(file, resolved));
  }
  const elsewhere = heldUnderAnotherName(file, lockFile, judge);
  if (elsewhere) throw elsewhere;
}

/**
 * Takes the lock of `file`: throws `FileLockedError` when a running process holds it; takes over a
 * stale one. When the lock file cannot be made (a read-only directory), `warn` says so and the
 * file is written unlocked. `warn` also says if the lock is later found taken by another.
 * `hostClock`: the timers the lock is refreshed on (every `REFRESH_MS`; a clock that does not move
 * leaves it unrefreshed, so that a simulator in another container takes it for stale after
 * `STALE_MS`). Default: `systemClock`.
 */
export function acquireFileLock(file: string, warn: (line: string) => void, hostClock: HostClock = systemClock): FileLock {
  if (!needsLock(file)) return { lockFile: null, release: () => {} };
  const resolved = resolvedFile(file);
  const sameAs = otherName(file, resolved);
  const lockFile = `${resolved}.lock`;
  const record = `${JSON.stringify(selfHolder())}\n`;
  // Two tries: the second after a stale lock was removed (a third process may win that race).
  for (let attempt = 0; attempt < 2; attempt++) {
    let fd: number;
    try {
      fd = openSync(lockFile, 'wx');
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      // No room for even an empty file: the file itself has none either.
      if (code !== undefined && OUT_OF_ROOM.has(code)) throw new LockFileWriteError(file, lockFile, code);
      if (code !== 'EEXIST') {
        // When the file cannot be written either (its directory is missing), its own refusal
        // follows and says why: a warning about the lock first would only be noise.
        if (canWrite(file)) {
          warn(`cannot create the lock file ${lockFile} (${code ?? (e as Error).message}): another simulator could write to ${file} unnoticed`);
        }
        return { lockFile: null, release: () => {} };
      }
      const found = readLock(lockFile);
      if (found === null) continue;
      const verdict = judge(lockFile, found);
      if (verdict.held) throw new FileLockedError(file, lockFile, found.holder, verdict, found.ageMs, sameAs);
      removeIfUnchanged(lockFile, found.text);
      continue;
    }
    writeRecord(fd, file, lockFile, record);
    hold(lockFile, { file, record, warn, clock: hostClock });
    const release = (): void => {
      if (!held.delete(lockFile)) return;
      removeIfUnchanged(lockFile, record);
      stopRefreshingIfNone(hostClock);
    };
    // Checked once this lock is there, with the file held open until the caller has opened it
    // (the end of this turn): of two simulators taking one file under two names at once, the one
    // that looks second sees the first.
    const probe = openQuietly(file);
    try {
      const elsewhere = heldUnderAnotherName(file, lockFile, judge);
      if (elsewhere) {
        release();
        throw elsewhere;
      }
    } finally {
      if (probe !== undefined) nextTurn(hostClock, () => closeSync(probe));
    }
    return { lockFile, release };
  }
  const found = readLock(lockFile);
  const holder = found?.holder ?? null;
  throw new FileLockedError(file, lockFile, holder, { held: true, because: 'refreshed' }, found?.ageMs ?? 0, sameAs);
}

/**
 * Writes a new lock file's record and closes it. A record that cannot be written whole (a full
 * disk) leaves an empty or partial lock file that would hold for `STALE_MS`: it is removed, and a
 * `LockFileWriteError` thrown.
 */
function writeRecord(fd: number, file: string, lockFile: string, record: string): void {
  let problem: string | undefined;
  try {
    if (writeSync(fd, record) < Buffer.byteLength(record)) problem = 'ENOSPC';
  } catch (e) {
    problem = (e as NodeJS.ErrnoException).code ?? (e as Error).message;
  } finally {
    closeSync(fd);
  }
  if (problem === undefined) return;
  try {
    unlinkSync(lockFile);
  } catch {
    // gone already
  }
  throw new LockFileWriteError(file, lockFile, problem);
}

/** A descriptor of `file` opened to read, or undefined when it cannot be (not made yet). */
function openQuietly(file: string): number | undefined {
  try {
    return openSync(file, 'r');
  } catch {
    return undefined;
  }
}

function hold(lockFile: string, entry: { file: string; record: string; warn: (line: string) => void; clock: HostClock }): void {
  held.set(lockFile, entry);
  if (!releaseOnExit) {
    releaseOnExit = true;
    process.on('exit', () => {
      for (const [path, { record }] of held) removeIfUnchanged(path, record);
    });
  }
  const { clock } = entry;
  if (!refreshers.has(clock)) {
    const refresher = every(clock, REFRESH_MS, () => refreshHeldLocks(clock));
    refresher.unref?.();
    refreshers.set(clock, refresher);
  }
}

/** Stops the refresh on `clock` when no lock taken with it is held any more. */
function stopRefreshingIfNone(clock: HostClock): void {
  for (const entry of held.values()) if (entry.clock === clock) return;
  refreshers.get(clock)?.clear();
  refreshers.delete(clock);
}

/**
 * Touches every lock this process holds, so that a simulator that cannot see this process (in
 * another container) knows it still runs. A lock found changed or gone (this process stalled past
 * `STALE_MS` and another took it over, or someone removed it) is no longer this process's: `warn`
 * says so once, and it is left alone.
 */
function refreshHeldLocks(clock: HostClock): void {
  const now = new Date();
  for (const [lockFile, { file, record, warn, clock: its }] of held) {
    if (its !== clock) continue;
    let text: string | undefined;
    try {
      text = readFileSync(lockFile, 'utf8');
      if (text === record) {
        utimesSync(lockFile, now, now);
        continue;
      }
    } catch {
      // gone
    }
    held.delete(lockFile);
    const holder = text === undefined ? null : parseHolder(text);
    warn(
      `the lock ${lockFile} is no longer this simulator's (${holder === null ? 'removed' : `now pid ${holder.pid}${holder.host === null ? '' : ` on host ${holder.host}`}`}): another simulator may write to ${file}`,
    );
  }
  stopRefreshingIfNone(clock);
}

/** Whether `file` can be written: it exists and is writable, or its directory is. */
function canWrite(file: string): boolean {
  try {
    accessSync(file, constants.W_OK);
    return true;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') return false;
  }
  try {
    accessSync(dirname(resolve(file)), constants.W_OK);
    return true;
  } catch {
    return false;
  }
}

/** Regular files (and files yet to be made) are locked; devices, pipes and sockets are not. */
function needsLock(file: string): boolean {
  try {
    return statSync(file).isFile();
  } catch {
    return true;
  }
}

function judge(lockFile: string, found: FoundLock): LockVerdict {
  return judgeLock(found.holder, { self: selfHolder(), heldHere: held.has(lockFile), processOf, ageMs: found.ageMs });
}

