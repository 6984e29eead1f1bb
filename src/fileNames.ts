/**
 * A file's names (see fileLock.ts): the lock is the file's, not the name's. A symbolic link is
 * followed to the file it names (`resolvedFile`), whose lock file lies beside it; a file of more
 * than one hard link is also checked for a holder under another of its names
 * (`heldUnderAnotherName`).
 */
import { readdirSync, readlinkSync, realpathSync, statSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { FileLockedError, hasProc, readLock, type FoundLock, type LockVerdict } from './lockHolder.js';

/**
 * The file `file` names, as an absolute path with every symbolic link followed: two paths of one
 * file give the same. A link to a file not made yet gives the file a write through it would make.
 */
export function resolvedFile(file: string): string {
  let path = resolve(file);
  // As many links as the system follows in one path (Linux's bound).
  for (let hops = 0; hops < 40; hops++) {
    try {
      return realpathSync(path);
    } catch {
      // Not there (yet): a link may still say where it will be.
    }
    let target: string;
    try {
      target = readlinkSync(path);
    } catch {
      break;
    }
    path = resolve(dirname(path), target);
  }
  try {
    return join(realpathSync(dirname(path)), basename(path));
  } catch {
    return path;
  }
}

/** The lock file of `file`: beside the file it names (symbolic links followed). */
export function lockFileOf(file: string): string {
  return `${resolvedFile(file)}.lock`;
}

/** `file`'s resolved path when it is not the path as given (a symbolic link, or a relative path's links): for messages. */
export function otherName(file: string, resolved: string): string | undefined {
  return resolved === resolve(file) ? undefined : resolved;
}

/**
 * A file of more than one hard link held under another of its names: the `FileLockedError` to
 * throw, or undefined. Its holders are found among the processes of this pid namespace that have
 * it open (`/proc/PID/fd`, whose link names the path each opened it by): the file is held when the
 * lock of such a path (other than `lockFile`, this name's own) holds (`judge`). Reads only.
 */
export function heldUnderAnotherName(file: string, lockFile: string, judge: (lockFile: string, found: FoundLock) => LockVerdict): FileLockedError | undefined {
  let target: { dev: bigint; ino: bigint; nlink: bigint };
  try {
    target = statSync(file, { bigint: true });
  } catch {
    return undefined;
  }
  if (target.nlink < 2n || !hasProc) return undefined;
  let pids: string[];
  try {
    pids = readdirSync('/proc');
  } catch {
    return undefined;
  }
  for (const pid of pids) {
    if (!/^\d+$/.test(pid)) continue;
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${pid}/fd`);
    } catch {
      // gone, or another user's
      continue;
    }
    for (const fd of fds) {
      const link = `/proc/${pid}/fd/${fd}`;
      let name: string;
      let opened: { dev: bigint; ino: bigint };
      try {
        name = readlinkSync(link);
        // Sockets, pipes and the like have no path.
        if (!name.startsWith('/')) continue;
        opened = statSync(link, { bigint: true });
      } catch {
        continue;
      }
      if (opened.ino !== target.ino || opened.dev !== target.dev) continue;
      const otherLock = lockFileOf(name);
      if (otherLock === lockFile) continue;
      const found = readLock(otherLock);
      if (found === null) continue;
      const verdict = judge(otherLock, found);
      if (verdict.held) return new FileLockedError(file, otherLock, found.holder, verdict, found.ageMs, name);
    }
  }
  return undefined;
}
