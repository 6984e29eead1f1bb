/**
 * A file a simulator writes as it runs (a transcript) is held through a lock file beside it,
 * `FILE.lock`, holding the pid of the process that holds it. A second simulator that would write
 * the same file is refused, naming that pid, instead of overwriting or interleaving with it. A lock
 * left by a process that is no longer running (killed with SIGKILL, a machine that stopped) is
 * stale and is taken over. Locks are released when the file is closed, and by the process's `exit`.
 *
 * Liveness is the pid's, on this machine: the lock guards against simulators that share a pid
 * namespace (the same host, the same container). A file that is not a regular file (a device such
 * as `/dev/full`, a pipe) is not locked: nothing of it can be lost.
 */
import { accessSync, closeSync, constants, openSync, readFileSync, statSync, unlinkSync, writeSync } from 'node:fs';
import { dirname, resolve } from 'node:path';

/** The file is held by another running process (or by another part of this one). */
export class FileLockedError extends Error {
  constructor(
    readonly file: string,
    readonly lockFile: string,
    readonly pid: number,
  ) {
    super(
      pid === process.pid
        ? `${file} is already held by this process (pid ${pid}): another simulator in it writes to it`
        : `${file} is held by another running simulator (pid ${pid}, lock file ${lockFile}); stop it, or choose another file`,
    );
    this.name = 'FileLockedError';
  }
}

export interface FileLock {
  /** The lock file, or null when the file needs none (not a regular file) or it could not be made. */
  readonly lockFile: string | null;
  /** Removes the lock file if it is still this holder's. */
  release(): void;
}

/** Lock files this process holds, by their absolute path. */
const held = new Set<string>();
let releaseOnExit = false;

export function lockFileOf(file: string): string {
  return `${resolve(file)}.lock`;
}

/**
 * The pid of a running process other than this lock's own holder that holds `file`, or null (free,
 * stale, or not lockable). Reads only: nothing is created or changed.
 */
export function fileHolder(file: string): number | null {
  if (!needsLock(file)) return null;
  const lockFile = lockFileOf(file);
  const pid = readPid(lockFile);
  return pid !== null && holderIsAlive(lockFile, pid) ? pid : null;
}

/**
 * Takes the lock of `file`: throws `FileLockedError` when a running process holds it; takes over a
 * stale one. When the lock file cannot be made (a read-only directory), `warn` says so and the
 * file is written unlocked.
 */
export function acquireFileLock(file: string, warn: (line: string) => void): FileLock {
  if (!needsLock(file)) return { lockFile: null, release: () => {} };
  const lockFile = lockFileOf(file);
  // Two tries: the second after a stale lock was removed (a third process may win that race).
  for (let attempt = 0; attempt < 2; attempt++) {
    let fd: number;
    try {
      fd = openSync(lockFile, 'wx');
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code !== 'EEXIST') {
        // When the file cannot be written either (its directory is missing), its own refusal
        // follows and says why: a warning about the lock first would only be noise.
        if (canWrite(file)) {
          warn(`cannot create the lock file ${lockFile} (${code ?? (e as Error).message}): another simulator could write to ${file} unnoticed`);
        }
        return { lockFile: null, release: () => {} };
      }
      const pid = readPid(lockFile);
      if (pid !== null && holderIsAlive(lockFile, pid)) throw new FileLockedError(file, lockFile, pid);
      removeLockFile(lockFile, pid);
      continue;
    }
    try {
      writeSync(fd, `${process.pid}\n`);
    } finally {
      closeSync(fd);
    }
    held.add(lockFile);
    if (!releaseOnExit) {
      releaseOnExit = true;
      process.on('exit', () => {
        for (const path of held) removeLockFile(path, process.pid);
      });
    }
    return {
      lockFile,
      release() {
        if (!held.delete(lockFile)) return;
        removeLockFile(lockFile, process.pid);
      },
    };
  }
  const pid = readPid(lockFile);
  throw new FileLockedError(file, lockFile, pid ?? 0);
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

function readPid(lockFile: string): number | null {
  let text: string;
  try {
    text = readFileSync(lockFile, 'utf8');
  } catch {
    return null;
  }
  const pid = Number(text.trim());
  return Number.isInteger(pid) && pid > 0 ? pid : null;
}

/**
 * Whether the process `pid` that a lock names is running. This process's own pid holds the lock
 * only if this process took it (else the pid was reused: a container restarted as pid 1).
 */
function holderIsAlive(lockFile: string, pid: number): boolean {
  if (pid === process.pid) return held.has(lockFile);
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    // EPERM: it runs, as another user.
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Removes `lockFile` if it still names `pid` (or cannot be read), so that another holder's lock stays. */
function removeLockFile(lockFile: string, pid: number | null): void {
  if (readPid(lockFile) !== pid) return;
  try {
    unlinkSync(lockFile);
  } catch {
    // Gone already, or not ours to remove.
  }
}
