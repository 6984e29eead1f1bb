/**
 * The transcript file: each line is written with one synchronous write as it is made, so a process
 * that is killed loses at most the line being written. A write that fails throws the system's error
 * (ENOSPC, EIO...): the recorder decides what that means.
 */
import { accessSync, closeSync, constants, createReadStream, ftruncateSync, openSync, readSync, statSync, writeSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import type { Readable } from 'node:stream';

/** The transcript file cannot be opened (at start: a missing directory, no permission...). */
export class TranscriptFileError extends Error {
  constructor(
    readonly file: string,
    readonly code: string,
  ) {
    super(`cannot write the transcript ${file}: ${code}`);
    this.name = 'TranscriptFileError';
  }
}

export interface TranscriptFile {
  /** Writes a line of `bytes` bytes; throws the error of a write that fails. */
  write(line: string, bytes: number): void;
  /** Cuts the file to `length` bytes, if it can (after a write that failed part-way). */
  truncate(length: number): void;
  /** Bytes `from` to `to` (excluded) of the file, read as they are sent. */
  read(from: number, to: number): Readable;
  /** The same bytes, read at once (for the in-process API, which answers synchronously). */
  readAll(from: number, to: number): Buffer;
  close(): void;
}

/**
 * Checks, without creating or changing anything, that `path` looks writable: its directory exists
 * and is writable, and the file, if it exists, is not a directory and is writable.
 */
export function checkTranscriptPath(path: string): void {
  const fail = (e: unknown): never => {
    throw new TranscriptFileError(path, (e as NodeJS.ErrnoException).code ?? (e as Error).message);
  };
  let exists = true;
  try {
    if (statSync(path).isDirectory()) fail({ code: 'EISDIR' });
  } catch (e) {
    if (e instanceof TranscriptFileError) throw e;
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') fail(e);
    exists = false;
  }
  try {
    accessSync(exists ? path : dirname(resolve(path)), constants.W_OK);
  } catch (e) {
    fail(e);
  }
}

/** Creates (or empties) `path` for a new transcript. */
export function openTranscriptFile(path: string): TranscriptFile {
  const absolute = resolve(path);
  let fd: number | undefined;
  try {
    fd = openSync(absolute, 'w+');
  } catch (e) {
    throw new TranscriptFileError(path, (e as NodeJS.ErrnoException).code ?? (e as Error).message);
  }
  return {
    write(line, bytes) {
      if (fd === undefined) return;
      // A string is written without a copy; a partial write (rare on a file) finishes from bytes.
      const written = writeSync(fd, line);
      if (written < bytes) {
        const buffer = Buffer.from(line, 'utf8');
        for (let done = written; done < bytes; ) done += writeSync(fd, buffer, done, bytes - done);
      }
    },
    truncate(length) {
      if (fd === undefined) return;
      try {
        ftruncateSync(fd, length);
      } catch {
        // A device (/dev/full) or a failing disk: what was written stays.
      }
    },
    read(from, to) {
      // By path, not by this descriptor: a stream still being sent when the file is closed reads on.
      return createReadStream(absolute, { start: from, end: to - 1 });
    },
    readAll(from, to) {
      const bytes = Buffer.alloc(Math.max(0, to - from));
      const reader = openSync(absolute, 'r');
      try {
        for (let at = 0; at < bytes.length; ) {
          const got = readSync(reader, bytes, at, bytes.length - at, from + at);
          if (got === 0) break;
          at += got;
        }
      } finally {
        closeSync(reader);
      }
      return bytes;
    },
    close() {
      if (fd === undefined) return;
      closeSync(fd);
      fd = undefined;
    },
  };
}
