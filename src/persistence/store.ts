/**
 * The state file of a running simulator: every request it handles becomes a line (see format.ts),
 * written before the request's answer is sent.
 *
 * Durability without a write per poll: a state-changing request (anything but GET and HEAD) is
 * written with one synchronous write, so `kill -9` after its answer was sent cannot lose it. A poll
 * (GET, HEAD: it changes nothing a client relies on, though it spends a rate-limit token, adds a
 * journal entry and takes a request id) is kept in memory and written with the next state-changing
 * line (so the order is kept), or within a second by a timer, or at close: `kill -9` can lose only
 * the polls of the last second. A check each second writes an `{"ids":N}` line when the core gave
 * out global request ids that no line shows (reads of the control API, media).
 *
 * Compaction: once the request lines after the last snapshot (the tail) pass `COMPACT_MIN_TAIL_BYTES`
 * and a quarter of the header and snapshot before them (`REPLAY_WEIGHT`: a line costs several times
 * as much to replay as a snapshot's row of its size costs to load), the file is rewritten as the
 * header and a snapshot of the core's state (the file that restores the same state fastest). Off the request
 * path and a slice at a time, so that no request waits for it: the state is captured at once (the
 * core copies only what can still change), then its rows are serialised and written to a temporary
 * file beside the file a chunk at a time between requests, flushed to the disk; the lines the file
 * gained meanwhile are copied after them, and the temporary file is renamed over the file, so that
 * a crash at any moment leaves the old file or the new one. The tail's size is bounded by a
 * quarter of the snapshot's, so a restore replays in about the time it loads, and compaction costs
 * at most one snapshot written per quarter snapshot's worth of lines. A compaction that fails (a full disk, anything)
 * leaves the file as it was, answers no request with an error, says why, and is tried again later,
 * after a delay that doubles with each failure.
 *
 * A compaction never costs an append its room: it is not begun unless the volume has room for the
 * new file (estimated: `compactedEstimate`) and room left for the appends meanwhile,
 * each slice is written only while that room is left, and an append that finds no room while one
 * is under way abandons it (its temporary file emptied and removed) and is tried again at once.
 * Compaction is then tried again once there is room, checked every `COMPACT_RETRY_FIRST_MS`.
 *
 * An append that finds no room (a full disk, a quota) is not given up: its lines, and those of the
 * requests that follow, wait in memory in their order and are tried again at every state-changing
 * request and every `WRITE_RETRY_MS`, until the volume has room again. Meanwhile an answer is sent
 * only once its line is written (`whenWritten`, which the HTTP adapter waits for before it sends
 * the answer of a state-changing request): nothing acknowledged is lost to a `kill -9`. When the
 * simulator stops first, those answers are never sent.
 *
 * A global reset makes a new run: the file is replaced (the same way) by a new header. A write
 * that fails otherwise (an I/O error), or lines waiting for room past `WAITING_MAX_BYTES`, stops
 * the state being kept: requests are answered from then on (not those whose answers waited for
 * their lines: those are never sent), a warning says so, and `GET /_sim/health` shows it.
 *
 * The file is written where its path leads (symbolic links followed, as its lock is taken): a
 * compaction's temporary file lies beside the file itself and is renamed over it, not over a link.
 */
import { closeSync, createReadStream, fstatSync, fsyncSync, ftruncateSync, openSync, readSync, readdirSync, renameSync, statfsSync, unlinkSync } from 'node:fs';
import { open, statfs, type FileHandle } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { basename, dirname, join } from 'node:path';
import type { Exchange, StreamedBody } from '../api/exchange.js';
import { isoTime, type VirtualClock } from '../core/clock.js';
import type { Simulator } from '../core/simulator.js';
import { LockFileWriteError, acquireFileLock, resolvedFile, type FileLock } from '../fileLock.js';
import { every, nextTurn, systemClock, type HostClock, type HostTimer } from '../hostClock.js';
import { cutFile, readFileBytes, writeRowBytes, writeRowBytesAsync, writeRows } from '../fileRows.js';
import { globalIdNumber } from '../core/requestIds.js';
import { formatIds, formatMediaFaultTaken, formatStateLine, type MediaFaultTaken } from './format.js';
import { formatStateHeader, type StateHeader } from './header.js';
import { chunksOf, compactedLines, stateHeaderOf } from './snapshot.js';
import { StateRefusedError, refuseForeignFile } from './open.js';

/** What `GET /_sim/health` shows of the state. */
export interface StateStatus {
  file: string;
  /** The file's size, the polls still held in memory included. */
  bytes: number;
  /** The requests it holds. */
  lines: number;
  /** When the file was last compacted (ISO, wall clock), or null. */
  compacted_at: string | null;
  /** Present when a write failed and the state is no longer kept: the error's code. */
  write_failed?: string;
  /**
   * Present while lines wait in memory for room on the volume (a full disk, a quota): the error's
   * code, and since when (ISO, wall clock). The answers of state-changing requests wait with them.
   */
  write_blocked?: string;
  write_blocked_since?: string;
  /**
   * Present while compaction waits for room on the volume: the bytes free when it was last
   * checked, and what a compaction needs (its new file, as estimated, and room left for the appends
   * meanwhile). Checked again at `compaction_retry_at`.
   */
  compaction_no_room?: { free_bytes: number; needed_bytes: number };
  /** Present while a compaction is under way. */
  compacting?: true;
  /** Present when the last compaction failed (the file is as it was): its error's code, and when it is tried again (ISO, wall clock). */
  compaction_failed?: string;
  compaction_retry_at?: string;
}

/** How long a poll's line may wait in memory before it is written. */
const POLL_FLUSH_MS = 1000;

/** The errors of a write that found no room: its lines wait in memory until there is room again. */
const OUT_OF_ROOM = new Set(['ENOSPC', 'EDQUOT']);

/** How often lines waiting for room are tried again (besides at every state-changing request). */
const WRITE_RETRY_MS = 1000;

/**
 * The most bytes of lines that wait in memory for room: past it, the state stops being kept (as
 * after a write that failed otherwise) rather than the process's memory filling up.
 */
export const WAITING_MAX_BYTES = 64 * 1024 * 1024;

/**
 * The room a compaction leaves free on the volume at every moment, for the lines appended while it
 * runs: this at least, and an eighth of the file.
 */
const COMPACT_ROOM_RESERVE_BYTES = 4 * 1024 * 1024;

/** The room a compaction of a file of `bytes` keeps free for appends. */
function compactionReserve(bytes: number): number {
  return Math.max(COMPACT_ROOM_RESERVE_BYTES, Math.ceil(bytes / 8));
}

/**
 * The tail (request lines after the snapshot) is compacted once it is at least this big and
 * weighs more than the header and snapshot before it at `REPLAY_WEIGHT`. 4 MiB is about 13,000
 * lines, which restore in about 0.25 s; below it a compaction would cost more than the replay it
 * saves (see docs/state.md, "Compaction").
 */
export const COMPACT_MIN_TAIL_BYTES = 4 * 1024 * 1024;

/**
 * How much more a byte of request lines costs to restore (replayed through the request path) than
 * a byte of a snapshot's rows (loaded): measured, about 5 times for polls and 14 for creates of the
 * longest prompts. The tail is weighed at 4 times its size, so that a restore spends about as long
 * replaying the tail as loading the snapshot, whatever the file's size.
 */
const REPLAY_WEIGHT = 4;

/**
 * How long after a compaction that failed the next one is tried (the state is still kept: the file
 * grows meanwhile); each failure that follows doubles it, up to `COMPACT_RETRY_MAX_MS`.
 */
export const COMPACT_RETRY_FIRST_MS = 10_000;
const COMPACT_RETRY_MAX_MS = 10 * 60_000;

/**
 * A snapshot is serialised and written about this many bytes at a time, between requests: a slice
 * costs a few milliseconds (serialising runs at a few hundred MB/s).
 */
const COMPACT_CHUNK_BYTES = 1 << 20;

/**
 * The lines the file gained while a snapshot was written are copied after it in chunks of this
 * size, between requests; the last ones (fewer than this) with the rename, at once.
 */
const CATCH_UP_BYTES = 1 << 20;

/** The file's size past which it is compacted, `base` bytes being its header and snapshot. */
function compactionBound(base: number): number {
  return base + Math.max(COMPACT_MIN_TAIL_BYTES, Math.ceil(base / REPLAY_WEIGHT));
}

export interface StoreOptions {
  file: string;
  core: Simulator;
  overrides: StateHeader['overrides'];
  /** The wall-clock reading at which the core's clock began (the new file's anchor). */
  anchor: number;
  /** What an existing file held when it was read (it is appended to), or undefined: a new file. */
  existing?: { size: number; wholeBytes: number; lines: number; lastSeq: number; lastIds: number; snapshotBytes: number; compactedAt: string | null };
  warn: (line: string) => void;
  /** The host's timers the store runs on (the polls' flush, the ids check, the retries, a compaction's turns) and its lock's. Default: `systemClock`. */
  hostClock?: HostClock;
}

/** What a compaction did: the file's size before and after. */
export interface Compaction {
  before: number;
  after: number;
}

/** A compaction was not begun, or was abandoned, for want of room on the volume (see `StateStore.compactionNeeds`). */
class NoRoomError extends Error {
  readonly code = 'ENOSPC';
  constructor(
    readonly free: number,
    readonly needed: number,
  ) {
    super(`not enough room on its volume (${free} bytes free, a compaction needs about ${needed})`);
  }
}

export class StateStore {
  private phase: 'new' | 'open' | 'stopped' | 'closed' = 'new';
  /** Where the file is written: its path with symbolic links followed (set when it is taken). */
  private path: string;
  private fd: number | undefined;
  private lock: FileLock | undefined;
  private pending = '';
  private pendingLines = 0;
  private timer: HostTimer | undefined;
  /** Checks every second for global request ids given out without a line (control reads, media). */
  private idsCheck: HostTimer | undefined;
  /** Bytes and request lines in the file. */
  private bytes = 0;
  private lines = 0;
  /** The file's size at which compaction is tried next (see `COMPACT_MIN_TAIL_BYTES`). */
  private compactAt = Infinity;
  /** The bytes of the file's header and snapshot (the lines follow them). */
  private base = 0;
  /** How many bytes of snapshot the last compaction made of a byte of lines (see `compactedEstimate`). */
  private growth = 1;
  /** A new file is at least this big: what a compaction abandoned for want of room had written. */
  private atLeast = 0;
  private compactedAt: string | null = null;
  private seq = 0;
  /** The highest global request id the file (with what is pending) accounts for. */
  private idsKept = 0;
  private writeFailed: string | undefined;
  /** Set while lines wait in memory for room (the pending ones): the error, and since when (host time, ms). */
  private blocked: { code: string; since: number } | undefined;
  /** Tries the waiting lines again while `blocked`. */
  private retryTimer: HostTimer | undefined;
  /** The answers waiting for the lines now pending to be written (see `whenWritten`). */
  private waiting: ((written: boolean) => void)[] = [];
  /** Set while compaction waits for room: what the last check found. */
  private noRoom: { free: number; needed: number } | undefined;
  /** The compaction under way, if any. */
  private compaction: Compacting | undefined;
  private compactions = 0;
  /** When a compaction past the bound may be tried again (host time, ms), and the delay after the next failure. */
  private retryAt = -Infinity;
  private retryDelayMs = COMPACT_RETRY_FIRST_MS;
  /** The error of the last compaction past the bound, when it failed. */
  private compactionError: string | undefined;
  /** The core's clock as of the file's header: another one means a global reset happened. */
  private clockSeen: VirtualClock;
  private anchor: number;
  private readonly hostClock: HostClock;

  constructor(private readonly options: StoreOptions) {
    this.path = options.file;
    this.hostClock = options.hostClock ?? systemClock;
    this.clockSeen = options.core.clock;
    this.anchor = options.anchor;
    if (options.existing) {
      this.lines = options.existing.lines;
      this.seq = options.existing.lastSeq;
      this.idsKept = options.existing.lastIds;
      this.compactedAt = options.existing.compactedAt;
    }
  }

  /**
   * Takes the file: its lock, then the file (appended to when it was restored, else written anew
   * with a header). Called once the server listens, so that a start that fails touches nothing.
   * Throws `FileLockedError`, or `StateRefusedError` when the file changed since it was read.
   */
  open(): void {
    if (this.phase !== 'new') return;
    const { file, existing } = this.options;
    try {
      this.lock = acquireFileLock(file, this.options.warn, this.hostClock);
    } catch (e) {
      // No lock file is left behind: the next start finds none to wait for.
      if (e instanceof LockFileWriteError) throw new StateRefusedError(`cannot write the state file ${file}: ${e.message}`);
      throw e;
    }
    this.path = resolvedFile(file);
    removeStaleTemporaryFiles(this.path);
    try {
      if (existing) {
        this.fd = openSync(this.path, 'a');
        const size = fstatSync(this.fd).size;
        if (size !== existing.size) {
          throw new StateRefusedError(
            `the state file ${file} changed while the simulator started (${existing.size} bytes when read, ${size} now): start again`,
          );
        }
        // A torn last line was dropped when restoring: the file drops it too.
        if (existing.wholeBytes < size) ftruncateSync(this.fd, existing.wholeBytes);
        this.bytes = existing.wholeBytes;
        this.base = existing.snapshotBytes;
        this.compactAt = compactionBound(existing.snapshotBytes);
      } else {
        // Checked again: a file this simulator did not write may have appeared since it was read.
        refuseForeignFile(this.path);
        this.fd = openSync(this.path, 'w');
        const header = `${formatStateHeader(this.header())}\n`;
        const bytes = Buffer.byteLength(header);
        writeRows(this.fd, header, bytes);
        this.bytes = bytes;
        this.base = bytes;
        this.compactAt = compactionBound(this.bytes);
      }
    } catch (e) {
      if (this.fd !== undefined) closeSync(this.fd);
      this.fd = undefined;
      this.lock.release();
      if (e instanceof StateRefusedError) throw e;
      throw new StateRefusedError(`cannot write the state file ${file}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
    }
    this.phase = 'open';
    this.idsCheck = every(this.hostClock, POLL_FLUSH_MS, () => {
      if (this.options.core.globalRequestCount > this.idsKept) this.flush();
    });
    this.idsCheck.unref?.();
  }

  /** Keeps one exchange (the request path calls this as each request is handled). Never throws. */
  record(exchange: Exchange): void {
    if (!this.opened()) return;
    if (this.renewedForReset()) return;
    const { core } = this.options;
    const line = `${formatStateLine(++this.seq, core.hostTimeMs(), exchange)}\n`;
    const globalId = globalIdNumber(exchange.answer.headers['X-Request-Id'] ?? '');
    if (globalId !== null && globalId > this.idsKept) this.idsKept = globalId;
    this.pending += line;
    this.pendingLines++;
    if (exchange.method === 'GET' || exchange.method === 'HEAD') this.arm();
    else this.flush();
  }

  /**
   * Keeps a download's take of a queued media fault (the queue changed: written at once, like a
   * state-changing request). Never throws.
   */
  recordMediaFault(taken: MediaFaultTaken): void {
    if (!this.opened()) return;
    this.renewedForReset();
    // Not a request: `lines` counts requests only.
    this.pending += `${formatMediaFaultTaken(taken)}\n`;
    this.flush();
  }

  /**
   * After a global reset (the core has a new clock), replaces the file with a new run's header
   * (`renew`); answers whether it did. The reset's own request is not a line of the new run.
   */
  private renewedForReset(): boolean {
    const { core } = this.options;
    if (core.clock === this.clockSeen) return false;
    this.renew(core.hostTimeMs());
    return true;
  }

  /** Writes what is held in memory (polls, and the global ids given out since the last line). */
  flush(): void {
    if (this.timer) {
      this.timer.clear();
      this.timer = undefined;
    }
    if (this.phase !== 'open') return;
    const ids = this.options.core.globalRequestCount;
    if (ids > this.idsKept) {
      this.pending += `${formatIds(ids)}\n`;
      this.idsKept = ids;
    }
    if (this.pending === '') return;
    const text = this.pending;
    const bytes = Buffer.byteLength(text);
    // Cleared only once written: lines that find no room wait, and those that follow go after them.
    const failed = this.append(text, bytes);
    if (failed !== undefined) {
      if (failed.room && bytes <= WAITING_MAX_BYTES) this.block(failed.code);
      else this.fail(failed.error);
      return;
    }
    this.pending = '';
    this.bytes += bytes;
    this.lines += this.pendingLines;
    this.pendingLines = 0;
    if (this.blocked) this.unblock();
    if (this.bytes >= this.compactAt && this.options.core.hostTimeMs() >= this.retryAt) this.startCompaction(true);
  }

  /**
   * Writes `text` (`bytes` long) after the file's whole lines. A write that fails leaves the file
   * cut back to them and answers why: `room` when it found no room (and the file could be cut), so
   * that it may be tried again. A compaction under way gives way to it: when it finds no room, the
   * compaction is abandoned (its temporary file emptied) and the write tried once more.
   */
  private append(text: string, bytes: number): { error: unknown; code: string; room: boolean } | undefined {
    for (let attempt = 0; ; attempt++) {
      try {
        // At the end of the whole lines, not at the descriptor's position (a new file's is not
        // opened to append): after a line written in part was cut off, that would leave a hole.
        writeRows(this.fd as number, text, bytes, { offset: this.bytes });
        return undefined;
      } catch (e) {
        const code = (e as NodeJS.ErrnoException).code ?? 'unknown';
        // A line written in part that cannot be cut off would be followed by the next: not tried again.
        const room = OUT_OF_ROOM.has(code) && cutFile(this.fd as number, this.bytes);
        const job = this.compaction;
        if (!room || attempt > 0 || job === undefined || job.renamed) return { error: e, code, room };
        this.abortCompaction();
        this.waitForRoom(freeBytesNow(this.path), this.compactionNeeds());
      }
    }
  }

  /**
   * While the lines pending cannot be written for want of room, a promise that settles once they
   * are: true, or false when they never will be (the simulator stops, or the state stops being
   * kept). The answer of a state-changing request is sent only after it settles true. Undefined
   * when nothing waits.
   */
  whenWritten(): Promise<boolean> | undefined {
    if (this.blocked === undefined) return undefined;
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  /**
   * The simulator stops: the lines waiting for room are tried once more, and the answers still
   * waiting then are never sent (their requests are not kept, so they must not be acknowledged).
   */
  stopWaiting(): void {
    this.flush();
    this.settleWaiting(false);
  }

  /** The pending lines found no room (`code`): they wait, tried again every `WRITE_RETRY_MS`. */
  private block(code: string): void {
    if (this.blocked !== undefined) return;
    this.blocked = { code, since: this.options.core.hostTimeMs() };
    this.retryTimer = every(this.hostClock, WRITE_RETRY_MS, () => this.flush());
    this.retryTimer.unref?.();
    this.options.warn(
      `state: cannot write the state file ${this.options.file} (${code}): the lines of the requests from now on wait in memory, in their order, ` +
        'and are written once there is room; the answers of the requests that change state wait for them',
    );
  }

  /** The lines that waited for room are written: the answers waiting for them go. */
  private unblock(): void {
    this.blocked = undefined;
    this.retryTimer?.clear();
    this.retryTimer = undefined;
    this.options.warn(`state: the state file ${this.options.file} is written again: the lines that waited for room are in it`);
    this.settleWaiting(true);
  }

  private settleWaiting(written: boolean): void {
    const waiting = this.waiting;
    this.waiting = [];
    for (const settle of waiting) settle(written);
  }

  /**
   * Rewrites the file as the header and a snapshot of the core's state (whatever the file's size),
   * as past the bound but at once (a compaction under way is waited for). Answers the sizes before
   * and after, or undefined when the state is not kept or the compaction failed (a warning says why;
   * the file is as it was).
   */
  async compact(): Promise<Compaction | undefined> {
    if (!this.opened()) return undefined;
    await this.compaction?.done;
    return this.startCompaction(false);
  }

  /**
   * Starts a compaction (one at a time) on the next turn of the event loop; `pastBound`: not asked
   * for (a failure is tried again later). Never throws; its promise never rejects.
   */
  private startCompaction(pastBound: boolean): Promise<Compaction | undefined> {
    if (this.compaction) return this.compaction.done;
    const job: Compacting = {
      temporary: `${this.path}.${process.pid}.${++this.compactions}.tmp`,
      handle: undefined,
      aborted: false,
      renamed: false,
      done: Promise.resolve(undefined),
    };
    this.compaction = job;
    job.done = new Promise<void>((resolve) => void nextTurn(this.hostClock, resolve))
      .then(() => this.runCompaction(job))
      .catch((e: unknown) => {
        if (!job.aborted) this.compactionFailed(e, pastBound);
        return undefined;
      })
      .finally(() => {
        if (this.compaction === job) this.compaction = undefined;
        if (!job.renamed) removeQuietly(job.temporary);
        // Its room is free only now that its file is closed: lines waiting for it go at once.
        if (this.blocked) this.flush();
      });
    return job.done;
  }

  private async runCompaction(job: Compacting): Promise<Compaction | undefined> {
    const { core, file } = this.options;
    // Lines waiting for room come first: a compaction would take it.
    const stop = (): boolean => job.aborted || this.phase !== 'open' || this.blocked !== undefined;
    if (stop()) return undefined;
    // Everything up to the capture is in the file: the lines after it are the new file's tail.
    this.flush();
    if (stop()) return undefined;
    const reserve = compactionReserve(this.bytes);
    /** Bytes in the temporary file so far. */
    let taken = 0;
    // Room for the new file and the appends meanwhile, or none is begun; and every slice leaves the
    // appends their room. A compaction abandoned part-way shows the new file to be bigger than that.
    const roomFor = async (bytes: number): Promise<void> => {
      const free = await freeBytes(this.path);
      if (free - bytes >= reserve) return;
      if (taken > 0) this.atLeast = Math.max(this.atLeast, taken + bytes);
      throw new NoRoomError(free, this.compactionNeeds());
    };
    const from = { bytes: this.bytes, lines: this.lines };
    const wall = core.hostTimeMs();
    // Captured at once, in the turn that wrote the lines it stands for; let go if there is no room,
    // and item by item as their lines are written (`release`): see below.
    let lines: Iterable<string> | undefined = compactedLines(this.header(), core.captureState(), this.seq, wall, true);
    await roomFor(this.compactedEstimate());
    if (stop()) return undefined;
    let handle: FileHandle | undefined;
    let reader: FileHandle | undefined;
    try {
      handle = await open(job.temporary, 'w');
      job.handle = handle;
      let written = 0;
      for (const chunk of chunksOf(lines, COMPACT_CHUNK_BYTES, true)) {
        if (stop()) return undefined;
        await roomFor(chunk.length);
        if (stop()) return undefined;
        await writeRowBytesAsync(handle, chunk);
        written += chunk.length;
        taken += chunk.length;
      }
      // The capture is let go once written: it holds what the state has dropped since (evicted
      // generations, journal records, stored answers), and the copying below may take a while.
      lines = undefined;
      reader = await open(this.path, 'r');
      let copied = from.bytes;
      const buffer = Buffer.allocUnsafe(CATCH_UP_BYTES);
      while (!stop() && this.bytes - copied > CATCH_UP_BYTES) {
        await roomFor(CATCH_UP_BYTES);
        if (stop()) return undefined;
        const { bytesRead } = await reader.read(buffer, 0, CATCH_UP_BYTES, copied);
        if (bytesRead === 0) throw new Error(`${file} is shorter than the lines written to it`);
        await writeRowBytesAsync(handle, buffer.subarray(0, bytesRead));
        copied += bytesRead;
        taken += bytesRead;
      }
      await handle.sync();
      if (stop()) return undefined;
      // The last lines and the rename at once: no line is written meanwhile. They are flushed to
      // the disk as any line is (not at once): the snapshot before them is.
      for (let rest = this.bytes - copied; rest > 0; ) {
        const got = readSync(reader.fd, buffer, 0, Math.min(rest, CATCH_UP_BYTES), copied);
        if (got === 0) throw new Error(`${file} is shorter than the lines written to it`);
        writeRowBytes(handle.fd, buffer.subarray(0, got));
        copied += got;
        rest -= got;
      }
      renameSync(job.temporary, this.path);
      job.renamed = true;
      return this.appendToCompacted(from, written, wall);
    } finally {
      job.handle = undefined;
      await reader?.close();
      await handle?.close();
    }
  }

  /**
   * About how big a compaction's new file would be: the file's header and snapshot, and its lines
   * after them as the snapshot rows they become, each byte as many bytes as the last compaction
   * made of one (at least 1: a create under an Idempotency-Key is in a snapshot twice, a poll not
   * at all); and at least what a compaction abandoned for want of room had already written.
   */
  private compactedEstimate(): number {
    return Math.max(this.atLeast, Math.ceil(this.base + (this.bytes - this.base) * this.growth));
  }

  /** What a compaction needs free on the volume: the new file, and the room it leaves for appends. */
  private compactionNeeds(): number {
    return this.compactedEstimate() + compactionReserve(this.bytes);
  }

  /**
   * Compaction waits for room (`free` bytes were free, `needed` are): tried again after
   * `COMPACT_RETRY_FIRST_MS` (a check costs nothing: no longer each time), said once.
   */
  private waitForRoom(free: number, needed: number): void {
    const first = this.noRoom === undefined;
    this.noRoom = { free, needed };
    this.compactionError = undefined;
    this.retryAt = this.options.core.hostTimeMs() + COMPACT_RETRY_FIRST_MS;
    if (first) {
      this.options.warn(
        `state: not compacting ${this.options.file} for now: its volume has ${free} bytes free, and a compaction needs about ${needed} ` +
          `(the new file, and room left for the appends meanwhile); it is still appended to, and compaction is tried again once there is room (checked every ${COMPACT_RETRY_FIRST_MS / 1000} s)`,
      );
    }
  }

  /**
   * The compacted file (`snapshotBytes` of header and snapshot, then the lines written since
   * `from`) took the file's place: it is appended to from now on. Run at once with the rename.
   */
  private appendToCompacted(from: { bytes: number; lines: number }, snapshotBytes: number, wall: number): Compaction | undefined {
    const before = this.bytes;
    const tail = this.bytes - from.bytes;
    try {
      closeSync(this.fd as number);
      this.fd = openSync(this.path, 'a');
    } catch (e) {
      this.fd = undefined;
      this.fail(e);
      return undefined;
    }
    const folded = from.bytes - this.base;
    if (folded > 0) this.growth = Math.max(1, (snapshotBytes - this.base) / folded);
    this.base = snapshotBytes;
    this.atLeast = 0;
    this.bytes = snapshotBytes + tail;
    this.lines -= from.lines;
    this.compactAt = compactionBound(snapshotBytes);
    this.compactedAt = isoTime(wall);
    this.retryAt = -Infinity;
    this.retryDelayMs = COMPACT_RETRY_FIRST_MS;
    this.compactionError = undefined;
    this.noRoom = undefined;
    return { before, after: this.bytes };
  }

  /**
   * A compaction failed: the file is as it was, and is appended to as before. Past the bound, it is
   * tried again after a delay (not on the next request: a disk that is full stays full a while).
   */
  private compactionFailed(e: unknown, pastBound: boolean): void {
    if (e instanceof NoRoomError) {
      if (pastBound) this.waitForRoom(e.free, e.needed);
      else this.options.warn(`state: cannot compact ${this.options.file}: ${e.message}; it is kept as it was`);
      return;
    }
    const why = (e as NodeJS.ErrnoException).code ?? (e instanceof Error ? e.message : String(e));
    const kept = `state: cannot compact ${this.options.file} (${why}); it is kept as it was and still appended to`;
    if (!pastBound) {
      this.options.warn(kept);
      return;
    }
    const delay = this.retryDelayMs;
    this.noRoom = undefined;
    this.compactionError = why;
    this.retryAt = this.options.core.hostTimeMs() + delay;
    this.retryDelayMs = Math.min(2 * delay, COMPACT_RETRY_MAX_MS);
    this.options.warn(`${kept}, and compaction is tried again in ${delay / 1000} s`);
  }

  /**
   * Stops the compaction under way, if any: its temporary file is emptied (a file removed while
   * open keeps its room until closed) and removed, the file is left as it is.
   */
  private abortCompaction(): void {
    const job = this.compaction;
    if (!job) return;
    job.aborted = true;
    this.compaction = undefined;
    if (job.handle) cutFile(job.handle.fd, 0);
    removeQuietly(job.temporary);
  }

  status(): StateStatus {
    return {
      file: this.options.file,
      bytes: this.bytes + Buffer.byteLength(this.pending),
      lines: this.lines + this.pendingLines,
      compacted_at: this.compactedAt,
      ...(this.writeFailed !== undefined && { write_failed: this.writeFailed }),
      ...(this.blocked !== undefined && { write_blocked: this.blocked.code, write_blocked_since: isoTime(this.blocked.since) }),
      // Over once the compacted file has taken the file's place (and `compacted_at` says so), though
      // its file handles are still being closed.
      ...(this.compaction !== undefined && !this.compaction.renamed && { compacting: true as const }),
      ...(this.compactionError !== undefined && { compaction_failed: this.compactionError, compaction_retry_at: isoTime(this.retryAt) }),
      ...(this.noRoom !== undefined && {
        compaction_no_room: { free_bytes: this.noRoom.free, needed_bytes: this.noRoom.needed },
        compaction_retry_at: isoTime(this.retryAt),
      }),
    };
  }

  /**
   * The state as a compacted file (the header and a snapshot of the state now, no request line:
   * nothing to replay), for `GET /_sim/state`. The file itself is left as it is.
   */
  compacted(): StreamedBody {
    const { core, overrides } = this.options;
    return compactedBody(core, overrides, this.anchor, this.seq);
  }

  /** The state file as it is now (what is held in memory written first), streamed. */
  contents(): StreamedBody {
    this.opened();
    this.flush();
    const file = this.path;
    const length = this.fd === undefined ? 0 : this.bytes;
    return {
      length,
      // By path: a stream still being sent when the file is closed reads on.
      open: () => (length === 0 ? Readable.from([]) : createReadStream(file, { start: 0, end: length - 1 })),
      text: () => (length === 0 ? '' : readFileBytes(file, 0, length).toString('utf8')),
    };
  }

  /** Writes what is held, closes the file and releases it (nothing is kept after this). */
  close(): void {
    if (this.phase === 'closed') return;
    this.flush();
    if (this.blocked !== undefined) {
      this.options.warn(
        `state: the last ${this.pendingLines} request lines could not be written to ${this.options.file} (${this.blocked.code}) before the simulator stopped: ` +
          'they are not kept, and the requests among them that change state were not answered',
      );
      this.pending = '';
      this.pendingLines = 0;
      this.blocked = undefined;
      this.retryTimer?.clear();
    }
    this.settleWaiting(false);
    this.abortCompaction();
    this.phase = 'closed';
    this.idsCheck?.clear();
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = undefined;
    this.lock?.release();
  }

  /** Opens the file for an app that never listened; a failure stops keeping the state, not the request. */
  private opened(): boolean {
    if (this.phase === 'new') {
      try {
        this.open();
      } catch (e) {
        this.fail(e);
      }
    }
    return this.phase === 'open';
  }

  private arm(): void {
    if (this.timer !== undefined) return;
    this.timer = this.hostClock.setTimeout(() => this.flush(), POLL_FLUSH_MS);
    this.timer.unref?.();
  }

  private header(): StateHeader {
    return stateHeaderOf(this.options.core, this.options.overrides, this.anchor);
  }

  /** Replaces the file with a new header (a global reset began a new run at wall time `anchor`). */
  private renew(anchor: number): void {
    const { core } = this.options;
    const file = this.path;
    this.abortCompaction();
    this.clockSeen = core.clock;
    this.anchor = anchor;
    this.pending = '';
    this.pendingLines = 0;
    this.seq = 0;
    // The reset's own id was given before it: the core's count restarted after it.
    this.idsKept = 0;
    const header = `${formatStateHeader(this.header())}\n`;
    const bytes = Buffer.byteLength(header);
    try {
      replaceFile(file, header, bytes);
      closeSync(this.fd as number);
      this.fd = openSync(file, 'a');
    } catch (e) {
      this.fail(e);
      return;
    }
    this.bytes = bytes;
    this.base = bytes;
    this.atLeast = 0;
    this.compactAt = compactionBound(this.bytes);
    this.lines = 0;
    this.compactedAt = null;
    this.retryAt = -Infinity;
    this.retryDelayMs = COMPACT_RETRY_FIRST_MS;
    this.compactionError = undefined;
    this.noRoom = undefined;
    // Lines that waited for room were of the run the reset ended, which the new file replaces:
    // their answers go, as the reset's does.
    if (this.blocked) {
      this.blocked = undefined;
      this.retryTimer?.clear();
      this.retryTimer = undefined;
      this.settleWaiting(true);
    }
  }

  private fail(e: unknown): void {
    const code = e instanceof StateRefusedError ? e.message : ((e as NodeJS.ErrnoException).code ?? (e as Error).message);
    // A line written in part is cut off, so that the file keeps whole lines.
    if (this.fd !== undefined) cutFile(this.fd, this.bytes);
    this.timer?.clear();
    this.timer = undefined;
    this.pending = '';
    this.pendingLines = 0;
    this.phase = 'stopped';
    this.abortCompaction();
    this.idsCheck?.clear();
    this.retryTimer?.clear();
    this.blocked = undefined;
    // Answers waiting for lines that will never be written are never sent.
    this.settleWaiting(false);
    this.writeFailed = (e as NodeJS.ErrnoException).code ?? 'unknown';
    this.options.warn(
      `state stopped: cannot write the state file ${this.options.file} (${code}); requests are still answered, but what they change is no longer kept (a restart would lose it)`,
    );
  }
}

/**
 * Replaces `file` with `text` (`bytes` long in UTF-8) atomically: written to a temporary file
 * beside it (`FILE.PID.tmp`), flushed to the disk, then renamed over it; a crash at any moment
 * leaves the old file or the new one (and perhaps the temporary file). Throws the error of a step
 * that fails, the temporary file removed.
 */
function replaceFile(file: string, text: string, bytes: number): void {
  const temporary = `${file}.${process.pid}.tmp`;
  try {
    const fd = openSync(temporary, 'w');
    try {
      writeRows(fd, text, bytes);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(temporary, file);
  } catch (e) {
    try {
      unlinkSync(temporary);
    } catch {
      // never made, or already renamed
    }
    throw e;
  }
}

/** Removes what a holder of `file` killed while replacing it left (`FILE.PID.tmp`, `FILE.PID.N.tmp`): only the lock's holder writes them. */
function removeStaleTemporaryFiles(file: string): void {
  const name = basename(file);
  try {
    for (const entry of readdirSync(dirname(file))) {
      if (entry.startsWith(`${name}.`) && /^\.\d+(\.\d+)?\.tmp$/.test(entry.slice(name.length))) unlinkSync(join(dirname(file), entry));
    }
  } catch {
    // an unreadable directory: nothing is lost by leaving them
  }
}

/**
 * The core's state now as a compacted state file (header and snapshot), as a body made as it is
 * sent: what `GET /_sim/state` answers, with or without `--state`. `anchor`:
 * the wall-clock reading its clock began at; `seq`: the requests a state file has recorded in this
 * run (0 without one).
 */
export function compactedBody(core: Simulator, overrides: StateHeader['overrides'], anchor: number, seq: number): StreamedBody {
  // The state is captured now, as a compaction captures it; its lines are made as the client
  // reads them, a chunk at a time, so that a large state holds neither the event loop nor a copy
  // of itself in memory (its length is not known before: the answer is sent chunked).
  const header = stateHeaderOf(core, overrides, anchor);
  const capture = core.captureState();
  const wallMs = core.hostTimeMs();
  const lines = (): Generator<string, void, undefined> => compactedLines(header, capture, seq, wallMs);
  return {
    length: undefined,
    open: () => Readable.from(chunksOf(lines(), COMPACT_CHUNK_BYTES, false)),
    text: () => [...lines()].join(''),
  };
}

/** What a compaction under way is: its temporary file (and its handle while open), and whether it was stopped or has taken the file's place. */
interface Compacting {
  temporary: string;
  handle: FileHandle | undefined;
  aborted: boolean;
  renamed: boolean;
  done: Promise<Compaction | undefined>;
}

/**
 * The bytes an unprivileged writer may still write on the volume of `file`; Infinity when the
 * system cannot say (the writes themselves then tell when there is no room).
 */
async function freeBytes(file: string): Promise<number> {
  try {
    const { bavail, bsize } = await statfs(dirname(file));
    return bavail * bsize;
  } catch {
    return Infinity;
  }
}

/** `freeBytes`, at once, after a write found no room (0 when the system cannot say). */
function freeBytesNow(file: string): number {
  try {
    const { bavail, bsize } = statfsSync(dirname(file));
    return bavail * bsize;
  } catch {
    return 0;
  }
}

/** Removes `file` if it is there. */
function removeQuietly(file: string): void {
  try {
    unlinkSync(file);
  } catch {
    // never made, or already gone
  }
}

