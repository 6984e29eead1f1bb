/**
 * Reading a state file at start, before anything is bound or written: the file is refused (a
 * `StateRefusedError`, exit 2 from the command line, with what to do) when it is not a state file
 * of this format (a file this simulator did not write is never taken over), or when the scenario,
 * seed or clock asked for explicitly differs from the file's; another running simulator holding
 * it is a `FileLockedError` (exit 1, naming its holder). Without an explicit scenario or seed the
 * file's are used, so a state file copied from another machine opens as it was there.
 */
import { constants } from 'node:buffer';
import { closeSync, fstatSync, openSync, readSync, statSync } from 'node:fs';
import stableStringify from 'safe-stable-stringify';
import type { ClockMode } from '../core/time/clock.js';
import type { Scenario } from '../core/scenario/scenario.js';
import { sameShard, shardInWords, type ShardSpec } from '../core/accounts/shard.js';
import { refuseIfHeld } from '../fileLock.js';
import { ScenarioError, scenarioFromValue } from '../scenarios/load.js';
import { fileRows, RowTooLongError } from '../fileRows.js';
import { readStateRows, type StateReading } from './stateLines.js';
import { STATE_FORMAT, StateFormatError, type StateHeader } from './header.js';

/** A state file the simulator will not start with; the message says why and what to do. */
export class StateRefusedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'StateRefusedError';
  }
}

/** What the simulator was asked for explicitly (command line, environment, options). */
export interface AskedState {
  /** The scenario asked for, resolved, and how it was named. */
  scenario?: { value: Scenario; name: string };
  seed?: number;
  clock?: ClockMode;
  speed?: number;
  /** The shard asked for (null: explicitly unsharded); undefined: not asked, the file's is used. */
  shard?: ShardSpec | null;
}

/**
 * The longest row a state file holds, but for line 2: a header is a line of a few kilobytes (its
 * scenario); a request line's body is at most 1 MiB, and its JSON string, with every byte escaped,
 * at most six times that; a snapshot's row holds one item (a stored answer is a body the simulator
 * sent, far smaller). It also bounds what is read of a file that is not a state file.
 */
const MAX_ROW_CHARS = 16 * 1024 * 1024;

/** Line 2 may be a single-line snapshot of format 1, as long as a string can be (what wrote it could not write more). */
const rowLimit = (row: number): number => (row === 2 ? constants.MAX_STRING_LENGTH : MAX_ROW_CHARS);

/** A state file whose header was read and accepted, being read: its other rows come as they are read. */
export interface OpenedStateFile {
  header: StateHeader;
  /** The header's scenario, checked as a scenario file's contents would be. */
  scenario: Scenario;
  /** The file's size when opened: what is restored (appended to once restored). */
  size: number;
  /** The rows after the header, checked as they are read; `ending` is known once they are all read. */
  reading: StateReading;
  /** Stops reading (the file is closed); the rows read to their end close it too. */
  close(): void;
}

/**
 * Opens `path` for a restore and reads its header: undefined when there is nothing to restore (no
 * file, an empty one, or one cut while its header was written, which `warn` reports). Throws
 * `StateRefusedError` or `FileLockedError`. The file is opened once, and read a row at a time: the
 * rest of its rows are read as they are restored (restore.ts), each refused (a `StateFormatError`)
 * when it is not what the format says.
 */
export function openStateFile(path: string, asked: AskedState, warn: (line: string) => void): OpenedStateFile | undefined {
  refuseIfHeld(path);
  let size: number;
  try {
    // A device or a pipe (/dev/full reads zeros for ever) is no place for a state.
    const stat = statSync(path);
    if (!stat.isFile()) throw new StateRefusedError(`${path} is not a regular file: give --state a file's path`);
    size = stat.size;
    refuseForeignFile(path);
  } catch (e) {
    if (isMissing(e)) return undefined;
    throw unreadable(path, e);
  }
  if (size === 0) return undefined;
  const progress = { bytes: 0 };
  const rows = fileRows(path, rowLimit, { end: size, progress });
  try {
    let first: string;
    try {
      first = rows.next().value ?? '';
    } catch (e) {
      if (isMissing(e)) return undefined;
      throw unreadable(path, e);
    }
    // Without a newline after it, the header was cut while it was written.
    if (progress.bytes <= Buffer.byteLength(first)) {
      if (!(first.startsWith(HEADER_START) || HEADER_START.startsWith(first))) throw foreignFile(path, first);
      warn(`state: ${path} holds only a header cut short (the simulator was stopped while writing it): starting with a new state`);
      rows.return();
      return undefined;
    }
    let reading: StateReading;
    try {
      reading = readStateRows(andThen(first, rows), () => progress.bytes);
    } catch (e) {
      throw refusedFormat(path, e);
    }
    const { header } = reading;
    let scenario: Scenario;
    try {
      scenario = scenarioFromValue(header.scenario, `${path} (the scenario of its header)`);
    } catch (e) {
      if (e instanceof ScenarioError) throw new StateRefusedError(`${e.message}\nThe state file is damaged: choose another --state file, or remove this one to start anew.`);
      throw e;
    }
    refuseConflicts(path, header, scenario, asked);
    return { header, scenario, size, reading, close: () => void rows.return() };
  } catch (e) {
    rows.return();
    throw e;
  }
}

/** `first`, then the rest of `rows`. */
function* andThen(first: string, rows: Iterator<string, void>): Generator<string, void, undefined> {
  yield first;
  for (let next = rows.next(); !next.done; next = rows.next()) yield next.value;
}

/** The file is not there (removed meanwhile included): a new state begins in it. */
const isMissing = (e: unknown): boolean => (e as NodeJS.ErrnoException).code === 'ENOENT';

/**
 * A failure to read the file's first bytes as the refusal it is: a header longer than any this
 * simulator writes, or a file it cannot read (a refusal already made as it is).
 */
function unreadable(path: string, e: unknown): StateRefusedError {
  if (e instanceof StateRefusedError) return e;
  if (e instanceof RowTooLongError) {
    return refusedFormat(path, new StateFormatError(1, `longer than ${e.maxRowChars} characters, more than any header the simulator writes`)) as StateRefusedError;
  }
  const code = (e as NodeJS.ErrnoException).code;
  return new StateRefusedError(`cannot read the state file ${path}: ${code ?? (e as Error).message}`);
}

/** How every state file begins: its header's first field. */
const STATE_START = '{"state":';
/**
 * How the header this version writes begins: a file without a newline that begins so, or is cut
 * within it, is a torn header.
 */
const HEADER_START = `{"state":${STATE_FORMAT},"version":"`;

/**
 * Refuses (`StateRefusedError`) an existing, non-empty file that this simulator did not write,
 * judged from its first bytes only and left as it is: only a file that begins as a state file's
 * header does (`{"state":`), or one cut within the first bytes of a header. A missing or empty
 * file passes (a new state begins in it).
 */
export function refuseForeignFile(path: string): void {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw e;
  }
  let head: string;
  try {
    const bytes = Buffer.alloc(Math.min(fstatSync(fd).size, HEADER_START.length));
    head = bytes.subarray(0, readSync(fd, bytes, 0, bytes.length, 0)).toString('latin1');
  } finally {
    closeSync(fd);
  }
  if (head === '' || head.startsWith(STATE_START) || (head.length < HEADER_START.length && HEADER_START.startsWith(head))) return;
  throw foreignFile(path, head);
}

function foreignFile(path: string, head: string): StateRefusedError {
  if (head.startsWith('{"transcript":')) {
    return new StateRefusedError(
      `${path}: this is a transcript (written by --record), not a state file: replay it with sim replay FILE, or give --state a file of its own. It is left as it is.`,
    );
  }
  return new StateRefusedError(
    `${path} is not a state file of this simulator (one begins with ${STATE_START}...): it is left as it is. Give --state the path of a new or empty file, or remove this one to begin a state in it.`,
  );
}

/** `e` as a start refused for a state file that is not what the format says (other errors as they are). */
export function refusedFormat(path: string, e: unknown): unknown {
  if (!(e instanceof StateFormatError)) return e;
  return new StateRefusedError(`${path} is not a state file this simulator can restore: ${e.message}. Choose another --state file, or remove this one to start anew.`);
}

/** A scenario, seed or clock asked for that differs from the file's is refused, saying what to do. */
function refuseConflicts(path: string, header: StateHeader, scenario: Scenario, asked: AskedState): void {
  const held = `${path} holds the state of scenario '${scenario.name}' with seed ${header.seed} (clock ${header.clock.mode}${header.clock.mode === 'realtime' ? ` ×${header.clock.speed}` : ''})`;
  const what = (conflict: string, option: string): never => {
    throw new StateRefusedError(
      `${held}, but ${conflict}. Leave out ${option} to continue that state, or start ${option === '--scenario' ? 'that scenario' : 'it'} with another --state file (or remove this one, or POST /_sim/reset to begin a new run in it).`,
    );
  };
  if (asked.scenario) {
    if (asked.scenario.value.name !== scenario.name) what(`--scenario ${asked.scenario.name} asks for scenario '${asked.scenario.value.name}'`, '--scenario');
    if (stableStringify(asked.scenario.value) !== stableStringify(scenario)) {
      what(`--scenario ${asked.scenario.name} is not the same scenario '${scenario.name}' any more (its file changed since)`, '--scenario');
    }
  }
  if (asked.seed !== undefined && asked.seed !== header.seed) what(`--seed ${asked.seed} asks for another seed`, '--seed');
  if (asked.clock !== undefined && asked.clock !== header.clock.mode) what(`--clock ${asked.clock} asks for another clock`, '--clock');
  if (asked.speed !== undefined && asked.speed !== header.clock.speed) what(`--speed ${asked.speed} asks for another speed`, '--speed');
  const fileShard = header.shard ?? null;
  if (asked.shard !== undefined && !sameShard(asked.shard, fileShard)) {
    throw new StateRefusedError(
      `${path} holds the accounts of ${shardInWords(fileShard)}, but this simulator is ${shardInWords(asked.shard)}: each shard keeps a state file of its own ` +
        '(a proxy hashes each API key to one shard, so another shard or another count of shards holds other accounts). ' +
        'Give this shard its own --state file, or start it as the shard the file belongs to.',
    );
  }
}
