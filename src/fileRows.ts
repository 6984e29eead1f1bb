/**
 * A text file's rows, read in chunks, so that no file, however large, is held in memory whole: each
 * row that a newline ends (without the newline), then whatever follows the last newline ('' when
 * the file ends with one), as `text.split('\n')` would give them. The one reader of JSON Lines
 * files (transcripts, state files).
 *
 * Rows are cut on the newline byte, which never occurs inside a UTF-8 sequence, and each row is
 * decoded once it is whole: reading is linear in the file's size whatever the length of its rows.
 * A row longer than its bound (`maxRowChars`, in UTF-16 code units as JavaScript counts a string's
 * length) throws a `RowTooLongError`; a row is refused as soon as it is known to be too long, before
 * it is read whole. The file is closed once the rows are read, or the reader stops.
 */
import { closeSync, openSync, readSync } from 'node:fs';

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
