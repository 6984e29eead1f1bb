/**
 * The state file of a running simulator: every request it handles becomes a line (see stateLines.ts),
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
 * Compaction (compaction.ts): once the lines after the last snapshot pass a bound, the file is
 * rewritten as the header and a snapshot of the core's state, off the request path. Lines that
 * find no room on the volume wait in memory, and the answers of state-changing requests with them
 * (room.ts).
 *
 * A global reset makes a new run: the file is replaced (the same way) by a new header. A write
 * that fails otherwise (an I/O error), or lines waiting for room past `WAITING_MAX_BYTES`, stops
 * the state being kept: requests are answered from then on (not those whose answers waited for
 * their lines: those are never sent), a warning says so, and `GET /_sim/health` shows it.
 *
 * The file is written where its path leads (symbolic links followed, as its lock is taken): a
 * compaction's temporary file lies beside the file itself and is renamed over it, not over a link.
 */
import { closeSync, createReadStream, fstatSync, ftruncateSync, openSync } from 'node:fs';
import { Readable } from 'node:stream';
import type { Exchange, StreamedBody } from '../request-path/exchange.js';
import { isoTime, type VirtualClock } from '../core/time/clock.js';
import type { Simulator } from '../core/simulator/simulator.js';
import { LockFileWriteError, acquireFileLock, resolvedFile, type FileLock } from '../fileLock.js';
import { every, systemClock, type HostClock, type HostTimer } from '../hostClock.js';
import { OUT_OF_ROOM, cutFile, readFileBytes, writeRows } from '../fileRows.js';
import { globalIdNumber } from '../core/requests/requestIds.js';
import { Compactor, compactedBody, type CompactedFile, type Compaction } from './compaction.js';
import { removeStaleTemporaryFiles, replaceFile } from './replaceFile.js';
import { formatIds, formatMediaFaultTaken, formatStateLine, type MediaFaultTaken } from './stateLines.js';
import { formatStateHeader, type StateHeader } from './header.js';
import { WAITING_MAX_BYTES, WaitingForRoom } from './room.js';
import { stateHeaderOf } from './snapshot.js';
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
  private seq = 0;
  /** The highest global request id the file (with what is pending) accounts for. */
  private idsKept = 0;
  private writeFailed: string | undefined;
  /** The pending lines while they wait for room, and the answers waiting for them. */
  private readonly room: WaitingForRoom;
  private readonly compactor: Compactor;
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
    }
    this.room = new WaitingForRoom(this.hostClock, () => this.flush());
    this.compactor = new Compactor(this.compactedFile(), options.existing?.compactedAt ?? null);
  }

  /** The file as its compactions see it. */
  private compactedFile(): CompactedFile {
    // eslint-disable-next-line @typescript-eslint/no-this-alias -- the getters below read the store's fields as they are then
    const store = this;
    const { file, core, warn } = this.options;
    return {
      file,
      core,
      hostClock: this.hostClock,
      warn,
      get path() {
        return store.path;
      },
      get bytes() {
        return store.bytes;
      },
      get lines() {
        return store.lines;
      },
      get seq() {
        return store.seq;
      },
      mustStop: () => this.phase !== 'open' || this.room.waitingForRoom,
      flush: () => this.flush(),
      header: () => this.header(),
      adopt: (bytes, lines) => {
        try {
          closeSync(this.fd as number);
          this.fd = openSync(this.path, 'a');
        } catch (e) {
          this.fd = undefined;
          this.fail(e);
          return false;
        }
        this.bytes = bytes;
        this.lines = lines;
        return true;
      },
      compactionOver: () => {
        if (this.room.waitingForRoom) this.flush();
      },
    };
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
        this.compactor.begin(existing.snapshotBytes);
      } else {
        // Checked again: a file this simulator did not write may have appeared since it was read.
        refuseForeignFile(this.path);
        this.fd = openSync(this.path, 'w');
        const header = `${formatStateHeader(this.header())}\n`;
        const bytes = Buffer.byteLength(header);
        writeRows(this.fd, header, bytes);
        this.bytes = bytes;
        this.compactor.begin(bytes);
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
    if (this.room.waitingForRoom) this.unblock();
    this.compactor.written();
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
        if (!room || attempt > 0 || !this.compactor.giveWay()) return { error: e, code, room };
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
    return this.room.whenWritten();
  }

  /**
   * The simulator stops: the lines waiting for room are tried once more, and the answers still
   * waiting then are never sent (their requests are not kept, so they must not be acknowledged).
   */
  stopWaiting(): void {
    this.flush();
    this.room.settle(false);
  }

  /** The pending lines found no room (`code`): they wait, tried again every `WRITE_RETRY_MS`. */
  private block(code: string): void {
    if (!this.room.block(code, this.options.core.hostTimeMs())) return;
    this.options.warn(
      `state: cannot write the state file ${this.options.file} (${code}): the lines of the requests from now on wait in memory, in their order, ` +
        'and are written once there is room; the answers of the requests that change state wait for them',
    );
  }

  /** The lines that waited for room are written: the answers waiting for them go. */
  private unblock(): void {
    this.options.warn(`state: the state file ${this.options.file} is written again: the lines that waited for room are in it`);
    this.room.end(true);
  }

  /**
   * Rewrites the file as the header and a snapshot of the core's state (whatever the file's size),
   * as past the bound but at once (a compaction under way is waited for). Answers the sizes before
   * and after, or undefined when the state is not kept or the compaction failed (a warning says why;
   * the file is as it was).
   */
  async compact(): Promise<Compaction | undefined> {
    if (!this.opened()) return undefined;
    return this.compactor.now();
  }

  status(): StateStatus {
    const blocked = this.room.state;
    return {
      file: this.options.file,
      bytes: this.bytes + Buffer.byteLength(this.pending),
      lines: this.lines + this.pendingLines,
      compacted_at: this.compactor.compactedAt,
      ...(this.writeFailed !== undefined && { write_failed: this.writeFailed }),
      ...(blocked !== undefined && { write_blocked: blocked.code, write_blocked_since: isoTime(blocked.since) }),
      ...this.compactor.status(),
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
    const blocked = this.room.state;
    if (blocked !== undefined) {
      this.options.warn(
        `state: the last ${this.pendingLines} request lines could not be written to ${this.options.file} (${blocked.code}) before the simulator stopped: ` +
          'they are not kept, and the requests among them that change state were not answered',
      );
      this.pending = '';
      this.pendingLines = 0;
    }
    this.room.end(false);
    this.compactor.abort();
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
    this.compactor.abort();
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
    this.compactor.begin(bytes, true);
    this.lines = 0;
    // Lines that waited for room were of the run the reset ended, which the new file replaces:
    // their answers go, as the reset's does.
    if (this.room.waitingForRoom) this.room.end(true);
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
    this.compactor.abort();
    this.idsCheck?.clear();
    // Answers waiting for lines that will never be written are never sent.
    this.room.end(false);
    this.writeFailed = (e as NodeJS.ErrnoException).code ?? 'unknown';
    this.options.warn(
      `state stopped: cannot write the state file ${this.options.file} (${code}); requests are still answered, but what they change is no longer kept (a restart would lose it)`,
    );
  }
}

