/**
 * The recorder: turns each exchange the request path reports into a transcript line and hands every
 * line to a sink as it is made (the file adapter writes it at once). For `GET /_sim/transcript` it
 * keeps only where the most recent lines start in the sink; the adapter reads them back from there.
 *
 * Recording stops, and never takes the request path down with it, when the next line would take the
 * file past its size bound (`size_limit`) or when a write fails (`write_failed`, with the error's
 * code). Either way the file ends with whole lines, then, where it fits, an end line that says why
 * it stopped (see `formatEnd`). No files here: the sink is given.
 */
import type { Exchange } from '../api/handleRequest.js';
import { END_LINE_RESERVE, formatEnd, formatExchange, formatHeader, type StopReason, type TranscriptHeader } from './format.js';

/** What `GET /_sim/health` shows of a recording. */
export type RecordingStatus =
  | { state: 'on'; bytes: number; max_bytes: number }
  | { state: 'stopped'; reason: StopReason; error?: string; bytes: number; max_bytes: number };

export interface RecorderOptions {
  /** The header, asked for once, when the first line is written (or `start` is called). */
  header: () => TranscriptHeader;
  /** Writes a line (header first, newline included) of `bytes` bytes; throws when the write fails. */
  write: (line: string, bytes: number) => void;
  /** After a write that failed: cut the sink back to `length` bytes (the whole lines), if it can. */
  truncate: (length: number) => void;
  /** The sink's size bound in bytes. */
  maxBytes: number;
  /** How many recent lines `recent()` names (read at each line: a reset may change it). */
  keep: () => number;
  /** Told once, when recording stops. */
  onStop: (status: RecordingStatus & { state: 'stopped' }) => void;
}

export class TranscriptRecorder {
  private headerLine: string | undefined;
  private seq = 0;
  /** Bytes written so far (whole lines only). */
  private written = 0;
  /** Where the lines end: `written` less the end line, once there is one. */
  private linesEnd = 0;
  /** Where the most recent lines start (byte offsets), oldest first, from `first` on (older ones dropped in batches). */
  private starts: number[] = [];
  private first = 0;
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
    const at = this.written;
    if (!this.append(`${formatExchange(this.seq + 1, exchange)}\n`)) return;
    this.seq++;
    this.starts.push(at);
    const keep = Math.max(0, this.options.keep());
    if (this.starts.length - this.first > keep) this.first = this.starts.length - keep;
    if (this.first > 1024 && this.first * 2 > this.starts.length) {
      this.starts = this.starts.slice(this.first);
      this.first = 0;
    }
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
   * The header line (as it is or would be written), and the bytes of the sink that hold the most
   * recent lines (and the end line, if any): `GET /_sim/transcript` sends the one, then the other.
   */
  recent(): { header: string; from: number; to: number } {
    const header = this.headerLine ?? `${formatHeader(this.options.header())}\n`;
    const from = this.starts[this.first] ?? this.linesEnd;
    return { header, from, to: this.written };
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
    this.linesEnd = this.written;
    return true;
  }

  private stop(reason: StopReason, error?: string): void {
    // Nothing is said after a header that is not there.
    if (this.written > 0) {
      const end = `${formatEnd({ reason, error, maxBytes: this.options.maxBytes, nextSeq: this.seq + 1 })}\n`;
      const bytes = Buffer.byteLength(end);
      if (this.written + bytes <= this.options.maxBytes) {
        try {
          this.options.write(end, bytes);
          this.written += bytes;
        } catch {
          this.options.truncate(this.written);
        }
      }
    }
    this.stopped = {
      state: 'stopped',
      reason,
      ...(error !== undefined && { error }),
      bytes: this.written,
      max_bytes: this.options.maxBytes,
    };
    this.options.onStop(this.stopped);
  }
}
