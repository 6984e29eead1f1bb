/**
 * A text file's rows, read in chunks, so that no file, however large, is held in memory whole: each
 * row that a newline ends (without the newline), then whatever follows the last newline ('' when
 * the file ends with one), as `text.split('\n')` would give them. A row longer than `maxRowChars`
 * throws a `RowTooLongError`; the file is closed once the rows are read, or the reader stops.
 */
import { closeSync, openSync, readSync } from 'node:fs';
import { StringDecoder } from 'node:string_decoder';

const CHUNK_BYTES = 1 << 20;

export class RowTooLongError extends Error {
  constructor(
    readonly row: number,
    readonly maxRowChars: number,
  ) {
    super(`line ${row}: longer than ${maxRowChars} characters, more than any line the simulator writes`);
  }
}

export function* fileRows(path: string, maxRowChars: number): Generator<string, void, undefined> {
  const fd = openSync(path, 'r');
  try {
    const buffer = Buffer.allocUnsafe(CHUNK_BYTES);
    const decoder = new StringDecoder('utf8');
    let pending = '';
    let row = 1;
    for (;;) {
      const read = readSync(fd, buffer, 0, CHUNK_BYTES, null);
      pending += read === 0 ? decoder.end() : decoder.write(buffer.subarray(0, read));
      let start = 0;
      for (let newline = pending.indexOf('\n'); newline >= 0; newline = pending.indexOf('\n', start)) {
        if (newline - start > maxRowChars) throw new RowTooLongError(row, maxRowChars);
        yield pending.slice(start, newline);
        start = newline + 1;
        row++;
      }
      pending = pending.slice(start);
      if (pending.length > maxRowChars) throw new RowTooLongError(row, maxRowChars);
      if (read === 0) break;
    }
    yield pending;
  } finally {
    closeSync(fd);
  }
}
