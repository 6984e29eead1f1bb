/**
 * Compacting a state file (see stateStore.ts).
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
 * new file (estimated: `Compactor.estimate`) and room left for the appends meanwhile,
 * each slice is written only while that room is left, and an append that finds no room while one
 * is under way abandons it (its temporary file emptied and removed) and is tried again at once.
 * Compaction is then tried again once there is room, checked every `COMPACT_RETRY_FIRST_MS`.
 */
import { readSync, renameSync, statfsSync, unlinkSync } from 'node:fs';
import { open, statfs, type FileHandle } from 'node:fs/promises';
import { dirname } from 'node:path';
import { Readable } from 'node:stream';
import type { StreamedBody } from '../request-path/exchange.js';
import { isoTime } from '../core/time/clock.js';
import type { Simulator } from '../core/simulator/simulator.js';
import { cutFile, writeRowBytes, writeRowBytesAsync } from '../fileRows.js';
import { nextTurn, type HostClock } from '../hostClock.js';
import type { StateHeader } from './header.js';
import { chunksOf, compactedLines, stateHeaderOf } from './snapshot.js';

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

/** What a compaction did: the file's size before and after. */
export interface Compaction {
  before: number;
  after: number;
}

/** A compaction was not begun, or was abandoned, for want of room on the volume (see `Compactor.needs`). */
class NoRoomError extends Error {
  readonly code = 'ENOSPC';
  constructor(
    readonly free: number,
    readonly needed: number,
  ) {
    super(`not enough room on its volume (${free} bytes free, a compaction needs about ${needed})`);
  }
}

/** What a compaction under way is: its temporary file (and its handle while open), and whether it was stopped or has taken the file's place. */
interface Compacting {
  temporary: string;
  handle: FileHandle | undefined;
  aborted: boolean;
  renamed: boolean;
  done: Promise<Compaction | undefined>;
}

/** The state file a compaction works on, as its store keeps it. */
export interface CompactedFile {
  /** The file as given (for messages). */
  readonly file: string;
  /** Where it is written: its path with symbolic links followed. */
  readonly path: string;
  readonly core: Simulator;
  readonly hostClock: HostClock;
  /** Bytes and request lines in the file; the last line's `seq`. */
  readonly bytes: number;
  readonly lines: number;
  readonly seq: number;
  warn(line: string): void;
  /** Whether a compaction must stop: the state is not kept, or lines wait for room (they come first). */
  mustStop(): boolean;
  /** Writes what is held in memory. */
  flush(): void;
  header(): StateHeader;
  /**
   * The compacted file took the file's place, `bytes` and `lines` long: appended to from now on
   * (run at once with the rename). False when it cannot be opened (the state stops being kept).
   */
  adopt(bytes: number, lines: number): boolean;
  /** A compaction is over, its file closed: lines waiting for its room go. */
  compactionOver(): void;
}

/** When a state file is compacted, the compaction under way, and how the last one went. */
export class Compactor {
  /** The file's size at which compaction is tried next (see `COMPACT_MIN_TAIL_BYTES`). */
  private compactAt = Infinity;
  /** The bytes of the file's header and snapshot (the lines follow them). */
  private base = 0;
  /** How many bytes of snapshot the last compaction made of a byte of lines (see `estimate`). */
  private growth = 1;
  /** A new file is at least this big: what a compaction abandoned for want of room had written. */
  private atLeast = 0;
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

  constructor(
    private readonly file: CompactedFile,
    /** When the file was last compacted (ISO, wall clock), or null. */
    public compactedAt: string | null,
  ) {}

  /** The file begins with `base` bytes of header and snapshot (opened, or replaced by a new run's header: `renewed`). */
  begin(base: number, renewed = false): void {
    this.base = base;
    this.compactAt = compactionBound(base);
    if (!renewed) return;
    this.atLeast = 0;
    this.compactedAt = null;
    this.retryAt = -Infinity;
    this.retryDelayMs = COMPACT_RETRY_FIRST_MS;
    this.compactionError = undefined;
    this.noRoom = undefined;
  }

  /** Lines were written: a compaction begins if the file passed its bound (and no failure holds it back). */
  written(): void {
    if (this.file.bytes >= this.compactAt && this.file.core.hostTimeMs() >= this.retryAt) void this.start(true);
  }

  /**
   * An append found no room: a compaction under way (its file not yet in place) is abandoned, and
   * waits for room. Answers whether it was (the append is then tried once more).
   */
  giveWay(): boolean {
    const job = this.compaction;
    if (job === undefined || job.renamed) return false;
    this.abort();
    this.waitForRoom(freeBytesNow(this.file.path), this.needs());
    return true;
  }

  /** A compaction at once, whatever the file's size (one under way is waited for). */
  async now(): Promise<Compaction | undefined> {
    await this.compaction?.done;
    return this.start(false);
  }

  /** Whether a compaction is under way (over once its file has taken the file's place). */
  get compacting(): boolean {
    return this.compaction !== undefined && !this.compaction.renamed;
  }

  /** What `GET /_sim/health` shows of compaction, `compacted_at` aside. */
  status(): { compacting?: true; compaction_failed?: string; compaction_retry_at?: string; compaction_no_room?: { free_bytes: number; needed_bytes: number } } {
    return {
      // Over once the compacted file has taken the file's place (and `compacted_at` says so), though
      // its file handles are still being closed.
      ...(this.compacting && { compacting: true as const }),
      ...(this.compactionError !== undefined && { compaction_failed: this.compactionError, compaction_retry_at: isoTime(this.retryAt) }),
      ...(this.noRoom !== undefined && {
        compaction_no_room: { free_bytes: this.noRoom.free, needed_bytes: this.noRoom.needed },
        compaction_retry_at: isoTime(this.retryAt),
      }),
    };
  }

  /**
   * Starts a compaction (one at a time) on the next turn of the event loop; `pastBound`: not asked
   * for (a failure is tried again later). Never throws; its promise never rejects.
   */
  private start(pastBound: boolean): Promise<Compaction | undefined> {
    if (this.compaction) return this.compaction.done;
    const job: Compacting = {
      temporary: `${this.file.path}.${process.pid}.${++this.compactions}.tmp`,
      handle: undefined,
      aborted: false,
      renamed: false,
      done: Promise.resolve(undefined),
    };
    this.compaction = job;
    job.done = new Promise<void>((resolve) => void nextTurn(this.file.hostClock, resolve))
      .then(() => this.run(job))
      .catch((e: unknown) => {
        if (!job.aborted) this.failed(e, pastBound);
        return undefined;
      })
      .finally(() => {
        if (this.compaction === job) this.compaction = undefined;
        if (!job.renamed) removeQuietly(job.temporary);
        // Its room is free only now that its file is closed: lines waiting for it go at once.
        this.file.compactionOver();
      });
    return job.done;
  }

  private async run(job: Compacting): Promise<Compaction | undefined> {
    const f = this.file;
    const { core } = f;
    // Lines waiting for room come first: a compaction would take it.
    const stop = (): boolean => job.aborted || f.mustStop();
    if (stop()) return undefined;
    // Everything up to the capture is in the file: the lines after it are the new file's tail.
    f.flush();
    if (stop()) return undefined;
    const reserve = compactionReserve(f.bytes);
    /** Bytes in the temporary file so far. */
    let taken = 0;
    // Room for the new file and the appends meanwhile, or none is begun; and every slice leaves the
    // appends their room. A compaction abandoned part-way shows the new file to be bigger than that.
    const roomFor = async (bytes: number): Promise<void> => {
      const free = await freeBytes(f.path);
      if (free - bytes >= reserve) return;
      if (taken > 0) this.atLeast = Math.max(this.atLeast, taken + bytes);
      throw new NoRoomError(free, this.needs());
    };
    const from = { bytes: f.bytes, lines: f.lines };
    const wall = core.hostTimeMs();
    // Captured at once, in the turn that wrote the lines it stands for; let go if there is no room,
    // and item by item as their lines are written (`release`): see below.
    let lines: Iterable<string> | undefined = compactedLines(f.header(), core.captureState(), f.seq, wall, true);
    await roomFor(this.estimate());
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
      reader = await open(f.path, 'r');
      let copied = from.bytes;
      const buffer = Buffer.allocUnsafe(CATCH_UP_BYTES);
      while (!stop() && f.bytes - copied > CATCH_UP_BYTES) {
        await roomFor(CATCH_UP_BYTES);
        if (stop()) return undefined;
        const { bytesRead } = await reader.read(buffer, 0, CATCH_UP_BYTES, copied);
        if (bytesRead === 0) throw new Error(`${f.file} is shorter than the lines written to it`);
        await writeRowBytesAsync(handle, buffer.subarray(0, bytesRead));
        copied += bytesRead;
        taken += bytesRead;
      }
      await handle.sync();
      if (stop()) return undefined;
      // The last lines and the rename at once: no line is written meanwhile. They are flushed to
      // the disk as any line is (not at once): the snapshot before them is.
      for (let rest = f.bytes - copied; rest > 0; ) {
        const got = readSync(reader.fd, buffer, 0, Math.min(rest, CATCH_UP_BYTES), copied);
        if (got === 0) throw new Error(`${f.file} is shorter than the lines written to it`);
        writeRowBytes(handle.fd, buffer.subarray(0, got));
        copied += got;
        rest -= got;
      }
      renameSync(job.temporary, f.path);
      job.renamed = true;
      return this.tookPlace(from, written, wall);
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
  private estimate(): number {
    return Math.max(this.atLeast, Math.ceil(this.base + (this.file.bytes - this.base) * this.growth));
  }

  /** What a compaction needs free on the volume: the new file, and the room it leaves for appends. */
  private needs(): number {
    return this.estimate() + compactionReserve(this.file.bytes);
  }

  /**
   * Compaction waits for room (`free` bytes were free, `needed` are): tried again after
   * `COMPACT_RETRY_FIRST_MS` (a check costs nothing: no longer each time), said once.
   */
  private waitForRoom(free: number, needed: number): void {
    const first = this.noRoom === undefined;
    this.noRoom = { free, needed };
    this.compactionError = undefined;
    this.retryAt = this.file.core.hostTimeMs() + COMPACT_RETRY_FIRST_MS;
    if (first) {
      this.file.warn(
        `state: not compacting ${this.file.file} for now: its volume has ${free} bytes free, and a compaction needs about ${needed} ` +
          `(the new file, and room left for the appends meanwhile); it is still appended to, and compaction is tried again once there is room (checked every ${COMPACT_RETRY_FIRST_MS / 1000} s)`,
      );
    }
  }

  /**
   * The compacted file (`snapshotBytes` of header and snapshot, then the lines written since
   * `from`) took the file's place: it is appended to from now on. Run at once with the rename.
   */
  private tookPlace(from: { bytes: number; lines: number }, snapshotBytes: number, wall: number): Compaction | undefined {
    const before = this.file.bytes;
    const tail = before - from.bytes;
    if (!this.file.adopt(snapshotBytes + tail, this.file.lines - from.lines)) return undefined;
    const folded = from.bytes - this.base;
    if (folded > 0) this.growth = Math.max(1, (snapshotBytes - this.base) / folded);
    this.base = snapshotBytes;
    this.atLeast = 0;
    this.compactAt = compactionBound(snapshotBytes);
    this.compactedAt = isoTime(wall);
    this.retryAt = -Infinity;
    this.retryDelayMs = COMPACT_RETRY_FIRST_MS;
    this.compactionError = undefined;
    this.noRoom = undefined;
    return { before, after: this.file.bytes };
  }

  /**
   * A compaction failed: the file is as it was, and is appended to as before. Past the bound, it is
   * tried again after a delay (not on the next request: a disk that is full stays full a while).
   */
  private failed(e: unknown, pastBound: boolean): void {
    if (e instanceof NoRoomError) {
      if (pastBound) this.waitForRoom(e.free, e.needed);
      else this.file.warn(`state: cannot compact ${this.file.file}: ${e.message}; it is kept as it was`);
      return;
    }
    const why = (e as NodeJS.ErrnoException).code ?? (e instanceof Error ? e.message : String(e));
    const kept = `state: cannot compact ${this.file.file} (${why}); it is kept as it was and still appended to`;
    if (!pastBound) {
      this.file.warn(kept);
      return;
    }
    const delay = this.retryDelayMs;
    this.noRoom = undefined;
    this.compactionError = why;
    this.retryAt = this.file.core.hostTimeMs() + delay;
    this.retryDelayMs = Math.min(2 * delay, COMPACT_RETRY_MAX_MS);
    this.file.warn(`${kept}, and compaction is tried again in ${delay / 1000} s`);
  }

  /**
   * Stops the compaction under way, if any: its temporary file is emptied (a file removed while
   * open keeps its room until closed) and removed, the file is left as it is. Once renamed, the
   * temporary file is the state file: it is left whole.
   */
  abort(): void {
    const job = this.compaction;
    if (!job) return;
    job.aborted = true;
    this.compaction = undefined;
    if (job.renamed) return;
    if (job.handle) cutFile(job.handle.fd, 0);
    removeQuietly(job.temporary);
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

/** Removes `file` if it is there. */
function removeQuietly(file: string): void {
  try {
    unlinkSync(file);
  } catch {
    // never made, or already gone
  }
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
