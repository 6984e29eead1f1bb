/**
 * The transcript file: each line is written with one synchronous write as it is made, so a process
 * that is killed loses at most the line being written.
 */
import { closeSync, openSync, writeSync } from 'node:fs';

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
  write(line: string): void;
  close(): void;
}

/** Creates (or empties) `path` for a new transcript. */
export function openTranscriptFile(path: string): TranscriptFile {
  let fd: number | undefined;
  try {
    fd = openSync(path, 'w');
  } catch (e) {
    throw new TranscriptFileError(path, (e as NodeJS.ErrnoException).code ?? (e as Error).message);
  }
  return {
    write(line) {
      if (fd === undefined) return;
      const bytes = Buffer.from(line, 'utf8');
      let written = 0;
      while (written < bytes.length) written += writeSync(fd, bytes, written, bytes.length - written);
    },
    close() {
      if (fd === undefined) return;
      closeSync(fd);
      fd = undefined;
    },
  };
}
