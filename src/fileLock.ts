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
import {
  accessSync,
  closeSync,
  constants,
  existsSync,
  fstatSync,
  openSync,
  readFileSync,
  readSync,
  readdirSync,
  readlinkSync,
  realpathSync,
  statSync,
  unlinkSync,
  utimesSync,
  writeSync,
} from 'node:fs';
import { hostname } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { every, nextTurn, systemClock, type HostClock, type HostTimer } from './hostClock.js';

/** How often a holder touches its lock files. */
export const REFRESH_MS = 2_000;
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

/** The errors of a write that found no room: a full disk, a quota. */
const OUT_OF_ROOM = new Set(['ENOSPC', 'EDQUOT']);

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
function otherName(file: string, resolved: string): string | undefined {
  return resolved === resolve(file) ? undefined : resolved;
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
  const elsewhere = heldUnderAnotherName(file, lockFile);
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
      const elsewhere = heldUnderAnotherName(file, lockFile);
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

/**
 * A file of more than one hard link held under another of its names: the `FileLockedError` to
 * throw, or undefined. Its holders are found among the processes of this pid namespace that have
 * it open (`/proc/PID/fd`, whose link names the path each opened it by): the file is held when the
 * lock of such a path (other than `lockFile`, this name's own) holds. Reads only.
 */
function heldUnderAnotherName(file: string, lockFile: string): FileLockedError | undefined {
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

interface FoundLock {
  text: string;
  holder: LockHolder | null;
  ageMs: number;
}

/**
 * The lock file's text, its record and its age, or null when there is none. Read through a
 * descriptor, so that a network file system revalidates what it caches of it.
 */
function readLock(lockFile: string): FoundLock | null {
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

function judge(lockFile: string, found: FoundLock): LockVerdict {
  return judgeLock(found.holder, { self: selfHolder(), heldHere: held.has(lockFile), processOf, ageMs: found.ageMs });
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

const hasProc = existsSync('/proc/self/stat');

/** The process `pid` of this pid namespace: from /proc where there is one, else by a signal 0. */
function processOf(pid: number): ProcessSeen | null {
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
function removeIfUnchanged(lockFile: string, text: string): void {
  const now = readOrNull(() => readFileSync(lockFile, 'utf8'));
  if (now !== text) return;
  try {
    unlinkSync(lockFile);
  } catch {
    // Gone already, or not ours to remove.
  }
}
