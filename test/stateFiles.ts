/** Reading a state file's text in tests: what it holds, its snapshot's rows apart from its request lines. */
import type { StateRow } from '../src/core/simulator/simulatorState.js';
import { readStateRows, type StateEntry } from '../src/persistence/stateLines.js';
import type { StateHeader } from '../src/persistence/header.js';
import type { SingleLineSnapshot, Snapshot } from '../src/persistence/snapshot.js';

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
