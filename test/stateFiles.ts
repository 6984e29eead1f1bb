/**
 * State files in tests: a fresh directory of them per test file, and reading one's text (what it
 * holds, its snapshot's rows apart from its request lines).
 */
import type { StateRow } from '../src/core/simulator/simulatorState.js';
import { readStateRows, type StateEntry } from '../src/persistence/stateLines.js';
import type { StateHeader } from '../src/persistence/header.js';
import type { SingleLineSnapshot, Snapshot } from '../src/persistence/snapshot.js';
import { tempFiles } from './tempFiles.js';

/**
 * A new directory under the system's temporary one (removed after the test file), and `stateFile()`:
 * a new file's path in it at each call (`state-1.jsonl`, `state-2.jsonl`...; test/tempFiles.ts).
 * Call it at a test file's top level.
 */
export function tempStateFiles(prefix: string): { dir: string; stateFile: () => string } {
  const { dir, file } = tempFiles(prefix, 'state');
  return { dir, stateFile: () => file() };
}

export interface StateFileText {
  header: StateHeader;
  snapshot: Snapshot | SingleLineSnapshot | undefined;
  /** The snapshot's rows. */
  items: StateRow[];
  /** Request lines and `{"ids":N}` lines, in file order. */
  entries: Extract<StateEntry, { line: unknown } | { ids: unknown }>[];
  torn: number | undefined;
}

export function parseStateText(text: string): StateFileText {
  const reading = readStateRows(text.split('\n'));
  let snapshot: StateFileText['snapshot'];
  const items: StateRow[] = [];
  const entries: StateFileText['entries'] = [];
  for (const entry of reading.entries) {
    if ('snapshot' in entry) snapshot = entry.snapshot;
    else if ('singleLine' in entry) snapshot = entry.singleLine;
    else if ('item' in entry) items.push(entry.item);
    else if ('line' in entry || 'ids' in entry) entries.push(entry);
  }
  return { header: reading.header, snapshot, items, entries, torn: reading.ending.torn };
}
