/**
 * Reading a state file at start, before anything is bound or written: the file is refused (a
 * `StateRefusedError`, exit 2 from the command line, with what to do) when it is not a state file
 * of this format (a file this simulator did not write is never taken over), or when the scenario,
 * seed or clock asked for explicitly differs from the file's; another running simulator holding
 * it is a `FileLockedError` (exit 1, naming its holder). Without an explicit scenario or seed the
 * file's are used, so a state file copied from another machine opens as it was there.
 */
import { closeSync, fstatSync, openSync, readSync, statSync } from 'node:fs';
import stableStringify from 'safe-stable-stringify';
import type { ClockMode } from '../core/clock.js';
import type { Scenario } from '../core/scenario.js';
import { sameShard, shardInWords, type ShardSpec } from '../core/shard.js';
import { refuseIfHeld } from '../fileLock.js';
import { ScenarioError, scenarioFromValue } from '../scenarios/load.js';
import { fileRows, RowTooLongError } from '../fileRows.js';
import { readStateRows } from './format.js';
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

/** A state file whose header was read and accepted (its rows are read as it is restored). */
export interface ReadState {
  header: StateHeader;
  /** The header's scenario, checked as a scenario file's contents would be. */
  scenario: Scenario;
  /** The file's size when read: what is restored (appended to once restored). */
  size: number;
}

/**
 * Reads the header of `path` for a restore: undefined when there is nothing to restore (no file, an
 * empty one, or one cut while its header was written, which `warn` reports). Throws
 * `StateRefusedError` or `FileLockedError`. The rest of the file is read as it is restored
 * (restore.ts), which refuses a row that is not what the format says.
 */
export function readStateFile(path: string, asked: AskedState, warn: (line: string) => void): ReadState | undefined {
  refuseIfHeld(path);
  let size: number;
  let first: string;
  /** Whether a newline ends the header (without one, it was cut while it was written). */
  let ended: boolean;
  try {
    // A device or a pipe (/dev/full reads zeros for ever) is no place for a state.
    const stat = statSync(path);
    if (!stat.isFile()) throw new StateRefusedError(`${path} is not a regular file: give --state a file's path`);
    size = stat.size;
    refuseForeignFile(path);
    const progress = { bytes: 0 };
    const rows = fileRows(path, HEADER_MAX_CHARS, { end: size, progress });
    try {
      first = rows.next().value ?? '';
    } finally {
      rows.return();
    }
    ended = progress.bytes > Buffer.byteLength(first);
  } catch (e) {
    if (e instanceof StateRefusedError) throw e;
    if (e instanceof RowTooLongError) throw refusedFormat(path, new StateFormatError(1, `longer than ${e.maxRowChars} characters, more than any header the simulator writes`));
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return undefined;
    throw new StateRefusedError(`cannot read the state file ${path}: ${code ?? (e as Error).message}`);
  }
  if (size === 0) return undefined;
  if (!ended) {
    if (!(first.startsWith(HEADER_START) || HEADER_START.startsWith(first))) throw foreignFile(path, first);
    warn(`state: ${path} holds only a header cut short (the simulator was stopped while writing it): starting with a new state`);
    return undefined;
  }
  let header: StateHeader;
  try {
    header = readStateRows([first, '']).header;
  } catch (e) {
    throw refusedFormat(path, e);
  }
  let scenario: Scenario;
  try {
    scenario = scenarioFromValue(header.scenario, `${path} (the scenario of its header)`);
  } catch (e) {
    if (e instanceof ScenarioError) throw new StateRefusedError(`${e.message}\nThe state file is damaged: choose another --state file, or remove this one to start anew.`);
    throw e;
  }
  refuseConflicts(path, header, scenario, asked);
  return { header, scenario, size };
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

/** A header is a line of a few kilobytes (its scenario); this bounds what is read of a file that is not a state file. */
const HEADER_MAX_CHARS = 16 * 1024 * 1024;

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
