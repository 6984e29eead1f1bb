/**
 * The transcript format: JSON Lines, a header line, then one line per request the simulator
 * handled, in the order it handled them. Formatting and parsing only (no files, no clock).
 *
 *   {"transcript":1,"version":"0.1.0","scenario":{...},"seed":42,
 *    "clock":{"mode":"realtime","speed":20,"start":"2026-01-01T00:00:00.000Z"},
 *    "base_url":"http://localhost:8080","cdn_url":"http://localhost:8080/cdn"}
 *   {"seq":1,"now":"2026-01-01T00:00:01.250Z","at":"2026-01-01T00:00:01.250Z","method":"POST",
 *    "path":"/v1/videos","headers":{"authorization":"Bearer sk_test_a","content-type":"application/json"},
 *    "body":"{\"model\":...}","status":200,"response_headers":{},"response":"{\"id\":...}"}
 *
 * A request that met a network fault has a `network` field: its kind and phase, how many bytes of
 * the body reached the client, and the gateway's status for `gateway`. Its `status` and `response`
 * stay the service's answer (which the client did not get whole), or null and "" when the request
 * never reached the service (`before`):
 *
 *   {"seq":2,...,"status":200,"network":{"kind":"reset","phase":"after","body_bytes":0},"response_headers":{},"response":"{\"id\":...}"}
 */
import type { ApiAnswer, ApiRequest, Exchange } from '../request-path/exchange.js';
import { NETWORK_FIELDS, NETWORK_KINDS, NETWORK_PHASES, closedByBound, holdsConnection, isNetworkKind, seenFields, type NetworkFault, type NetworkFieldName, type NetworkKind, type NetworkPhase } from '../core/faults/network.js';
import { isoTime } from '../core/time/clock.js';
import type { RunHeader } from '../core/simulator/openSimulator.js';
import { JsonLinesError, isIsoTime, isStringMap, parseJsonObject } from '../jsonLine.js';

export const TRANSCRIPT_FORMAT = 1;

/**
 * A transcript's header: the run recorded, as it was when recording began (see `RunHeader`, which a
 * state file's header shares), and the address the simulator listened on.
 */
export interface TranscriptHeader extends RunHeader {
  transcript: typeof TRANSCRIPT_FORMAT;
  /** The simulator's version (its package's). */
  version: string;
  /** The address the simulator listened on (null when it never listened: an app mounted elsewhere). */
  base_url: string | null;
}

/** The request headers a transcript keeps: the ones that change an answer. */
export const RECORDED_REQUEST_HEADERS = ['authorization', 'idempotency-key', 'content-type'] as const;
/** The response headers a transcript keeps, beside the status and the body, as the answer names them. */
const RECORDED_RESPONSE_HEADERS = ['Retry-After', 'Idempotent-Replayed'] as const;
/** A recorded response header, by the name a line records it under (lower case). */
type RecordedResponseHeader = Lowercase<(typeof RECORDED_RESPONSE_HEADERS)[number]>;

/** A request as a transcript or a state file records it, with its answer's status. */
export interface RecordedRequest {
  /** 1, 2, 3... in the order the simulator handled the requests. */
  seq: number;
  /** The global virtual time when the request was handled (before it moved the clock), ISO. */
  now: string;
  /** The account's virtual time then, ISO; null when no account was authenticated. */
  at: string | null;
  method: string;
  /** The path with its query string, as received. */
  path: string;
  /**
   * The headers that change an answer; and `host`, the Host the request was answered under when the
   * simulator wrote its addresses on the Host it was reached under (`ApiRequest.mediaHost`).
   */
  headers: Partial<Record<(typeof RECORDED_REQUEST_HEADERS)[number] | 'host', string>>;
  /** The request body as received (UTF-8), or null when it had none. */
  body: string | null;
  /** Present (true) only when the body was over the 1 MiB limit: its bytes were not kept. */
  body_too_large?: true;
  /** The status of the service's answer; null when a network fault kept the request from the service (`network.phase` `before`). */
  status: number | null;
  /** Present when a network fault lost (or slowed) the answer. */
  network?: RecordedNetwork;
}

/** The request a line records, as the HTTP adapter would have handed it over (to handle it again). */
export function recordedRequest(line: Pick<RecordedRequest, 'method' | 'path' | 'headers' | 'body' | 'body_too_large'>): ApiRequest {
  const queryAt = line.path.indexOf('?');
  const { host, ...headers } = line.headers;
  return {
    method: line.method,
    path: queryAt < 0 ? line.path : line.path.slice(0, queryAt),
    query: queryAt < 0 ? '' : line.path.slice(queryAt + 1),
    headers,
    body: line.body_too_large ? 'too_large' : line.body === null ? null : Buffer.from(line.body, 'utf8'),
    ...(host !== undefined && { mediaHost: host }),
  };
}

/** A network fault as a transcript or a state file records it. */
export interface RecordedNetwork {
  kind: NetworkKind;
  phase: NetworkPhase;
  /** The bytes of the body that reached the client (the gateway's page for `gateway`). */
  body_bytes: number;
  /** `gateway`: the status the client got. (A kind's own field that the client sees is recorded, under its name: `seenFields`.) */
  gateway_status?: number;
}

/**
 * The request path's `onSocket` for a replay or a restore, which hold no connections: a `hang` the
 * line being handled again (`line()`) records as a `close` met the held-connections bound when it
 * was first handled (`limits.max_hung_connections`), so it is closed again, and the answer and its
 * journal record say what they said then. Any other fault is as drawn.
 */
export function replayedOnSocket(line: () => Pick<RecordedRequest, 'network'> | undefined): (fault: NetworkFault) => NetworkFault {
  return (fault) => (holdsConnection(fault.kind) && line()?.network?.kind === 'close' ? closedByBound(fault) : fault);
}

/** The status a line records of an answer: the service's, or null when the request never reached it. */
export function recordedStatus(answer: ApiAnswer): number | null {
  return answer.network?.fault.phase === 'before' ? null : answer.status;
}

/** The network fault a line records of an answer, if it met one. */
export function recordedNetwork(answer: ApiAnswer): RecordedNetwork | undefined {
  const loss = answer.network;
  if (loss === undefined) return undefined;
  const { kind, phase } = loss.fault;
  return { kind, phase, body_bytes: loss.bodyBytes, ...seenFields(loss.fault) };
}

/** The `"status":...` and `"network":{...}` fields of a line (JSON text, without a trailing comma). */
export function formatStatusAndNetwork(answer: ApiAnswer): string {
  const network = recordedNetwork(answer);
  return `"status":${recordedStatus(answer)}${network === undefined ? '' : `,"network":${JSON.stringify(network)}`}`;
}

/** A recorded network fault in words: `reset (after, 0 body bytes)`; `none` without one. */
export function describeRecordedNetwork(network: RecordedNetwork | undefined): string {
  if (network === undefined) return 'none';
  // The fields a line records beside the kind (those the client sees: a gateway's status).
  const recorded = network as Partial<Record<NetworkFieldName, number>>;
  const fields = NETWORK_FIELDS.map((f) => (f.seen === null || recorded[f.name] === undefined ? '' : ` ${recorded[f.name]}`)).join('');
  return `${network.kind}${fields} (${network.phase}, ${network.body_bytes} body byte${network.body_bytes === 1 ? '' : 's'})`;
}

export interface TranscriptLine extends RecordedRequest {
  response_headers: Partial<Record<RecordedResponseHeader, string>>;
  /** The response body as sent (empty for HEAD). */
  response: string;
}

/** Why a recording stopped before the simulator did. */
export type StopReason = 'size_limit' | 'write_failed';

/**
 * The end line a recording that stopped early writes last, where it fits:
 * `{"stopped":"size_limit","max_bytes":1073741824,"next_seq":5021}` (or `"stopped":"write_failed"`
 * with `"error":"ENOSPC"`). `next_seq` is the first request that was not recorded.
 */
export interface TranscriptEnd {
  stopped: StopReason;
  error?: string;
  max_bytes: number;
  next_seq: number;
}

export function formatEnd(end: { reason: StopReason; error?: string; maxBytes: number; nextSeq: number }): string {
  const error = end.error === undefined ? '' : `"error":${JSON.stringify(end.error)},`;
  return `{"stopped":"${end.reason}",${error}"max_bytes":${end.maxBytes},"next_seq":${end.nextSeq}}`;
}

/** The room kept at the end of a file for its `size_limit` end line (its longest form, newline included). */
export const END_LINE_RESERVE =
  Buffer.byteLength(formatEnd({ reason: 'size_limit', maxBytes: Number.MAX_SAFE_INTEGER, nextSeq: Number.MAX_SAFE_INTEGER })) + 1;

export function formatHeader(header: TranscriptHeader): string {
  return JSON.stringify(header);
}

/** Each recorded response header: the name the answer carries it under, the name a line records. */
const RESPONSE_HEADER_NAMES = RECORDED_RESPONSE_HEADERS.map((sent) => [sent, sent.toLowerCase() as RecordedResponseHeader] as const);

/** The request headers a line records, as the members of its `headers` object (without the braces). */
function formatRecordedHeaders(headers: Exchange['headers']): string {
  let text = '';
  for (const name of RECORDED_REQUEST_HEADERS) {
    const value = headers[name];
    if (value !== undefined) text += `${text === '' ? '' : ','}"${name}":${JSON.stringify(value)}`;
  }
  return text;
}

/**
 * The transcript line of one exchange: the JSON of a `TranscriptLine`, written out field by field
 * rather than built as an object and stringified, because it runs for every request a recording
 * simulator answers.
 */
export function formatExchange(seq: number, exchange: Exchange): string {
  let headers = formatRecordedHeaders(exchange.headers);
  if (exchange.mediaHost !== undefined) headers += `${headers === '' ? '' : ','}"host":${JSON.stringify(exchange.mediaHost)}`;
  let responseHeaders = '';
  for (const [sent, recorded] of RESPONSE_HEADER_NAMES) {
    const value = exchange.answer.headers[sent];
    if (value !== undefined) responseHeaders += `${responseHeaders === '' ? '' : ','}"${recorded}":${JSON.stringify(value)}`;
  }
  const now = isoTime(exchange.nowMs);
  const at = exchange.atMs === null ? 'null' : exchange.atMs === exchange.nowMs ? `"${now}"` : `"${isoTime(exchange.atMs)}"`;
  const body = Buffer.isBuffer(exchange.body) ? JSON.stringify(exchange.body.toString('utf8')) : 'null';
  return (
    `{"seq":${seq},"now":"${now}","at":${at},"method":${JSON.stringify(exchange.method)},"path":${JSON.stringify(exchange.path)},` +
    `"headers":{${headers}},"body":${body},${exchange.body === 'too_large' ? '"body_too_large":true,' : ''}` +
    `${formatStatusAndNetwork(exchange.answer)},"response_headers":{${responseHeaders}},"response":${JSON.stringify(sentBody(exchange.method, exchange.answer.body))}}`
  );
}

/** The body as it goes on the wire: none for HEAD. */
export function sentBody(method: string, body: string): string {
  return method === 'HEAD' ? '' : body;
}

/** A transcript that cannot be read: the line (1-based) and what is wrong with it. */
export class TranscriptError extends JsonLinesError {
  override readonly name = 'TranscriptError';
}

/** A transcript being read: its header at once, its lines as they are read. */
export interface TranscriptReading {
  header: TranscriptHeader;
  /** The recorded lines, each checked as it is read; they can be read once. */
  lines: Iterable<TranscriptLine>;
  /** How the file ended, known once `lines` has been read to its end (see `readTranscript`). */
  readonly ending: { truncated: number; end?: TranscriptEnd };
}

/**
 * Reads a transcript from its rows (`text.split('\n')`, or `fileRows`), checking each line as it
 * comes, so that a transcript of any size replays in bounded memory. A last line cut short (the
 * recording process was killed while writing it) is dropped and counted in `ending.truncated`; an
 * end line (the recording stopped early) is `ending.end`; any other line that is not what the
 * format says throws a `TranscriptError` naming it, a second header line included (two recordings
 * in one file). The header's scenario is checked by the caller (it needs the scenario loader).
 */
export function readTranscript(rows: Iterable<string>): TranscriptReading {
  const source = rows[Symbol.iterator]();
  const first = source.next();
  // The header is the first row, whether or not a newline ends it.
  if (first.done || first.value.trim() === '') throw new TranscriptError(1, 'expected the header line, got an empty file');
  const header = parseHeader(parseJsonObject(first.value, 1, (line, what) => new TranscriptError(line, what)));
  const ending: TranscriptReading['ending'] = { truncated: 0 };
  function* lines(): Generator<TranscriptLine> {
    let endLine: number | undefined;
    let number = 2;
    for (let row = source.next(); !row.done; number++) {
      const following = source.next();
      const text = row.value;
      row = following;
      if (text.trim() === '') continue;
      // What follows the last newline: a complete line, or one cut short.
      if (following.done && !isJson(text)) {
        ending.truncated = 1;
        break;
      }
      const value = parseJsonObject(text, number, (line, what) => new TranscriptError(line, what));
      if ('transcript' in value) {
        throw new TranscriptError(
          number,
          'a second header: this file holds two recordings (two simulators writing one file, or files joined together); replay each recording from a file of its own',
        );
      }
      if (endLine !== undefined) throw new TranscriptError(number, `a line after the end line of line ${endLine} (the recording had stopped there)`);
      if ('stopped' in value) {
        ending.end = parseEnd(value, number);
        endLine = number;
      } else yield parseLine(value, number);
    }
  }
  return { header, lines: lines(), ending };
}

function parseEnd(value: Record<string, unknown>, line: number): TranscriptEnd {
  const wrong = (field: string, expected: string): never => {
    throw new TranscriptError(line, `${field}: expected ${expected}, got ${JSON.stringify(value[field]) ?? 'nothing'} (an end line)`);
  };
  if (value.stopped !== 'size_limit' && value.stopped !== 'write_failed') wrong('stopped', '"size_limit" or "write_failed"');
  if (value.error !== undefined && typeof value.error !== 'string') wrong('error', 'a string');
  if (!Number.isInteger(value.max_bytes)) wrong('max_bytes', 'an integer');
  if (!Number.isInteger(value.next_seq)) wrong('next_seq', 'an integer');
  return value as unknown as TranscriptEnd;
}

function isJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

function parseHeader(value: Record<string, unknown>): TranscriptHeader {
  const at = (problem: string): never => {
    throw new TranscriptError(1, `${problem} (line 1 is the transcript's header)`);
  };
  if (value.transcript !== TRANSCRIPT_FORMAT) {
    at(`transcript: expected ${TRANSCRIPT_FORMAT}, got ${JSON.stringify(value.transcript)}`);
  }
  if (typeof value.scenario !== 'object' || value.scenario === null || Array.isArray(value.scenario)) at('scenario: expected an object');
  if (!Number.isInteger(value.seed)) at(`seed: expected an integer, got ${JSON.stringify(value.seed)}`);
  const clock = value.clock as Record<string, unknown> | null | undefined;
  if (typeof clock !== 'object' || clock === null) at('clock: expected an object');
  checkRecordedClock(clock as Record<string, unknown>, at);
  if (typeof value.cdn_url !== 'string') at(`cdn_url: expected a string, got ${JSON.stringify(value.cdn_url)}`);
  if (value.base_url !== null && typeof value.base_url !== 'string') at(`base_url: expected a string or null, got ${JSON.stringify(value.base_url)}`);
  checkRecordedShard(value.shard, at);
  return value as unknown as TranscriptHeader;
}

/** The shard of a header (a transcript's or a state file's; absent in files written before shards): `at(problem)` throws. */
export function checkRecordedShard(shard: unknown, at: (problem: string) => never): void {
  if (shard === undefined || shard === null) return;
  const s = shard as Record<string, unknown>;
  if (typeof shard !== 'object' || !Number.isSafeInteger(s.count) || !Number.isSafeInteger(s.index) || (s.index as number) < 0 || (s.index as number) >= (s.count as number)) {
    at(`shard: expected null or {"index":I,"count":N} with 0 <= I < N, got ${JSON.stringify(shard)}`);
  }
}

/** The clock of a header (a transcript's or a state file's): `at(problem)` throws. */
export function checkRecordedClock(clock: Record<string, unknown>, at: (problem: string) => never): void {
  const { mode, speed, start } = clock;
  if (mode !== 'manual' && mode !== 'realtime') at(`clock.mode: expected "manual" or "realtime", got ${JSON.stringify(mode)}`);
  if (typeof speed !== 'number' || !(speed > 0)) at(`clock.speed: expected a number above 0, got ${JSON.stringify(speed)}`);
  if (!isIsoTime(start)) at(`clock.start: expected an ISO 8601 time, got ${JSON.stringify(start)}`);
}

/** The fields of a `RecordedRequest`: `wrong(field, expected)` throws. */
export function checkRecordedRequest(value: Record<string, unknown>, wrong: (field: string, expected: string) => never): void {
  if (!Number.isInteger(value.seq)) wrong('seq', 'an integer');
  if (!isIsoTime(value.now)) wrong('now', 'an ISO 8601 time');
  if (value.at !== null && !isIsoTime(value.at)) wrong('at', 'an ISO 8601 time or null');
  if (typeof value.method !== 'string' || value.method === '') wrong('method', 'an HTTP method');
  if (typeof value.path !== 'string' || !value.path.startsWith('/')) wrong('path', 'a path starting with /');
  if (!isStringMap(value.headers)) wrong('headers', 'an object of strings');
  if (value.body !== null && typeof value.body !== 'string') wrong('body', 'a string or null');
  if (value.body_too_large !== undefined && value.body_too_large !== true) wrong('body_too_large', 'true, or no such field');
  const network = value.network as Record<string, unknown> | undefined;
  if (network !== undefined) {
    if (typeof network !== 'object' || network === null) wrong('network', 'an object');
    if (!isNetworkKind(network.kind)) wrong('network', `a kind of ${NETWORK_KINDS.join(', ')}`);
    if (!(NETWORK_PHASES as readonly unknown[]).includes(network.phase)) wrong('network', `a phase ${NETWORK_PHASES.join(' or ')}`);
    if (!Number.isInteger(network.body_bytes)) wrong('network', 'body_bytes, an integer');
  }
  if (!Number.isInteger(value.status) && !(value.status === null && network !== undefined)) wrong('status', network === undefined ? 'an integer' : 'an integer or null');
}

function parseLine(value: Record<string, unknown>, line: number): TranscriptLine {
  const wrong = (field: string, expected: string): never => {
    throw new TranscriptError(line, `${field}: expected ${expected}, got ${JSON.stringify(value[field]) ?? 'nothing'}`);
  };
  checkRecordedRequest(value, wrong);
  if (value.response_headers !== undefined && !isStringMap(value.response_headers)) wrong('response_headers', 'an object of strings');
  if (typeof value.response !== 'string') wrong('response', 'a string');
  return value as unknown as TranscriptLine;
}

