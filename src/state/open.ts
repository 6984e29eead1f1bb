/**
 * Reading a state file at start, before anything is bound or written: the file is refused (a
 * `StateRefusedError`, exit 2 from the command line, with what to do) when it is not a state file
 * of this format, or when the scenario, seed or clock asked for explicitly differs from the file's;
 * another running simulator holding it is a `FileLockedError` (exit 1, naming its pid). Without an
 * explicit scenario or seed the file's are used, so a state file copied from another machine opens
 * as it was there.
 */
import { readFileSync, statSync } from 'node:fs';
import stableStringify from 'safe-stable-stringify';
import type { ClockMode } from '../core/clock.js';
import type { Scenario } from '../core/scenario.js';
import { sameShard, shardInWords, type ShardSpec } from '../core/shard.js';
import { FileLockedError, fileHolder, lockFileOf } from '../fileLock.js';
import { ScenarioError, scenarioFromValue } from '../scenarios/load.js';
import { StateFormatError, globalIdNumber, parseStateFile, type StateFile } from './format.js';

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

/** A state file read and accepted: what it holds, and where its request lines end. */
export interface ReadState {
  file: StateFile;
  /** The header's scenario, checked as a scenario file's contents would be. */
  scenario: Scenario;
  /** The file's size when read. */
  size: number;
  /** Request lines (after the snapshot, if any). */
  lines: number;
  lastSeq: number;
  /** The highest global request id it accounts for. */
  lastIds: number;
  /** The bytes of the header and the snapshot line (0 without a snapshot). */
  snapshotBytes: number;
}

/**
 * Reads `path` for a restore: undefined when there is nothing to restore (no file, an empty one, or
 * one cut while its header was written, which `warn` reports). Throws `StateRefusedError` or
 * `FileLockedError`.
 */
export function readStateFile(path: string, asked: AskedState, warn: (line: string) => void): ReadState | undefined {
  const holder = fileHolder(path);
  if (holder !== null) throw new FileLockedError(path, lockFileOf(path), holder);
  let text: string;
  try {
    // A device or a pipe (/dev/full reads zeros for ever) is no place for a state.
    if (!statSync(path).isFile()) throw new StateRefusedError(`${path} is not a regular file: give --state a file's path`);
    text = readFileSync(path, 'utf8');
  } catch (e) {
    if (e instanceof StateRefusedError) throw e;
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return undefined;
    throw new StateRefusedError(`cannot read the state file ${path}: ${code ?? (e as Error).message}`);
  }
  if (text === '') return undefined;
  if (!text.includes('\n')) {
    warn(`state: ${path} holds only a header cut short (the simulator was stopped while writing it): starting with a new state`);
    return undefined;
  }
  let file: StateFile;
  try {
    file = parseStateFile(text);
  } catch (e) {
    throw refusedFormat(path, e);
  }
  let scenario: Scenario;
  try {
    scenario = scenarioFromValue(file.header.scenario, `${path} (the scenario of its header)`);
  } catch (e) {
    if (e instanceof ScenarioError) throw new StateRefusedError(`${e.message}\nThe state file is damaged: choose another --state file, or remove this one to start anew.`);
    throw e;
  }
  refuseConflicts(path, file, scenario, asked);
  if (file.torn !== undefined) {
    warn(`state: ${path}: line ${file.torn} was cut short (the simulator was stopped while writing it): dropped`);
  }
  let lines = 0;
  let lastSeq = file.snapshot?.seq ?? 0;
  let lastIds = file.snapshot?.state.requests ?? 0;
  for (const entry of file.entries) {
    if ('ids' in entry) {
      lastIds = Math.max(lastIds, entry.ids);
      continue;
    }
    lines++;
    lastSeq = entry.line.seq;
    lastIds = Math.max(lastIds, globalIdNumber(entry.line.id) ?? 0);
  }
  const snapshotBytes = file.snapshot ? Buffer.byteLength(text.slice(0, text.indexOf('\n', text.indexOf('\n') + 1) + 1)) : 0;
  return { file, scenario, size: Buffer.byteLength(text), lines, lastSeq, lastIds, snapshotBytes };
}

/** `e` as a start refused for a state file that is not what the format says (other errors as they are). */
export function refusedFormat(path: string, e: unknown): unknown {
  if (!(e instanceof StateFormatError)) return e;
  return new StateRefusedError(`${path} is not a state file this simulator can restore: ${e.message}. Choose another --state file, or remove this one to start anew.`);
}

/** A scenario, seed or clock asked for that differs from the file's is refused, saying what to do. */
function refuseConflicts(path: string, file: StateFile, scenario: Scenario, asked: AskedState): void {
  const { header } = file;
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
