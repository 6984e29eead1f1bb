/** Replacing a state file atomically, and what a holder killed while replacing it left. */
import { closeSync, fsyncSync, openSync, readdirSync, renameSync, unlinkSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { writeRows } from '../fileRows.js';

/**
 * Replaces `file` with `text` (`bytes` long in UTF-8) atomically: written to a temporary file
 * beside it (`FILE.PID.tmp`), flushed to the disk, then renamed over it; a crash at any moment
 * leaves the old file or the new one (and perhaps the temporary file). Throws the error of a step
 * that fails, the temporary file removed.
 */
export function replaceFile(file: string, text: string, bytes: number): void {
  const temporary = `${file}.${process.pid}.tmp`;
  try {
    const fd = openSync(temporary, 'w');
    try {
      writeRows(fd, text, bytes);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(temporary, file);
  } catch (e) {
    try {
      unlinkSync(temporary);
    } catch {
      // never made, or already renamed
    }
    throw e;
  }
}

/** Removes what a holder of `file` killed while replacing it left (`FILE.PID.tmp`, `FILE.PID.N.tmp`): only the lock's holder writes them. */
export function removeStaleTemporaryFiles(file: string): void {
  const name = basename(file);
  try {
    for (const entry of readdirSync(dirname(file))) {
      if (entry.startsWith(`${name}.`) && /^\.\d+(\.\d+)?\.tmp$/.test(entry.slice(name.length))) unlinkSync(join(dirname(file), entry));
    }
  } catch {
    // an unreadable directory: nothing is lost by leaving them
  }
}
