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
 * A global reset makes a new run: the file is replaced (the same way) by a new header. A write
 * that fails (a full disk) never costs a client its answer: the state stops being kept, a warning
 * says so, and `GET /_sim/health` shows it.
 */
import { closeSync, createReadStream, fstatSync, fsyncSync, ftruncateSync, openSync, readSync, readdirSync, renameSync, unlinkSync } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { basename, dirname, join } from 'node:path';
import type { Exchange, StreamedBody } from '../api/exchange.js';
import { isoTime, type VirtualClock } from '../core/clock.js';
import type { Simulator } from '../core/simulator.js';
import { acquireFileLock, type FileLock } from '../fileLock.js';
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
  /** Present while a compaction is under way. */
  compacting?: true;
  /** Present when the last compaction failed (the file is as it was): its error's code, and when it is tried again (ISO, wall clock). */
  compaction_failed?: string;
  compaction_retry_at?: string;
}

/** How long a poll's line may wait in memory before it is written. */
const POLL_FLUSH_MS = 1000;

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
}

/** What a compaction did: the file's size before and after. */
export interface Compaction {
  before: number;
  after: number;
}

export class StateStore {
  private phase: 'new' | 'open' | 'stopped' | 'closed' = 'new';
  private fd: number | undefined;
  private lock: FileLock | undefined;
  private pending = '';
  private pendingLines = 0;
  private timer: NodeJS.Timeout | undefined;
  /** Checks every second for global request ids given out without a line (control reads, media). */
  private idsCheck: NodeJS.Timeout | undefined;
  /** Bytes and request lines in the file. */
  private bytes = 0;
  private lines = 0;
  /** The file's size at which compaction is tried next (see `COMPACT_MIN_TAIL_BYTES`). */
  private compactAt = Infinity;
  private compactedAt: string | null = null;
  private seq = 0;
  /** The highest global request id the file (with what is pending) accounts for. */
  private idsKept = 0;
  private writeFailed: string | undefined;
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

  constructor(private readonly options: StoreOptions) {
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
    this.lock = acquireFileLock(file, this.options.warn);
    removeStaleTemporaryFiles(file);
    try {
      if (existing) {
        this.fd = openSync(file, 'a');
        const size = fstatSync(this.fd).size;
        if (size !== existing.size) {
          throw new StateRefusedError(
            `the state file ${file} changed while the simulator started (${existing.size} bytes when read, ${size} now): start again`,
          );
        }
        // A torn last line was dropped when restoring: the file drops it too.
        if (existing.wholeBytes < size) ftruncateSync(this.fd, existing.wholeBytes);
        this.bytes = existing.wholeBytes;
        this.compactAt = compactionBound(existing.snapshotBytes);
      } else {
        // Checked again: a file this simulator did not write may have appeared since it was read.
        refuseForeignFile(file);
        this.fd = openSync(file, 'w');
        const header = `${formatStateHeader(this.header())}\n`;
        const bytes = Buffer.byteLength(header);
        writeRows(this.fd, header, bytes);
        this.bytes = bytes;
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
    this.idsCheck = setInterval(() => {
      if (this.options.core.globalRequestCount > this.idsKept) this.flush();
    }, POLL_FLUSH_MS);
    this.idsCheck.unref();
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
      clearTimeout(this.timer);
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
    const lines = this.pendingLines;
    this.pending = '';
    this.pendingLines = 0;
    try {
      writeRows(this.fd as number, text, bytes);
    } catch (e) {
      this.fail(e);
      return;
    }
    this.bytes += bytes;
    this.lines += lines;
    if (this.bytes >= this.compactAt && this.options.core.hostTimeMs() >= this.retryAt) this.startCompaction(true);
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
      temporary: `${this.options.file}.${process.pid}.${++this.compactions}.tmp`,
      aborted: false,
      renamed: false,
      done: Promise.resolve(undefined),
    };
    this.compaction = job;
    job.done = new Promise<void>((resolve) => setImmediate(resolve))
      .then(() => this.runCompaction(job))
      .catch((e: unknown) => {
        if (!job.aborted) this.compactionFailed(e, pastBound);
        return undefined;
      })
      .finally(() => {
        if (this.compaction === job) this.compaction = undefined;
        if (!job.renamed) removeQuietly(job.temporary);
      });
    return job.done;
  }

  private async runCompaction(job: Compacting): Promise<Compaction | undefined> {
    const { core, file } = this.options;
    const stop = (): boolean => job.aborted || this.phase !== 'open';
    if (stop()) return undefined;
    // Everything up to the capture is in the file: the lines after it are the new file's tail.
    this.flush();
    if (stop()) return undefined;
    const from = { bytes: this.bytes, lines: this.lines };
    const wall = core.hostTimeMs();
    const lines = compactedLines(this.header(), core.captureState(), this.seq, wall);
    let handle: FileHandle | undefined;
    let reader: FileHandle | undefined;
    try {
      handle = await open(job.temporary, 'w');
      let written = 0;
      for (const chunk of chunksOf(lines, COMPACT_CHUNK_BYTES, true)) {
        if (stop()) return undefined;
        await writeRowBytesAsync(handle, chunk);
        written += chunk.length;
      }
      reader = await open(file, 'r');
      let copied = from.bytes;
      const buffer = Buffer.allocUnsafe(CATCH_UP_BYTES);
      while (!stop() && this.bytes - copied > CATCH_UP_BYTES) {
        const { bytesRead } = await reader.read(buffer, 0, CATCH_UP_BYTES, copied);
        if (bytesRead === 0) throw new Error(`${file} is shorter than the lines written to it`);
        await writeRowBytesAsync(handle, buffer.subarray(0, bytesRead));
        copied += bytesRead;
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
      renameSync(job.temporary, file);
      job.renamed = true;
      return this.appendToCompacted(from, written, wall);
    } finally {
      await reader?.close();
      await handle?.close();
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
      this.fd = openSync(this.options.file, 'a');
    } catch (e) {
      this.fd = undefined;
      this.fail(e);
      return undefined;
    }
    this.bytes = snapshotBytes + tail;
    this.lines -= from.lines;
    this.compactAt = compactionBound(snapshotBytes);
    this.compactedAt = isoTime(wall);
    this.retryAt = -Infinity;
    this.retryDelayMs = COMPACT_RETRY_FIRST_MS;
    this.compactionError = undefined;
    return { before, after: this.bytes };
  }

  /**
   * A compaction failed: the file is as it was, and is appended to as before. Past the bound, it is
   * tried again after a delay (not on the next request: a disk that is full stays full a while).
   */
  private compactionFailed(e: unknown, pastBound: boolean): void {
    const why = (e as NodeJS.ErrnoException).code ?? (e instanceof Error ? e.message : String(e));
    const kept = `state: cannot compact ${this.options.file} (${why}); it is kept as it was and still appended to`;
    if (!pastBound) {
      this.options.warn(kept);
      return;
    }
    const delay = this.retryDelayMs;
    this.compactionError = why;
    this.retryAt = this.options.core.hostTimeMs() + delay;
    this.retryDelayMs = Math.min(2 * delay, COMPACT_RETRY_MAX_MS);
    this.options.warn(`${kept}, and compaction is tried again in ${delay / 1000} s`);
  }

  /** Stops the compaction under way, if any: its temporary file is removed, the file is left as it is. */
  private abortCompaction(): void {
    const job = this.compaction;
    if (!job) return;
    job.aborted = true;
    this.compaction = undefined;
    removeQuietly(job.temporary);
  }

  status(): StateStatus {
    return {
      file: this.options.file,
      bytes: this.bytes + Buffer.byteLength(this.pending),
      lines: this.lines + this.pendingLines,
      compacted_at: this.compactedAt,
      ...(this.writeFailed !== undefined && { write_failed: this.writeFailed }),
      // Over once the compacted file has taken the file's place (and `compacted_at` says so), though
      // its file handles are still being closed.
      ...(this.compaction !== undefined && !this.compaction.renamed && { compacting: true as const }),
      ...(this.compactionError !== undefined && { compaction_failed: this.compactionError, compaction_retry_at: isoTime(this.retryAt) }),
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
    const { file } = this.options;
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
    this.abortCompaction();
    this.phase = 'closed';
    clearInterval(this.idsCheck);
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
    this.timer = setTimeout(() => this.flush(), POLL_FLUSH_MS);
    this.timer.unref();
  }

  private header(): StateHeader {
    return stateHeaderOf(this.options.core, this.options.overrides, this.anchor);
  }

  /** Replaces the file with a new header (a global reset began a new run at wall time `anchor`). */
  private renew(anchor: number): void {
    const { file, core } = this.options;
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
    this.compactAt = compactionBound(this.bytes);
    this.lines = 0;
    this.compactedAt = null;
    this.retryAt = -Infinity;
    this.retryDelayMs = COMPACT_RETRY_FIRST_MS;
    this.compactionError = undefined;
  }

  private fail(e: unknown): void {
    const code = e instanceof StateRefusedError ? e.message : ((e as NodeJS.ErrnoException).code ?? (e as Error).message);
    // A line written in part is cut off, so that the file keeps whole lines.
    if (this.fd !== undefined) cutFile(this.fd, this.bytes);
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.pending = '';
    this.pendingLines = 0;
    this.phase = 'stopped';
    this.abortCompaction();
    clearInterval(this.idsCheck);
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

/** What a compaction under way is: its temporary file, and whether it was stopped or has taken the file's place. */
interface Compacting {
  temporary: string;
  aborted: boolean;
  renamed: boolean;
  done: Promise<Compaction | undefined>;
}

/** Removes `file` if it is there. */
function removeQuietly(file: string): void {
  try {
    unlinkSync(file);
  } catch {
    // never made, or already gone
  }
}

