/**
 * The recorder: turns each exchange the request path reports into a transcript line, hands every
 * line to a sink as it is made (the file adapter writes it at once), and keeps the most recent lines
 * for `GET /_sim/transcript`. No files here: the sink is given.
 */
import type { Exchange } from '../api/handleRequest.js';
import { formatExchange, formatHeader, type TranscriptHeader } from './format.js';

export interface RecorderOptions {
  /** The header, asked for once, when the first line is written (or `start` is called). */
  header: () => TranscriptHeader;
  /** Receives each line, header first, newline included. */
  write: (line: string) => void;
  /** How many recent lines `text()` keeps (read at each line: a reset may change it). */
  keep: () => number;
}

export class TranscriptRecorder {
  private headerLine: string | undefined;
  private seq = 0;
  /** The most recent lines, oldest first, from `first` on (older ones are dropped in batches). */
  private recent: string[] = [];
  private first = 0;

  constructor(private readonly options: RecorderOptions) {}

  /** Writes the header now (once the addresses it names are known), if not written yet. */
  start(): void {
    if (this.headerLine !== undefined) return;
    this.headerLine = `${formatHeader(this.options.header())}\n`;
    this.options.write(this.headerLine);
  }

  /** Records one exchange (the request path calls this as each request is handled). */
  record(exchange: Exchange): void {
    this.start();
    const line = `${formatExchange(++this.seq, exchange)}\n`;
    this.options.write(line);
    this.recent.push(line);
    const keep = Math.max(0, this.options.keep());
    if (this.recent.length - this.first > keep) this.first = this.recent.length - keep;
    if (this.first > 1024 && this.first * 2 > this.recent.length) {
      this.recent = this.recent.slice(this.first);
      this.first = 0;
    }
  }

  /** The header and the most recent lines, as JSON Lines. */
  text(): string {
    this.start();
    let out = this.headerLine as string;
    for (let i = this.first; i < this.recent.length; i++) out += this.recent[i];
    return out;
  }
}
