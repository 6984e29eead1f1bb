/**
 * The recorder: turns each exchange the request path reports into a transcript line and hands every
 * line to a sink as it is made (the file adapter writes it at once). `GET /_sim/transcript` streams
 * the sink's whole lines back (`contents()` says how many bytes that is).
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
  /** Told once, when recording stops. */
  onStop: (status: RecordingStatus & { state: 'stopped' }) => void;
}

export class TranscriptRecorder {
  private headerLine: string | undefined;
  private seq = 0;
  /** Bytes written so far (whole lines only). */
  private written = 0;
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
    if (this.append(`${formatExchange(this.seq + 1, exchange)}\n`)) this.seq++;
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
