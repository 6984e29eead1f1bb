/**
 * The recorder: turns each exchange the request path reports into a transcript line and hands every
 * line to a sink as it is made (the file adapter writes it at once). For `GET /_sim/transcript` it
 * keeps only where the most recent lines start in the sink, and reads them back from the sink when
 * asked: keeping the lines themselves cost every recorded request a string that outlived the young
 * generation. No files here: the sink is given.
 */
import type { Exchange } from '../api/handleRequest.js';
import { formatExchange, formatHeader, type TranscriptHeader } from './format.js';

export interface RecorderOptions {
  /** The header, asked for once, when the first line is written (or `start` is called). */
  header: () => TranscriptHeader;
  /** Receives each line, header first, newline included; answers its length in bytes. */
  write: (line: string) => number;
  /** What was written from byte `from` on. */
  readFrom: (from: number) => string;
  /** How many recent lines `text()` keeps (read at each line: a reset may change it). */
  keep: () => number;
}

export class TranscriptRecorder {
  private headerLine: string | undefined;
  private seq = 0;
  /** Bytes written so far. */
  private written = 0;
  /** Where the most recent lines start (byte offsets), oldest first, from `first` on (older ones dropped in batches). */
  private starts: number[] = [];
  private first = 0;

  constructor(private readonly options: RecorderOptions) {}

  /** Writes the header now (once the addresses it names are known), if not written yet. */
  start(): void {
    if (this.headerLine !== undefined) return;
    this.headerLine = `${formatHeader(this.options.header())}\n`;
    this.written += this.options.write(this.headerLine);
  }

  /** Records one exchange (the request path calls this as each request is handled). */
  record(exchange: Exchange): void {
    this.start();
    const line = `${formatExchange(++this.seq, exchange)}\n`;
    this.starts.push(this.written);
    this.written += this.options.write(line);
    const keep = Math.max(0, this.options.keep());
    if (this.starts.length - this.first > keep) this.first = this.starts.length - keep;
    if (this.first > 1024 && this.first * 2 > this.starts.length) {
      this.starts = this.starts.slice(this.first);
      this.first = 0;
    }
  }

  /** The header and the most recent lines, as JSON Lines. */
  text(): string {
    this.start();
    const from = this.starts[this.first];
    return (this.headerLine as string) + (from === undefined ? '' : this.options.readFrom(from));
  }
}
