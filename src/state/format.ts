/**
 * The state file's format: JSON Lines, like a transcript, but holding only what a restart needs to
 * bring the simulator back to where it was: a header, then one line per request the simulator
 * handled (the request, the instant it was handled at, and the answer's status and request id, not
 * the answer's body), in the order it handled them. Formatting and parsing only (no files).
 *
 *   {"state":1,"version":"0.1.0","scenario":{...},"seed":42,"overrides":{"seed":42},
 *    "clock":{"mode":"realtime","speed":20,"start":"2026-05-04T10:00:00.000Z","anchor":1777888800000.25},
 *    "cdn_url":"http://localhost:8080/cdn"}
 *   {"seq":1,"now":"2026-05-04T10:00:01.250Z","at":"2026-05-04T10:00:01.250Z","wall":1777888800062.75,
 *    "id":"req_a1b2c3_000001","method":"POST","path":"/v1/videos","headers":{"authorization":"Bearer sk_test_a",
 *    "content-type":"application/json"},"body":"{\"model\":...}","status":200}
 *   {"ids":12}
 *
 * A `{"ids":N}` line says that the simulator's global request ids (those of control requests, media
 * and requests without a key) had reached `req_N` by then, though no request line says so.
 *
 * A compacted file has a `{"snapshot":{...}}` line right after the header: the core's state as
 * plain data (snapshot.ts), standing for every request before it; the request lines after it are
 * replayed on top of it. The header's format number stays 1 either way: a file without a snapshot
 * is what it always was, and the snapshot carries its own format number (`SNAPSHOT_FORMAT`).
 */
import type { Exchange } from '../api/handleRequest.js';
import type { ClockMode } from '../core/clock.js';
import { isoTime } from '../core/clock.js';
import type { Scenario } from '../core/scenario.js';
import type { ShardSpec } from '../core/shard.js';
import { RECORDED_REQUEST_HEADERS, checkRecordedClock, checkRecordedRequest, checkRecordedShard, type RecordedRequest } from '../transcript/format.js';
import { parseSnapshot, type Snapshot } from './snapshot.js';
import { JsonLinesError, parseJsonObject } from '../jsonLine.js';

export const STATE_FORMAT = 1;

export interface StateHeader {
  state: typeof STATE_FORMAT;
  /** The version of the simulator that began the file. */
  version: string;
  /** The scenario in use, resolved (`extends` applied, every field present). */
  scenario: Scenario;
  /** The seed in use. */
  seed: number;
  /**
   * What the simulator was started with beside its scenario (a command line's `--seed`, `--clock`,
   * `--speed`): they outlive a global reset, so a restored simulator keeps them too.
   */
  overrides: { seed?: number; clock?: ClockMode; speed?: number };
  /**
   * The virtual clock: virtual time = `start` + (wall − `anchor`) × `speed` (realtime) plus every
   * advance, with `anchor` the wall-clock reading (epoch ms) at which the clock began. Wall time
   * keeps counting while the process is down.
   */
  clock: { mode: ClockMode; speed: number; start: string; anchor: number };
  /** The media address written into responses (a restore on the same address stores the same answers). */
  cdn_url: string;
  /** The shard whose accounts the file holds (`--shard I/N`); null or absent: a simulator running alone. */
  shard?: ShardSpec | null;
}

/** A request line: what a transcript records of a request, its wall-clock reading and its request id. */
export interface StateLine extends RecordedRequest {
  /** The wall-clock reading (epoch ms, fractional) at which the request was handled (`now` is a check). */
  wall: number;
  /** The answer's `X-Request-Id`. */
  id: string;
}

export interface StateFile {
  header: StateHeader;
  /** The snapshot line's value (line 2), when the file was compacted. */
  snapshot?: Snapshot;
  /** Request lines, and the global request ids reached (`ids`), in file order. */
  entries: ({ line: StateLine; row: number } | { ids: number; row: number })[];
  /** Complete lines' bytes: a torn last line (a process killed while writing it) starts there. */
  wholeBytes: number;
  /** The torn last line that was dropped, if any (its 1-based line number). */
  torn?: number;
}

export function formatStateHeader(header: StateHeader): string {
  return JSON.stringify(header);
}

/**
 * The state line of one exchange, written out field by field (it runs for every request a
 * simulator with state answers). `wall` is the wall-clock reading the request was handled at.
 */
export function formatStateLine(seq: number, wall: number, exchange: Exchange): string {
  let headers = '';
  for (const name of RECORDED_REQUEST_HEADERS) {
    const value = exchange.headers[name];
    if (value !== undefined) headers += `${headers === '' ? '' : ','}"${name}":${JSON.stringify(value)}`;
  }
  const now = isoTime(exchange.nowMs);
  const at = exchange.atMs === null ? 'null' : exchange.atMs === exchange.nowMs ? `"${now}"` : `"${isoTime(exchange.atMs)}"`;
  const body = Buffer.isBuffer(exchange.body) ? JSON.stringify(exchange.body.toString('utf8')) : 'null';
  const id = exchange.answer.headers['X-Request-Id'] ?? '';
  return (
    `{"seq":${seq},"now":"${now}","at":${at},"wall":${wall},"id":${JSON.stringify(id)},"method":${JSON.stringify(exchange.method)},` +
    `"path":${JSON.stringify(exchange.path)},"headers":{${headers}},"body":${body},` +
    `${exchange.body === 'too_large' ? '"body_too_large":true,' : ''}"status":${exchange.answer.status}}`
  );
}

export function formatIds(ids: number): string {
  return `{"ids":${ids}}`;
}

/** The number of a global request id (`req_0000000012` is 12), or null for an account's id. */
export function globalIdNumber(id: string): number | null {
  return /^req_\d+$/.test(id) ? Number(id.slice(4)) : null;
}

/** A state file that cannot be used as it is: the line (1-based) and what is wrong with it. */
export class StateFormatError extends JsonLinesError {
  override readonly name = 'StateFormatError';
}

/**
 * Reads a state file's text. A last line without its newline (the process was killed while writing
 * it) is dropped and named in `torn`; any other line that is not what the format says throws a
 * `StateFormatError` naming it. A header of another format number throws one too, naming the
 * version that wrote it. The header's scenario is checked by the caller (it needs the scenario loader).
 */
export function parseStateFile(text: string): StateFile {
  const rows = text.split('\n');
  const tail = rows.pop() as string;
  const torn = tail === '' ? undefined : rows.length + 1;
  const wholeBytes = Buffer.byteLength(text) - Buffer.byteLength(tail);
  if (rows.length === 0) throw new StateFormatError(1, 'expected the header line, got none (the file was cut while its header was written)');
  const header = parseHeader(parseJsonObject(rows[0] as string, 1, (line, what) => new StateFormatError(line, what)));
  const entries: StateFile['entries'] = [];
  let snapshot: Snapshot | undefined;
  for (let i = 1; i < rows.length; i++) {
    const row = rows[i] as string;
    if (row.trim() === '') continue;
    const value = parseJsonObject(row, i + 1, (line, what) => new StateFormatError(line, what));
    if ('state' in value || 'transcript' in value) {
      throw new StateFormatError(i + 1, 'a second header: this file holds two runs (files joined together, or two simulators writing one file)');
    }
    if ('snapshot' in value) {
      if (i !== 1) throw new StateFormatError(i + 1, 'a snapshot after the second line: a snapshot stands for every request before it, so only line 2 may hold one');
      snapshot = parseSnapshot(value.snapshot, i + 1);
      continue;
    }
    if ('ids' in value) {
      if (!Number.isSafeInteger(value.ids) || (value.ids as number) < 0) {
        throw new StateFormatError(i + 1, `ids: expected a whole number, got ${JSON.stringify(value.ids)}`);
      }
      entries.push({ ids: value.ids as number, row: i + 1 });
    } else entries.push({ line: parseLine(value, i + 1), row: i + 1 });
  }
  return { header, ...(snapshot !== undefined && { snapshot }), entries, wholeBytes, ...(torn !== undefined && { torn }) };
}


function parseHeader(value: Record<string, unknown>): StateHeader {
  const at = (problem: string): never => {
    throw new StateFormatError(1, problem);
  };
  if ('transcript' in value) {
    at('this is a transcript (written by --record), not a state file: replay it with sim replay FILE, or give --state a file of its own');
  }
  if (!('state' in value)) at('expected the header of a state file ({"state":1,...}), got another JSON object');
  if (value.state !== STATE_FORMAT) {
    at(
      `the file is in state format ${JSON.stringify(value.state)} (written by version ${JSON.stringify(value.version) ?? 'unknown'} of the simulator); ` +
        `this version reads format ${STATE_FORMAT}: open it with the version that wrote it, or start with a new state file`,
    );
  }
  if (typeof value.version !== 'string') at(`version: expected a string, got ${JSON.stringify(value.version)}`);
  if (typeof value.scenario !== 'object' || value.scenario === null || Array.isArray(value.scenario)) at('scenario: expected an object');
  if (!Number.isInteger(value.seed)) at(`seed: expected an integer, got ${JSON.stringify(value.seed)}`);
  const overrides = value.overrides as Record<string, unknown> | null | undefined;
  if (typeof overrides !== 'object' || overrides === null || Array.isArray(overrides)) at('overrides: expected an object');
  const { seed, clock: mode, speed } = overrides as Record<string, unknown>;
  if (seed !== undefined && !Number.isInteger(seed)) at(`overrides.seed: expected an integer, got ${JSON.stringify(seed)}`);
  if (mode !== undefined && mode !== 'manual' && mode !== 'realtime') at(`overrides.clock: expected "manual" or "realtime"`);
  if (speed !== undefined && !(typeof speed === 'number' && speed > 0)) at(`overrides.speed: expected a number above 0`);
  const clock = value.clock as Record<string, unknown> | null | undefined;
  if (typeof clock !== 'object' || clock === null) at('clock: expected an object');
  const c = clock as Record<string, unknown>;
  checkRecordedClock(c, at);
  if (typeof c.anchor !== 'number' || !Number.isFinite(c.anchor)) at(`clock.anchor: expected a wall-clock time in ms, got ${JSON.stringify(c.anchor)}`);
  if (typeof value.cdn_url !== 'string') at(`cdn_url: expected a string, got ${JSON.stringify(value.cdn_url)}`);
  checkRecordedShard(value.shard, at);
  return value as unknown as StateHeader;
}

function parseLine(value: Record<string, unknown>, line: number): StateLine {
  const wrong = (field: string, expected: string): never => {
    throw new StateFormatError(line, `${field}: expected ${expected}, got ${JSON.stringify(value[field]) ?? 'nothing'}`);
  };
  checkRecordedRequest(value, wrong);
  if (typeof value.wall !== 'number' || !Number.isFinite(value.wall)) wrong('wall', 'a wall-clock time in ms');
  if (typeof value.id !== 'string') wrong('id', 'a request id');
  return value as unknown as StateLine;
}

