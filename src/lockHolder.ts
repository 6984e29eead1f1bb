/**
 * Who holds a file's lock (see fileLock.ts): what a lock file records of its holder (`LockHolder`),
 * whether that holder still holds it (`judgeLock`), and the lock file read and removed.
 */
import { closeSync, existsSync, fstatSync, openSync, readFileSync, readSync, readlinkSync, unlinkSync } from 'node:fs';
import { hostname } from 'node:os';

/** A lock whose holder cannot be seen is stale once it has not been touched for this long. */
export const STALE_MS = 10_000;

/** Who holds a lock: what its lock file records (null where this system cannot say). */
export interface LockHolder {
  pid: number;
  /** The host name (in a container, the container's). */
  host: string | null;
  /** The kernel's boot id: the same for every container of one machine, new at each boot. */
  boot: string | null;
  /** The pid namespace the pid belongs to (`pid:[4026531836]`): pids compare only within one. */
  pidns: string | null;
  /** The process's start time (clock ticks since boot): a pid given to another process has another. */
  start: number | null;
}

/** A running process as this one sees it (in its own pid namespace). */
export interface ProcessSeen {
  /** Its start time, when the system says (Linux). */
  start: number | null;
  /** A zombie (exited, not yet reaped by its parent), or dead. */
  zombie: boolean;
}

/** Why a lock holds, or why it is stale. */
export type LockVerdict =
  | { held: true; because: 'this process' | 'running' | 'refreshed' }
  | { held: false; because: 'released' | 'not running' | 'zombie' | 'pid reused' | 'rebooted' | 'not refreshed' };

export interface LockContext {
  /** This process. */
  self: LockHolder;
  /** Whether this process took this lock (and has not released it). */
  heldHere: boolean;
  /** The process `pid` of this pid namespace, or null when none runs. */
  processOf: (pid: number) => ProcessSeen | null;
  /** How long ago the lock file was last touched. */
  ageMs: number;
}

/**
 * Whether a lock file's record (`holder`; null when it cannot be read as one) still holds. A record
 * from a version that wrote only a pid has nulls for the rest and is judged in this namespace.
 */
export function judgeLock(holder: LockHolder | null, context: LockContext): LockVerdict {
  const { self } = context;
  const fresh = (): LockVerdict => (context.ageMs < STALE_MS ? { held: true, because: 'refreshed' } : { held: false, because: 'not refreshed' });
  // Unreadable: a lock being written, or a file of another program: it holds while it is fresh.
  if (holder === null) return fresh();
  const legacy = holder.host === null && holder.boot === null && holder.pidns === null;
  const seen = legacy || (holder.boot === self.boot && holder.pidns === self.pidns && (self.boot !== null || holder.host === self.host));
  if (seen) {
    if (holder.pid === self.pid && (holder.start === null || holder.start === self.start)) {
      return context.heldHere ? { held: true, because: 'this process' } : { held: false, because: 'released' };
    }
    if (holder.pid === self.pid) return { held: false, because: 'pid reused' };
    const running = context.processOf(holder.pid);
    if (running === null) return { held: false, because: 'not running' };
    if (running.zombie) return { held: false, because: 'zombie' };
    if (holder.start !== null && running.start !== null && running.start !== holder.start) return { held: false, because: 'pid reused' };
    return { held: true, because: 'running' };
  }
  if (holder.host === self.host && holder.boot !== null && self.boot !== null && holder.boot !== self.boot) return { held: false, because: 'rebooted' };
  return fresh();
}

/** The file is held by another running process (or by another part of this one). */
export class FileLockedError extends Error {
  /** The holder's pid (null when its lock file cannot be read). */
  readonly pid: number | null;
  /**
   * `file`: the path as given; `sameAs`: the name the holder writes the file under, when it is
   * another (the target of a symbolic link, another hard link).
   */
  constructor(
    readonly file: string,
    readonly lockFile: string,
    readonly holder: LockHolder | null,
    verdict: LockVerdict & { held: true },
    ageMs: number,
    sameAs?: string,
  ) {
    super(lockedMessage(sameAs === undefined ? file : `${file} (the same file as ${sameAs})`, lockFile, holder, verdict, ageMs));
    this.name = 'FileLockedError';
    this.pid = holder?.pid ?? null;
  }
}

function lockedMessage(file: string, lockFile: string, holder: LockHolder | null, verdict: LockVerdict & { held: true }, ageMs: number): string {
  if (verdict.because === 'this process') {
    return `${file} is already held by this process (pid ${holder?.pid}): another simulator in it writes to it`;
  }
  if (verdict.because === 'running') {
    return `${file} is held by another running simulator (pid ${holder?.pid}, lock file ${lockFile}); stop it, or choose another file`;
  }
  const seconds = Math.max(0, Math.floor(ageMs / 1000));
  const who = holder === null ? 'an unreadable lock' : `pid ${holder.pid}${holder.host === null ? '' : ` on host ${holder.host}`}`;
  return (
    `${file} is held by another simulator, in another container or on another machine (${who}, lock file ${lockFile}, refreshed ${seconds} s ago); stop it, or choose another file. ` +
    `A lock not refreshed for ${STALE_MS / 1000} s is stale: if that simulator is gone, start again then, or remove the lock file`
  );
}

export interface FoundLock {
  text: string;
  holder: LockHolder | null;
  ageMs: number;
}

/**
 * The lock file's text, its record and its age, or null when there is none. Read through a
 * descriptor, so that a network file system revalidates what it caches of it.
 */
export function readLock(lockFile: string): FoundLock | null {
  let fd: number;
  try {
    fd = openSync(lockFile, 'r');
  } catch {
    return null;
  }
  try {
    const { mtimeMs, size } = fstatSync(fd);
    const bytes = Buffer.alloc(Math.min(size, 4096));
    const got = readSync(fd, bytes, 0, bytes.length, 0);
    const text = bytes.subarray(0, got).toString('utf8');
    return { text, holder: parseHolder(text), ageMs: Date.now() - mtimeMs };
  } catch {
    return null;
  } finally {
    closeSync(fd);
  }
}

/** A lock file's record: this version's JSON line, or an earlier version's bare pid; null when neither. */
export function parseHolder(text: string): LockHolder | null {
  const trimmed = text.trim();
  if (/^\d+$/.test(trimmed)) {
    const pid = Number(trimmed);
    return pid > 0 ? { pid, host: null, boot: null, pidns: null, start: null } : null;
  }
  let value: unknown;
  try {
    value = JSON.parse(trimmed);
  } catch {
    return null;
  }
  if (typeof value !== 'object' || value === null) return null;
  const { pid, host, boot, pidns, start } = value as Record<string, unknown>;
  const textOrNull = (v: unknown): v is string | null => v === null || typeof v === 'string';
  if (!(Number.isInteger(pid) && (pid as number) > 0)) return null;
  if (!textOrNull(host) || !textOrNull(boot) || !textOrNull(pidns)) return null;
  if (!(start === null || Number.isInteger(start))) return null;
  return { pid: pid as number, host, boot, pidns, start: start as number | null };
}

let self: LockHolder | undefined;

/** This process, as its locks record it. */
export function selfHolder(): LockHolder {
  self ??= {
    pid: process.pid,
    host: hostname(),
    boot: readOrNull(() => readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim()),
    pidns: readOrNull(() => readlinkSync('/proc/self/ns/pid')),
    start: readOrNull(() => parseStat(readFileSync('/proc/self/stat', 'utf8')).start),
  };
  return self;
}

function readOrNull<T>(read: () => T): T | null {
  try {
    return read();
  } catch {
    return null;
  }
}

export const hasProc = existsSync('/proc/self/stat');

/** The process `pid` of this pid namespace: from /proc where there is one, else by a signal 0. */
export function processOf(pid: number): ProcessSeen | null {
  if (hasProc) {
    try {
      return parseStat(readFileSync(`/proc/${pid}/stat`, 'utf8'));
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
      // Hidden (/proc mounted with hidepid): asked by a signal below.
    }
  }
  try {
    process.kill(pid, 0);
    return { start: null, zombie: false };
  } catch (e) {
    // EPERM: it runs, as another user.
    return (e as NodeJS.ErrnoException).code === 'EPERM' ? { start: null, zombie: false } : null;
  }
}

/**
 * A `/proc/PID/stat` line: `PID (COMM) STATE PPID ...`, the start time being field 22. COMM may
 * hold spaces and parentheses, so the fields are counted from the last `)`.
 */
export function parseStat(text: string): ProcessSeen {
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  const state = fields[0] ?? '';
  const start = Number(fields[19]);
  return { start: Number.isInteger(start) ? start : null, zombie: state === 'Z' || state === 'X' || state === 'x' };
}

/** Removes `lockFile` if it still holds `text`, so that another holder's lock stays. */
export function removeIfUnchanged(lockFile: string, text: string): void {
  const now = readOrNull(() => readFileSync(lockFile, 'utf8'));
  if (now !== text) return;
  try {
    unlinkSync(lockFile);
  } catch {
    // Gone already, or not ours to remove.
  }
}
