/** Files in tests: a fresh directory of them per test file. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';

/**
 * A new directory under the system's temporary one, named from `prefix` (removed after the test
 * file), and `file()`: a new path in it at each call, `${stem}-${n}.${ext}` with n counting the
 * calls (1, 2...), another stem or extension if given (extension '': none, for a directory). Call it
 * at a test file's top level.
 */
export function tempFiles(prefix: string, stem = 'file', ext = 'jsonl'): { dir: string; file: (name?: string, extension?: string) => string } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  let files = 0;
  return {
    dir,
    file: (name = stem, extension = ext) => join(dir, `${name}-${++files}${extension === '' ? '' : `.${extension}`}`),
  };
}
