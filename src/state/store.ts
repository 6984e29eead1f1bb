/**
 * The state file of a running simulator: every request it handles becomes a line (see format.ts),
 * written before the request's answer is sent.
 *
 * Durability without a write per poll: a state-changing request (anything but GET and HEAD) is
 * written with one synchronous write, so `kill -9` after its answer was sent cannot lose it. A poll
 * (GET, HEAD: it changes nothing a client relies on, though it spends a rate-limit token, adds a
 * journal entry and takes a request id) is kept in memory and written with the next state-changing
 * line (so the order is kept), or within a second by a timer, or at close: `kill -9` can lose only
 * the polls of the last second. The same timer writes an `{"ids":N}` line when global request ids
 * were given out that no line shows (reads of the control API, media).
 *
 * A global reset makes a new run: the file is replaced (a temporary file renamed over it) by a new
 * header. A write that fails (a full disk) never costs a client its answer: the state stops being
 * kept, a warning says so, and `GET /_sim/health` shows it.
 */
import { Readable } from 'node:stream';
import { closeSync, createReadStream, fstatSync, ftruncateSync, openSync, readSync, renameSync, unlinkSync, writeSync } from 'node:fs';
import type { Exchange, StreamedBody } from '../api/handleRequest.js';
import { isoTime, type VirtualClock } from '../core/clock.js';
import type { Simulator } from '../core/simulator.js';
import { acquireFileLock, type FileLock } from '../fileLock.js';
import { SIMULATOR_VERSION } from '../version.js';
import { STATE_FORMAT, formatIds, formatStateHeader, formatStateLine, globalIdNumber, type StateHeader } from './format.js';
import type { GlobalRequestIds } from './requestIds.js';
import { StateRefusedError } from './open.js';

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
}

/** How long a poll's line may wait in memory before it is written. */
export const POLL_FLUSH_MS = 1000;

export interface StoreOptions {
  file: string;
  core: Simulator;
  ids: GlobalRequestIds;
  overrides: StateHeader['overrides'];
  /** The wall-clock reading at which the core's clock began (the new file's anchor). */
  anchor: number;
  /** What an existing file held when it was read (it is appended to), or undefined: a new file. */
  existing?: { size: number; wholeBytes: number; lines: number; lastSeq: number; lastIds: number };
  warn: (line: string) => void;
}

export class StateStore {
  private phase: 'new' | 'open' | 'stopped' | 'closed' = 'new';
  private fd: number | undefined;
  private lock: FileLock | undefined;
  private pending = '';
  private pendingLines = 0;
  private timer: NodeJS.Timeout | undefined;
  /** Bytes and request lines in the file. */
  private bytes = 0;
  private lines = 0;
  private seq = 0;
  /** The highest global request id the file (with what is pending) accounts for. */
  private idsKept = 0;
  private writeFailed: string | undefined;
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
    }
  }

  /** The core was restored (again): what it holds now is what the file holds. */
  restored(): void {
    this.clockSeen = this.options.core.clock;
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
      } else {
        this.fd = openSync(file, 'w');
        const header = `${formatStateHeader(this.header())}\n`;
        writeAll(this.fd, header);
        this.bytes = Buffer.byteLength(header);
      }
    } catch (e) {
      if (this.fd !== undefined) closeSync(this.fd);
      this.fd = undefined;
      this.lock.release();
      if (e instanceof StateRefusedError) throw e;
      throw new StateRefusedError(`cannot write the state file ${file}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
    }
    this.phase = 'open';
  }

  /** Keeps one exchange (the request path calls this as each request is handled). Never throws. */
  record(exchange: Exchange): void {
    if (!this.opened()) return;
    const { core } = this.options;
    if (core.clock !== this.clockSeen) {
      // A global reset: a new run, in a new file.
      this.renew(core.hostTimeMs());
      return;
    }
    const line = `${formatStateLine(++this.seq, core.hostTimeMs(), exchange)}\n`;
    const globalId = globalIdNumber(exchange.answer.headers['X-Request-Id'] ?? '');
    if (globalId !== null && globalId > this.idsKept) this.idsKept = globalId;
    this.pending += line;
    this.pendingLines++;
    if (exchange.method === 'GET' || exchange.method === 'HEAD') this.arm();
    else this.flush();
  }

  /** Told of every global request id given out: one that no line shows is kept within a second. */
  idGiven(): void {
    if (this.phase === 'open' && this.options.ids.last() > this.idsKept) this.arm();
  }

  /** Writes what is held in memory (polls, and the global ids given out since the last line). */
  flush(): void {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    if (this.phase !== 'open') return;
    const ids = this.options.ids.last();
    if (ids > this.idsKept) {
      this.pending += `${formatIds(ids)}\n`;
      this.idsKept = ids;
    }
    if (this.pending === '') return;
    const text = this.pending;
    const lines = this.pendingLines;
    this.pending = '';
    this.pendingLines = 0;
    try {
      writeAll(this.fd as number, text);
    } catch (e) {
      this.fail(e);
      return;
    }
    this.bytes += Buffer.byteLength(text);
    this.lines += lines;
  }

  status(): StateStatus {
    return {
      file: this.options.file,
      bytes: this.bytes + Buffer.byteLength(this.pending),
      lines: this.lines + this.pendingLines,
      compacted_at: null,
      ...(this.writeFailed !== undefined && { write_failed: this.writeFailed }),
    };
  }

  /** The state file as it is now (what is held in memory written first), streamed, for `GET /_sim/state`. */
  contents(): StreamedBody {
    this.opened();
    this.flush();
    const { file } = this.options;
    const length = this.fd === undefined ? 0 : this.bytes;
    return {
      length,
      // By path: a stream still being sent when the file is closed reads on.
      open: () => (length === 0 ? Readable.from([]) : createReadStream(file, { start: 0, end: length - 1 })),
      text: () => (length === 0 ? '' : readBytes(file, length).toString('utf8')),
    };
  }

  /** Writes what is held, closes the file and releases it (nothing is kept after this). */
  close(): void {
    if (this.phase === 'closed') return;
    this.flush();
    this.phase = 'closed';
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
    const { core, overrides } = this.options;
    return {
      state: STATE_FORMAT,
      version: SIMULATOR_VERSION,
      scenario: core.scenario,
      seed: core.seed,
      overrides,
      clock: { mode: core.clock.mode, speed: core.clock.speed, start: isoTime(core.clock.startMs), anchor: this.anchor },
      cdn_url: core.cdnUrl,
    };
  }

  /** Replaces the file with a new header (a global reset began a new run at wall time `anchor`). */
  private renew(anchor: number): void {
    const { file, core, ids } = this.options;
    this.clockSeen = core.clock;
    this.anchor = anchor;
    this.pending = '';
    this.pendingLines = 0;
    this.seq = 0;
    // The reset's own id was given before it: the count restarts after it.
    ids.restart();
    this.idsKept = 0;
    const header = `${formatStateHeader(this.header())}\n`;
    const temporary = `${file}.${process.pid}.tmp`;
    try {
      const fd = openSync(temporary, 'w');
      try {
        writeAll(fd, header);
      } finally {
        closeSync(fd);
      }
      renameSync(temporary, file);
      closeSync(this.fd as number);
      this.fd = openSync(file, 'a');
    } catch (e) {
      try {
        unlinkSync(temporary);
      } catch {
        // never made
      }
      this.fail(e);
      return;
    }
    this.bytes = Buffer.byteLength(header);
    this.lines = 0;
  }

  private fail(e: unknown): void {
    const code = e instanceof StateRefusedError ? e.message : ((e as NodeJS.ErrnoException).code ?? (e as Error).message);
    // A line written in part is cut off, so that the file keeps whole lines.
    if (this.fd !== undefined) {
      try {
        ftruncateSync(this.fd, this.bytes);
      } catch {
        // a device or a failing disk: what was written stays
      }
    }
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.pending = '';
    this.pendingLines = 0;
    this.phase = 'stopped';
    this.writeFailed = (e as NodeJS.ErrnoException).code ?? 'unknown';
    this.options.warn(
      `state stopped: cannot write the state file ${this.options.file} (${code}); requests are still answered, but what they change is no longer kept (a restart would lose it)`,
    );
  }
}

/** Writes all of `text` (a partial write, rare on a file, is finished). Throws the error of a write that fails. */
function writeAll(fd: number, text: string): void {
  const written = writeSync(fd, text);
  const bytes = Buffer.byteLength(text);
  if (written < bytes) {
    const buffer = Buffer.from(text, 'utf8');
    for (let done = written; done < bytes; ) done += writeSync(fd, buffer, done, bytes - done);
  }
}

function readBytes(file: string, length: number): Buffer {
  const bytes = Buffer.alloc(length);
  const fd = openSync(file, 'r');
  try {
    for (let at = 0; at < length; ) {
      const got = readSync(fd, bytes, at, length - at, at);
      if (got === 0) break;
      at += got;
    }
  } finally {
    closeSync(fd);
  }
  return bytes;
}
