/**
 * A text file's rows (the lines of a JSON Lines file: transcripts, state files), read and written.
 *
 * Reading: in chunks, so that no file, however large, is held in memory whole: each row that a
 * newline ends (without the newline), then whatever follows the last newline ('' when the file
 * ends with one), as `text.split('\n')` would give them. The one reader of JSON Lines files.
 * Rows are cut on the newline byte, which never occurs inside a UTF-8 sequence, and each row is
 * decoded once it is whole: reading is linear in the file's size whatever the length of its rows.
 * A row longer than its bound (`maxRowChars`, in UTF-16 code units as JavaScript counts a string's
 * length) throws a `RowTooLongError`; a row is refused as soon as it is known to be too long, before
 * it is read whole. The file is closed once the rows are read, or the reader stops.
 *
 * Writing: the one writer of rows to such a file (`writeRows`, and `writeRowBytes` for rows held as
 * bytes), with one synchronous write (a partial write, on a full disk, goes on from the bytes that
 * went out); a write that fails throws the system's error (ENOSPC, EDQUOT, EIO...), which the
 * format's owner judges, cutting the file back to its whole rows (`cutFile`) so that it never ends
 * with a row written in part. `writeRowBytesAsync` is the same writer for a file written while
 * requests are answered (a compaction's new file), which must not hold the event loop.
 */
import { closeSync, ftruncateSync, openSync, readSync, writeSync } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';

/** The errors of a write that found no room on its volume: a full disk, a quota. */
export const OUT_OF_ROOM: ReadonlySet<string> = new Set(['ENOSPC', 'EDQUOT']);

const CHUNK_BYTES = 1 << 20;
const NEWLINE = 0x0a;
/** A UTF-8 sequence of n bytes is at least n/3 code units: a row of more bytes than 3 × its bound is too long. */
const MAX_BYTES_PER_CHAR = 3;

export class RowTooLongError extends Error {
  constructor(
    readonly row: number,
    readonly maxRowChars: number,
  ) {
    super(`line ${row}: longer than ${maxRowChars} characters, more than any line the simulator writes`);
  }
}

export interface FileRowsOptions {
  /** Reads the file up to this byte only (what follows is left out, as if the file ended there). */
  end?: number;
  /** Updated before each row is given: the bytes read through the end of that row, its newline included. */
  progress?: { bytes: number };
}

/**
 * The rows of `path`. `maxRowChars` bounds every row, or is the bound of row n (1-based) when it is
 * a function (a format whose one row may be longer than the others).
 */
export function* fileRows(
  path: string,
  maxRowChars: number | ((row: number) => number),
  options: FileRowsOptions = {},
): Generator<string, void, undefined> {
  const limitOf = typeof maxRowChars === 'number' ? () => maxRowChars : maxRowChars;
  const { end, progress } = options;
  const fd = openSync(path, 'r');
  try {
    const buffer = Buffer.allocUnsafe(CHUNK_BYTES);
    /** The start of the current row, from earlier chunks (copied: the buffer is read into again). */
    let carried: Buffer[] = [];
    let carriedBytes = 0;
    let row = 1;
    let position = 0;
    let consumed = 0;
    const rowOf = (last: Buffer): string => {
      const bytes = carried.length === 0 ? last : Buffer.concat([...carried, last]);
      carried = [];
      carriedBytes = 0;
      const limit = limitOf(row);
      if (bytes.length > limit * MAX_BYTES_PER_CHAR) throw new RowTooLongError(row, limit);
      const text = bytes.toString('utf8');
      if (text.length > limit) throw new RowTooLongError(row, limit);
      return text;
    };
    for (;;) {
      const want = end === undefined ? CHUNK_BYTES : Math.min(CHUNK_BYTES, end - position);
      const read = want <= 0 ? 0 : readSync(fd, buffer, 0, want, position);
      position += read;
      const chunk = buffer.subarray(0, read);
      let start = 0;
      for (let newline = chunk.indexOf(NEWLINE, start); newline >= 0; newline = chunk.indexOf(NEWLINE, start)) {
        consumed += carriedBytes + newline - start + 1;
        const text = rowOf(chunk.subarray(start, newline));
        if (progress) progress.bytes = consumed;
        start = newline + 1;
        row++;
        yield text;
      }
      if (read === 0) break;
      if (start < read) {
        carried.push(Buffer.from(chunk.subarray(start)));
        carriedBytes += read - start;
        const limit = limitOf(row);
        if (carriedBytes > limit * MAX_BYTES_PER_CHAR) throw new RowTooLongError(row, limit);
      }
    }
    const last = rowOf(Buffer.alloc(0));
    if (progress) progress.bytes = position;
    yield last;
  } finally {
    closeSync(fd);
  }
}

/**
 * Where a writer puts the next row in a regular file it writes at an offset it keeps rather than at
 * the descriptor's position: after a row written in part is cut off, the next row then goes where
 * the cut file ends, never past it (which would leave a hole of NUL bytes).
 */
export interface FileOffset {
  offset: number;
}

/**
 * Writes `text` (whole rows, newlines included; `bytes`: its length in UTF-8) to `fd`, all of it:
 * at `at.offset`, which moves past each byte written (a write that fails leaves it after those that
 * went out), or at the descriptor's position when `at` is null (a file opened to append, a device,
 * a pipe). A string is written without a copy. Throws the error of a write that fails.
 */
export function writeRows(fd: number, text: string, bytes: number = Buffer.byteLength(text), at: FileOffset | null = null): void {
  const done = writeSync(fd, text, at === null ? null : at.offset);
  if (at !== null) at.offset += done;
  if (done < bytes) writeRowBytes(fd, Buffer.from(text, 'utf8'), done, at);
}

/** Writes `bytes` from `from` on to `fd`, all of them, where `writeRows` would. Throws the error of a write that fails. */
export function writeRowBytes(fd: number, bytes: Uint8Array, from = 0, at: FileOffset | null = null): void {
  for (let done = from; done < bytes.length; ) {
    const more = writeSync(fd, bytes, done, bytes.length - done, at === null ? null : at.offset);
    done += more;
    if (at !== null) at.offset += more;
  }
}

/**
 * Writes `bytes` to `handle` at its position, all of them, as `writeRowBytes` does but without
 * holding the event loop. Rejects with the error of a write that fails.
 */
export async function writeRowBytesAsync(handle: FileHandle, bytes: Uint8Array): Promise<void> {
  for (let done = 0; done < bytes.length; ) done += (await handle.write(bytes, done, bytes.length - done)).bytesWritten;
}

/**
 * Cuts the file of `fd` to `length` bytes (after a write that failed: its whole rows); answers
 * whether it could (a device cannot be cut; a failing disk may refuse), what was written staying when not.
 */
export function cutFile(fd: number, length: number): boolean {
  try {
    ftruncateSync(fd, length);
    return true;
  } catch {
    return false;
  }
}

/** Bytes `from` to `to` (excluded) of the file at `path`, read at once (zeros past its end, if it is shorter). */
export function readFileBytes(path: string, from: number, to: number): Buffer {
  const bytes = Buffer.alloc(Math.max(0, to - from));
  const fd = openSync(path, 'r');
  try {
    for (let at = 0; at < bytes.length; ) {
      const got = readSync(fd, bytes, at, bytes.length - at, from + at);
      if (got === 0) break;
      at += got;
    }
  } finally {
    closeSync(fd);
  }
  return bytes;
}
