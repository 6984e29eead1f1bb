/**
 * The transcript file: each line is written with one synchronous write as it is made, so a process
 * that is killed loses at most the line being written.
 */
import { closeSync, fstatSync, openSync, readSync, writeSync } from 'node:fs';

export class TranscriptFileError extends Error {
  constructor(
    readonly file: string,
    reason: string,
  ) {
    super(`cannot write the transcript ${file}: ${reason}`);
    this.name = 'TranscriptFileError';
  }
}

export interface TranscriptFile {
  /** Writes a line; answers its length in bytes. */
  write(line: string): number;
  /** The file's contents from byte `from` on ('' once closed). */
  readFrom(from: number): string;
  close(): void;
}

/** Creates (or empties) `path` for a new transcript. */
export function openTranscriptFile(path: string): TranscriptFile {
  let fd: number | undefined;
  try {
    fd = openSync(path, 'w+');
  } catch (e) {
    throw new TranscriptFileError(path, (e as NodeJS.ErrnoException).code ?? (e as Error).message);
  }
  return {
    write(line) {
      if (fd === undefined) return Buffer.byteLength(line);
      // A string is written without a copy; a partial write (rare on a file) finishes from bytes.
      const length = Buffer.byteLength(line);
      const written = writeSync(fd, line);
      if (written < length) {
        const bytes = Buffer.from(line, 'utf8');
        for (let done = written; done < length; ) done += writeSync(fd, bytes, done, length - done);
      }
      return length;
    },
    readFrom(from) {
      if (fd === undefined) return '';
      const size = fstatSync(fd).size;
      const bytes = Buffer.alloc(Math.max(0, size - from));
      for (let done = 0; done < bytes.length; ) done += readSync(fd, bytes, done, bytes.length - done, from + done);
      return bytes.toString('utf8');
    },
    close() {
      if (fd === undefined) return;
      closeSync(fd);
      fd = undefined;
    },
  };
}
