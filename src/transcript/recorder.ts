/**
 * The recorder: turns each exchange the request path reports into a transcript line and hands every
 * line to a sink as it is made (the file adapter writes it at once). `GET /_sim/transcript` streams
 * the sink's whole lines back (`contents()` says how many bytes that is).
 *
 * Recording stops, and never takes the request path down with it, when the next line would take the
 * file past its size bound (`size_limit`) or when a write fails (`write_failed`, with the error's
 * code). Either way the file ends with whole lines, then an end line that says why it stopped (see
 * `formatEnd`), so that a replay knows the recording was cut, unless the sink cannot take even that
 * (a device). On a full disk the end line may not fit where the last line ends: the last lines are
 * then cut off, one at a time (at most `LINES_GIVEN_UP`), until it does; its `next_seq` names the
 * first line that is not in the file. No files here: the sink is given.
 */
import type { Exchange } from '../request-path/exchange.js';
import { END_LINE_RESERVE, formatEnd, formatExchange, formatHeader, type StopReason, type TranscriptHeader } from './lineFormat.js';

/** What `GET /_sim/health` shows of a recording. */
export type RecordingStatus =
  | { state: 'on'; bytes: number; max_bytes: number }
  | { state: 'stopped'; reason: StopReason; error?: string; bytes: number; max_bytes: number };

export interface RecorderOptions {
  /** The header, asked for once, when the first line is written (or `start` is called). */
  header: () => TranscriptHeader;
  /** Writes a line (header first, newline included) of `bytes` bytes; throws when the write fails. */
  write: (line: string, bytes: number) => void;
  /** After a write that failed: cut the sink back to `length` bytes, the next write going there; answers whether it could. */
  truncate: (length: number) => boolean;
  /** The sink's size bound in bytes. */
  maxBytes: number;
  /** Told once, when recording stops. */
  onStop: (status: RecordingStatus & { state: 'stopped' }) => void;
}

/** How many recorded lines may be cut off to make room for the end line on a full disk. */
export const LINES_GIVEN_UP = 16;
/**
 * The errors of a write that found no room: a full disk, a quota, a file size limit (the set of
 * src/fileRows.ts and EFBIG; written here, since the page's bundle takes the recorder without
 * node:fs).
 */
const OUT_OF_ROOM = new Set(['ENOSPC', 'EDQUOT', 'EFBIG']);

export class TranscriptRecorder {
  private headerLine: string | undefined;
  private seq = 0;
  /** Bytes written so far (whole lines only). */
  private written = 0;
  /** Where the last recorded lines begin (at most `LINES_GIVEN_UP`, oldest first). */
  private lineStarts: number[] = [];
  private stopped: (RecordingStatus & { state: 'stopped' }) | undefined;

  constructor(private readonly options: RecorderOptions) {}

  /** Writes the header now (once the addresses it names are known), if not written yet. */
  start(): void {
    if (this.headerLine !== undefined) return;
    this.headerLine = `${formatHeader(this.options.header())}\n`;
    this.append(this.headerLine);
  }

  /** Records one exchange (the request path calls this as each request is handled). */
  record(exchange: Exchange): void {
    this.start();
    if (this.stopped) return;
    const start = this.written;
    if (!this.append(`${formatExchange(this.seq + 1, exchange)}\n`)) return;
    this.seq++;
    this.lineStarts.push(start);
    if (this.lineStarts.length > LINES_GIVEN_UP) this.lineStarts.shift();
  }

  /** Stops recording from outside (the file could not be opened): nothing more is written. */
  fail(error: string): void {
    if (this.stopped) return;
    this.headerLine ??= `${formatHeader(this.options.header())}\n`;
    this.stop('write_failed', error);
  }

  status(): RecordingStatus {
    return this.stopped ?? { state: 'on', bytes: this.written, max_bytes: this.options.maxBytes };
  }

  /**
   * What `GET /_sim/transcript` sends: the header line (as it is or would be written) when none is in
   * the sink yet, and how many bytes of the sink hold whole lines (and the end line, if any).
   */
  contents(): { pendingHeader: string | undefined; bytes: number } {
    if (this.written > 0) return { pendingHeader: undefined, bytes: this.written };
    return { pendingHeader: this.headerLine ?? `${formatHeader(this.options.header())}
`, bytes: 0 };
  }

  /** Writes a line if it fits beside the end line's room; answers whether it was written. */
  private append(line: string): boolean {
    if (this.stopped) return false;
    const bytes = Buffer.byteLength(line);
    if (this.written + bytes + END_LINE_RESERVE > this.options.maxBytes) {
      this.stop('size_limit');
      return false;
    }
    try {
      this.options.write(line, bytes);
    } catch (e) {
      // A line written in part is cut off, so that the file keeps whole lines.
      this.options.truncate(this.written);
      this.stop('write_failed', (e as NodeJS.ErrnoException).code ?? 'unknown');
      return false;
    }
    this.written += bytes;
    return true;
  }

  private stop(reason: StopReason, error?: string): void {
    // Nothing is said after a header that is not there.
    if (this.written > 0) this.writeEnd(reason, error);
    this.stopped = {
      state: 'stopped',
      reason,
      ...(error !== undefined && { error }),
      bytes: this.written,
      max_bytes: this.options.maxBytes,
    };
    this.options.onStop(this.stopped);
  }

  /**
   * Writes the end line after the whole lines. When there is no room for it (a full disk), the last
   * line is cut off and it is tried again, so that a replay is told the recording was cut; given up
   * when the sink cannot be cut (a device), another error stops it, or `LINES_GIVEN_UP` lines have gone.
   */
  private writeEnd(reason: StopReason, error: string | undefined): void {
    for (;;) {
      const end = `${formatEnd({ reason, error, maxBytes: this.options.maxBytes, nextSeq: this.seq + 1 })}\n`;
      const bytes = Buffer.byteLength(end);
      if (this.written + bytes > this.options.maxBytes) return;
      try {
        this.options.write(end, bytes);
        this.written += bytes;
        return;
      } catch (e) {
        if (!this.options.truncate(this.written)) return;
        // Only room can be made: a disk that fails otherwise would lose lines for nothing.
        if (!OUT_OF_ROOM.has((e as NodeJS.ErrnoException).code ?? '')) return;
      }
      const start = this.lineStarts.pop();
      if (start === undefined || !this.options.truncate(start)) return;
      this.written = start;
      this.seq--;
    }
  }
}
