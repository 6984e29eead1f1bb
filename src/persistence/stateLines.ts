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
 * A request that met a network fault also records it (`"network":{"kind":"reset","phase":"after",...}`,
 * as a transcript does); its `status` is null when the request never reached the service.
 *
 * A `{"ids":N}` line says that the simulator's global request ids (those of control requests, media
 * and requests without a key) had reached `req_N` by then, though no request line says so.
 *
 * A `{"media_fault":{"method":"GET","path":"/cdn/videos/vid_1.mp4"}}` line says that a download took
 * one shot of a queued media fault (a `/cdn/...` pattern) at that point: downloads are not request
 * lines, but the fault they took is gone from the queue.
 *
 * A compacted file has a snapshot right after the header: a `{"snapshot":{...}}` line, the core's
 * state as rows, and an end row (snapshot.ts), standing for every request before it; the request
 * lines after it are replayed on top of it. The header's format number stays 1 either way: a file
 * without a snapshot is what it always was, and the snapshot carries its own format number
 * (`SNAPSHOT_FORMAT`).
 */
import type { Exchange } from '../request-path/exchange.js';
import { isoTime } from '../core/time/clock.js';
import { RECORDED_REQUEST_HEADERS, checkRecordedClock, checkRecordedRequest, checkRecordedShard, formatStatusAndNetwork, type RecordedRequest } from '../transcript/lineFormat.js';
import type { StateRow } from '../core/simulator/simulatorState.js';
import { SINGLE_LINE_SNAPSHOT_FORMAT, SNAPSHOT_END, parseSnapshot, parseSnapshotEnd, parseSnapshotRow, type SingleLineSnapshot, type Snapshot } from './snapshot.js';
import { parseJsonObject } from '../jsonLine.js';
import { STATE_FORMAT, StateFormatError, type StateHeader } from './header.js';

/** A request line: what a transcript records of a request, its wall-clock reading and its request id. */
export interface StateLine extends RecordedRequest {
  /** The wall-clock reading (epoch ms, fractional) at which the request was handled (`now` is a check). */
  wall: number;
  /** The answer's `X-Request-Id`. */
  id: string;
}

/**
 * What a state file holds, read row by row (see `readStateRows`), with the row (1-based) it is on
 * and the bytes of the file through the end of that row (0 when not known).
 */
export type StateEntry = (
  /** A snapshot's head (line 2): its rows follow, then its end. */
  | { snapshot: Snapshot }
  /** A single-line snapshot of format 1 (line 2): the whole state. */
  | { singleLine: SingleLineSnapshot }
  /** A row of the snapshot. */
  | { item: StateRow }
  /** The snapshot's end: the rows it said it holds were read. */
  | { snapshotEnd: number }
  | { line: StateLine }
  /** The global request ids had reached this number. */
  | { ids: number }
  /** A download took one shot of a queued media fault. */
  | { mediaFault: MediaFaultTaken }
) & { row: number; end: number };

/** A state file being read: its header at once, the rest as it is read. */
export interface StateReading {
  header: StateHeader;
  /** Each row after the header, checked as it is read; they can be read once. */
  entries: Iterable<StateEntry>;
  /**
   * Known once `entries` has been read to its end: the bytes of the complete lines, and a torn
   * last line dropped (its 1-based number).
   */
  readonly ending: { wholeBytes: number; torn?: number };
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
    `${exchange.body === 'too_large' ? '"body_too_large":true,' : ''}${formatStatusAndNetwork(exchange.answer)}}`
  );
}

export function formatIds(ids: number): string {
  return `{"ids":${ids}}`;
}

/** A download that took one shot of a queued media fault: its method and path. */
export interface MediaFaultTaken {
  method: string;
  path: string;
}

export function formatMediaFaultTaken(taken: MediaFaultTaken): string {
  return `{"media_fault":{"method":${JSON.stringify(taken.method)},"path":${JSON.stringify(taken.path)}}}`;
}

function parseMediaFaultTaken(value: unknown, row: number): MediaFaultTaken {
  const taken = value as Record<string, unknown> | null;
  if (typeof taken !== 'object' || taken === null || Array.isArray(taken)) throw new StateFormatError(row, 'media_fault: expected an object');
  const { method, path } = taken;
  // Every method Node's HTTP parser accepts (M-SEARCH among them).
  if (typeof method !== 'string' || !/^[A-Z-]{1,20}$/.test(method)) throw new StateFormatError(row, 'media_fault.method: expected an HTTP method, such as "GET"');
  if (typeof path !== 'string' || !path.startsWith('/')) throw new StateFormatError(row, 'media_fault.path: expected a path (a string that begins with /)');
  return { method, path };
}

/**
 * Reads a state file from its rows (`fileRows`, or `text.split('\n')`), checking each row as it
 * comes (`position`: the bytes read through the row last taken from `rows`, when known), so that a file of any size is read in bounded memory. A last row without its newline (the
 * process was killed while writing it) is dropped and named in `ending.torn`; any other row that is
 * not what the format says throws a `StateFormatError` naming it: a second header, a snapshot
 * anywhere but line 2, a snapshot without its end row or with another count of rows. A header of
 * another format number throws one too, naming the version that wrote it. The header's scenario is
 * checked by the caller (it needs the scenario loader).
 */
export function readStateRows(rows: Iterable<string>, position: () => number = () => 0): StateReading {
  const source = rows[Symbol.iterator]();
  const first = source.next();
  if (first.done || first.value === '') throw new StateFormatError(1, 'expected the header line, got none (the file was cut while its header was written)');
  const header = parseHeader(parseJsonObject(first.value, 1, (line, what) => new StateFormatError(line, what)));
  const ending: StateReading['ending'] = { wholeBytes: position() };
  function* entries(): Generator<StateEntry, void, undefined> {
    /** Inside a snapshot of rows: its head's line, and the rows read so far. */
    let inSnapshot: { row: number; rows: number } | undefined;
    let row = 1;
    let next = source.next();
    let nextEnd = position();
    while (!next.done) {
      row++;
      const text = next.value;
      const end = nextEnd;
      next = source.next();
      nextEnd = position();
      // What follows the last newline: a line cut short, or nothing.
      if (next.done) {
        if (text !== '') ending.torn = row;
        break;
      }
      ending.wholeBytes = end;
      if (text === '' || (text.charCodeAt(0) <= 0x20 && text.trim() === '')) continue;
      const value = parseJsonObject(text, row, (line, what) => new StateFormatError(line, what));
      if (inSnapshot) {
        if (SNAPSHOT_END in value) {
          const count = parseSnapshotEnd(value[SNAPSHOT_END], row);
          if (count !== inSnapshot.rows) {
            throw new StateFormatError(row, `the snapshot of line ${inSnapshot.row} says it holds ${count} rows, but ${inSnapshot.rows} come before its end`);
          }
          inSnapshot = undefined;
          yield { snapshotEnd: count, row, end };
        } else {
          inSnapshot.rows++;
          yield { item: parseSnapshotRow(value, row), row, end };
        }
        continue;
      }
      if ('state' in value || 'transcript' in value) {
        throw new StateFormatError(row, 'a second header: this file holds two runs (files joined together, or two simulators writing one file)');
      }
      if ('snapshot' in value) {
        if (row !== 2) throw new StateFormatError(row, 'a snapshot after the second line: a snapshot stands for every request before it, so only line 2 may hold one');
        const snapshot = parseSnapshot(value.snapshot, row);
        if (snapshot.format === SINGLE_LINE_SNAPSHOT_FORMAT) yield { singleLine: snapshot, row, end };
        else {
          inSnapshot = { row, rows: 0 };
          yield { snapshot, row, end };
        }
        continue;
      }
      if ('ids' in value) {
        if (!Number.isSafeInteger(value.ids) || (value.ids as number) < 0) {
          throw new StateFormatError(row, `ids: expected a whole number, got ${JSON.stringify(value.ids)}`);
        }
        yield { ids: value.ids as number, row, end };
      } else if ('media_fault' in value) yield { mediaFault: parseMediaFaultTaken(value.media_fault, row), row, end };
      else yield { line: parseLine(value, row), row, end };
    }
    if (inSnapshot) {
      throw new StateFormatError(
        row,
        `the snapshot of line ${inSnapshot.row} has no end row: the file ends (or is cut) after ${inSnapshot.rows} of its rows; restore it from a copy, or start with a new state file`,
      );
    }
  }
  return { header, entries: entries(), ending };
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

