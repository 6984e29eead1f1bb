/**
 * The transcript file: each line is written with one synchronous write as it is made
 * (`writeRows`), so a process that is killed loses at most the line being written. A write that
 * fails throws the system's error (ENOSPC, EIO...): the recorder decides what that means.
 *
 * A regular file is written at an offset this module keeps (`FileOffset`), so that after a line
 * written in part is cut off, the next line goes where the cut file ends. A device or a pipe is
 * written in sequence.
 */
import { accessSync, closeSync, constants, createReadStream, fstatSync, openSync, readSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import type { Readable } from 'node:stream';
import { cutFile, readFileBytes, writeRows, type FileOffset } from '../fileRows.js';

/** The transcript file cannot be opened (at start: a missing directory, no permission...). */
export class TranscriptFileError extends Error {
  constructor(
    readonly file: string,
    readonly code: string,
    message = `cannot write the transcript ${file}: ${code}`,
  ) {
    super(message);
    this.name = 'TranscriptFileError';
  }
}

/** How a state file (`--state`) begins: recording over one would empty it. */
const STATE_FILE_START = '{"state":';

/**
 * Refuses (a `TranscriptFileError`, code `ESTATEFILE`) a regular file that holds a simulator's
 * state: a transcript is written anew, so recording to it would lose that state. Read from the
 * file's first bytes; a missing or unreadable file passes (opening it says why it cannot be written).
 */
function refuseStateFile(path: string): void {
  let fd: number;
  try {
    // Only a regular file is read: opening a pipe to read would wait for a writer.
    if (!statSync(path).isFile()) return;
    fd = openSync(path, 'r');
  } catch {
    return;
  }
  let head: string;
  try {
    const bytes = Buffer.alloc(STATE_FILE_START.length);
    head = bytes.subarray(0, readSync(fd, bytes, 0, bytes.length, 0)).toString('latin1');
  } catch {
    return;
  } finally {
    closeSync(fd);
  }
  if (head !== STATE_FILE_START) return;
  throw new TranscriptFileError(
    path,
    'ESTATEFILE',
    `${path}: this is a state file (written by --state), not a transcript: recording to it would empty it. Give --record a file of its own, or open the state with sim --state FILE. It is left as it is.`,
  );
}

export interface TranscriptFile {
  /** Writes a line of `bytes` bytes; throws the error of a write that fails. */
  write(line: string, bytes: number): void;
  /** Cuts the file to `length` bytes, the next write going there; answers whether it could (not a device). */
  truncate(length: number): boolean;
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
  if (exists) refuseStateFile(path);
}

/** Creates (or empties) `path` for a new transcript; a state file is refused (checked again: it may have appeared since the start). */
export function openTranscriptFile(path: string): TranscriptFile {
  const absolute = resolve(path);
  refuseStateFile(absolute);
  let fd: number | undefined;
  let regular: boolean;
  try {
    fd = openSync(absolute, 'w+');
    regular = fstatSync(fd).isFile();
  } catch (e) {
    if (fd !== undefined) closeSync(fd);
    throw new TranscriptFileError(path, (e as NodeJS.ErrnoException).code ?? (e as Error).message);
  }
  /** Where the next line goes, in a regular file (null: in sequence). */
  const end: FileOffset | null = regular ? { offset: 0 } : null;
  return {
    write(line, bytes) {
      if (fd === undefined) return;
      writeRows(fd, line, bytes, end);
    },
    truncate(length) {
      if (fd === undefined || end === null || !cutFile(fd, length)) return false;
      end.offset = length;
      return true;
    },
    read(from, to) {
      // By path, not by this descriptor: a stream still being sent when the file is closed reads on.
      return createReadStream(absolute, { start: from, end: to - 1 });
    },
    readAll(from, to) {
      return readFileBytes(absolute, from, to);
    },
    close() {
      if (fd === undefined) return;
      closeSync(fd);
      fd = undefined;
    },
  };
}
