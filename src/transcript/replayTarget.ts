/**
 * Replaying a transcript against a running simulator (`sim replay FILE --target URL`), to check that
 * another build or version still answers an old transcript the same way.
 *
 * The target must run the manual clock (the replay moves it: to each line's `now` before its
 * request, through `POST /_sim/clock/advance`), write the transcript's addresses into its responses
 * (`--base-url`, `--cdn-url`), and be able to run the transcript's scenario. It is reset first with
 * the transcript's seed and scenario: none named when it already runs that scenario; else the
 * scenario's name, which the target accepts when it is a bundled scenario, the one the target was
 * started with, or a file of its `--scenarios-dir` (a reset names scenarios, never files). Every
 * control request carries the target's control token, when one is given.
 *
 * Since the target runs the manual clock, the `mode` and `speed` that advance, reset and scenario
 * answers show are taken as the recorded ones; everything else is compared byte for byte. A recorded
 * `POST /_sim/shutdown` is not sent (it would stop the target).
 *
 * A request that met a network fault is compared by what can be seen of it: how the connection
 * ended (a reset, a close, a hang: the replay lets a hang go once the target's journal shows it),
 * the bytes of the body that arrived (a truncated body is compared with the recorded answer's
 * beginning), the gateway's status, and the kind and phase the target's journal shows for it.
 * The service's answer behind a lost one cannot be seen on the wire: it is not compared.
 */
import { request as httpRequest, Agent as HttpAgent, type IncomingHttpHeaders } from 'node:http';
import { request as httpsRequest, Agent as HttpsAgent } from 'node:https';
import { isDeepStrictEqual } from 'node:util';
import { BODY_LIMIT_BYTES } from '../request-path/body.js';
import { matchRoute } from '../request-path/router.js';
import { OPERATION_FACTS, type OperationFacts } from '../generated/operations.js';
import { JSON_MEDIA_TYPE } from '../jsonType.js';
import { sleep, systemClock } from '../hostClock.js';
import { controlCall, controlPath, isControlPath, queryString, type ControlCallParts, type ControlOperation } from '../control-client/endpoints.js';
import { cdnUrlIn, defaultCdnUrl } from '../core/generations/mediaPaths.js';
import type { Scenario } from '../core/scenario/scenario.js';
import { NETWORK, isNetworkKind, recognisedKind, seenFieldsOnWire, type NetworkKind, type NetworkPhase } from '../core/faults/network.js';
import { compareAnswer, emptyReport, type ReplayReport } from './compare.js';
import { sentBody, type RecordedNetwork, type TranscriptHeader, type TranscriptLine, type TranscriptReading } from './lineFormat.js';

/** The target cannot be used: unreachable, not on the manual clock, or refusing the reset. */
export class TargetError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TargetError';
  }
}

export interface TargetReplayOptions {
  /** The locally bundled scenario of that name, if there is one (to tell whether the target can load it by name). */
  bundledScenario: (name: string) => Scenario | undefined;
  /** The target's control token (`--control-token`), sent on every `/_sim` request. */
  controlToken?: string;
}

interface Answer {
  status: number;
  body: string;
}

/** What a request met on the wire: an answer, or how the connection ended without one whole. */
type Seen =
  | { ended: 'answered'; status: number; body: Buffer; headers: IncomingHttpHeaders }
  | { ended: 'reset' | 'close' | 'hang' }
  | { ended: 'truncated'; status: number; body: Buffer };

export async function replayAgainstTarget(transcript: Pick<TranscriptReading, 'header' | 'lines'>, targetUrl: string, options: TargetReplayOptions): Promise<ReplayReport> {
  const target = new Target(targetUrl, options.controlToken);
  try {
    return await replay(target, transcript, options);
  } finally {
    target.close();
  }
}

async function replay(target: Target, transcript: Pick<TranscriptReading, 'header' | 'lines'>, options: TargetReplayOptions): Promise<ReplayReport> {
  const { header } = transcript;
  const report = emptyReport();

  const health = await target.control('simHealth');
  if (health.status !== 200) throw new TargetError(`${target.base}${controlPath('simHealth')} answered ${health.status}: is it a simulator?`);
  if ((health.value as { clock?: { mode?: string } }).clock?.mode !== 'manual') {
    throw new TargetError(`the target runs the realtime clock; start it with --clock manual (the replay moves its clock).`);
  }

  await resetTarget(target, header.scenario, header.seed, options, report);
  let targetNowMs = await target.clockMs();

  for (const line of transcript.lines) {
    if (operationOf(line)?.stops === true) {
      report.skipped.push({ seq: line.seq, method: line.method, path: line.path, why: 'not sent, it would stop the target' });
      continue;
    }
    const behindMs = Date.parse(line.now) - targetNowMs;
    if (behindMs > 0) {
      const moved = await target.control('simAdvanceClock', { body: { seconds: behindMs / 1000 } });
      if (moved.status !== 200) throw new TargetError(`the target refused to advance its clock: ${moved.status} ${moved.text}`);
      targetNowMs = Date.parse((moved.value as { now: string }).now);
    }
    if (line.network) {
      await replayLost(target, line, report);
      continue;
    }
    const answer = await target.send(line);
    const isControl = isControlPath(line.path);
    const body = isControl ? withRecordedClockSettings(line, answer.body) : answer.body;
    compareAnswer(report, line, answer.status, sentBody(line.method, body));
    // A control request may have moved the clock (an advance, a reset).
    if (isControl && answer.status === 200) targetNowMs = await target.clockMs();
  }
  if (report.differences.length > 0) {
    const note = await addressesNote(target, header);
    if (note) report.notes.push(note);
  }
  return report;
}

/**
 * Replays a request that met a network fault when recorded and compares what can be seen of it:
 * how the connection ended and the bytes that arrived, with the kind and phase the target's journal
 * shows for it (a hang is let go once the journal shows it).
 */
async function replayLost(target: Target, line: TranscriptLine, report: ReplayReport): Promise<void> {
  const apiKey = /^Bearer (.+)$/.exec(line.headers.authorization ?? '')?.[1];
  const before = apiKey === undefined ? undefined : await target.lastJournaled(apiKey);
  const journaled = apiKey === undefined ? Promise.resolve(undefined) : target.nextJournaled(apiKey, before?.request_id);
  const seen = await target.observe(line, journaled);
  const entry = await journaled;
  // Each kind's descriptor says how it shows on the wire (a hang ended by its hang_ms looks like a close: the journal tells them apart).
  const kind = recognisedKind(seen, entry?.network?.kind);
  const phase = entry?.network?.phase;
  const bodyBytes = 'body' in seen ? seen.body.length : 0;
  const replayed: RecordedNetwork | undefined =
    kind === undefined || phase === undefined ? undefined : { kind, phase, body_bytes: bodyBytes, ...seenFieldsOnWire(kind, seen) };
  // The service's answer shows on the wire only in part (truncate) or whole (slow); the rest is taken as recorded.
  const delivers = kind === undefined ? undefined : NETWORK[kind].delivers;
  let status: number | null = line.status;
  let body = line.response;
  if (delivers === 'whole' && 'status' in seen) {
    status = seen.status;
    body = sentBody(line.method, seen.body.toString('utf8'));
  } else if (delivers === 'part' && 'status' in seen) {
    status = seen.status;
    const whole = Buffer.from(line.response, 'utf8');
    body = Buffer.concat([seen.body, whole.subarray(seen.body.length)]).toString('utf8');
  } else if (kind === undefined && 'status' in seen) {
    status = seen.status;
    body = sentBody(line.method, seen.body.toString('utf8'));
  }
  compareAnswer(report, line, status, body, replayed);
}

/** A journal entry as the replay reads it. */
interface JournalSeen {
  request_id: string;
  network?: { kind: NetworkKind; phase: NetworkPhase };
}

/**
 * Why a target's answers differ, when it is its addresses: the target writes its own media address
 * (its `--cdn-url`, by default its `--base-url` plus `/cdn`) into answers, where the transcript has
 * the recording simulator's. Read from a succeeded video the replay left on the target (a control
 * GET, which changes nothing); undefined when there is none, or the addresses agree.
 */
async function addressesNote(target: Target, header: TranscriptHeader): Promise<string | undefined> {
  let video: { id?: unknown; output?: { url?: unknown } } | undefined;
  try {
    const found = await target.control('simGenerations', { query: { status: 'succeeded', limit: 1 } });
    video = (found.value as { data?: (typeof video)[] } | undefined)?.data?.[0];
  } catch {
    return undefined;
  }
  const url = video?.output?.url;
  if (typeof url !== 'string' || url.startsWith(`${header.cdn_url}/`)) return undefined;
  const targetCdn = (typeof video?.id === 'string' ? cdnUrlIn(url, 'video', video.id) : undefined) ?? url;
  const flags = [
    ...(header.base_url === null ? [] : [`--base-url ${header.base_url}`]),
    ...(header.base_url === null || header.cdn_url !== defaultCdnUrl(header.base_url) ? [`--cdn-url ${header.cdn_url}`] : []),
  ];
  return (
    `the target writes other addresses into its answers than the recording simulator did: media at ${targetCdn}, where the transcript has ` +
    `${header.cdn_url}${header.base_url === null ? '' : ` (it was recorded with the base URL ${header.base_url})`}. ` +
    `Start the target with ${flags.join(' ')} for identical answers.`
  );
}

/**
 * Resets the target to the transcript's scenario and seed: the scenario it runs already, else the
 * one it accepts by the scenario's name (bundled, or the one it was started with), else the file
 * `NAME.yaml` of its `--scenarios-dir`.
 */
async function resetTarget(target: Target, scenario: Scenario, seed: number, options: TargetReplayOptions, report: ReplayReport): Promise<void> {
  const running = await target.control('simScenario');
  if (running.status === 200 && isDeepStrictEqual(settingsAside(running.value), settingsAside(scenario))) {
    await target.reset({ seed });
    return;
  }
  const bundled = options.bundledScenario(scenario.name);
  if (bundled && isDeepStrictEqual(bundled, scenario)) {
    await target.reset({ scenario: scenario.name, seed });
  } else if (!(await target.tryReset({ scenario: scenario.name, seed }))) {
    const file = `${scenario.name}.yaml`;
    await target.reset(
      { scenario: file, seed },
      `(the transcript's scenario '${scenario.name}' is not a bundled one: start the target with it, --scenario FILE, or put it in the target's --scenarios-dir as ${file})`,
    );
  }
  const now = await target.control('simScenario');
  if (now.status === 200 && !isDeepStrictEqual(settingsAside(now.value), settingsAside(scenario))) {
    const fields = differingFields(settingsAside(now.value), settingsAside(scenario));
    report.notes.push(`the target's scenario differs from the transcript's in: ${fields.join(', ')}`);
  }
}

/**
 * A scenario without the settings a run may override (its seed, the clock's mode and speed), which
 * `GET /_sim/scenario` shows as the target runs them: the reset sets the seed, and the clock's
 * settings are taken as recorded.
 */
function settingsAside(scenario: unknown): unknown {
  if (typeof scenario !== 'object' || scenario === null) return scenario;
  const { seed: _seed, clock, ...rest } = scenario as { seed?: unknown; clock?: unknown };
  if (typeof clock !== 'object' || clock === null) return rest;
  const { mode: _mode, speed: _speed, ...start } = clock as Record<string, unknown>;
  return { ...rest, clock: start };
}

/**
 * The target runs the manual clock: in an advance, reset or scenario answer, the clock's `mode` and
 * `speed` are taken as recorded, so that a realtime transcript compares on everything else.
 */
function withRecordedClockSettings(line: TranscriptLine, body: string): string {
  if (operationOf(line)?.showsClockSettings !== true) return body;
  try {
    const replayed = JSON.parse(body) as Record<string, unknown>;
    const recorded = JSON.parse(line.response) as Record<string, unknown>;
    const a = (replayed.clock ?? replayed) as Record<string, unknown>;
    const b = (recorded.clock ?? recorded) as Record<string, unknown>;
    if (typeof a.mode !== 'string' || typeof b.mode !== 'string') return body;
    a.mode = b.mode;
    a.speed = b.speed;
    return JSON.stringify(replayed);
  } catch {
    return body;
  }
}

/** Top-level fields (and one level down) where two scenarios differ. */
function differingFields(a: unknown, b: unknown, prefix = '', depth = 0): string[] {
  if (isDeepStrictEqual(a, b)) return [];
  const objects = typeof a === 'object' && a !== null && typeof b === 'object' && b !== null && !Array.isArray(a) && !Array.isArray(b);
  if (!objects || depth >= 1) return [prefix || '(all)'];
  const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
  const out: string[] = [];
  for (const key of keys) {
    out.push(...differingFields((a as Record<string, unknown>)[key], (b as Record<string, unknown>)[key], prefix ? `${prefix}.${key}` : key, depth + 1));
  }
  return out;
}

/** What openapi.yaml declares of a recorded request's operation (whatever its query); undefined for a route it does not have. */
function operationOf(line: TranscriptLine): OperationFacts | undefined {
  const route = matchRoute(line.method, line.path.split('?')[0] as string);
  return route && OPERATION_FACTS[route.operation.operationId];
}

/** A recorded request's body as it was sent. */
function bodyOf(line: TranscriptLine): Buffer | null {
  return line.body_too_large ? Buffer.alloc(BODY_LIMIT_BYTES + 1, ' ') : line.body === null ? null : Buffer.from(line.body, 'utf8');
}

/** A running simulator, over HTTP. */
class Target {
  readonly base: string;
  private readonly url: URL;
  private readonly agent: HttpAgent;

  constructor(
    url: string,
    private readonly controlToken?: string,
  ) {
    this.url = new URL(url);
    this.base = url.replace(/\/+$/, '');
    this.agent = this.url.protocol === 'https:' ? new HttpsAgent({ keepAlive: true }) : new HttpAgent({ keepAlive: true });
  }

  close(): void {
    this.agent.destroy();
  }

  /** A reset the target may refuse with a 400 (a scenario name it does not accept); whether it was made. */
  async tryReset(body: Record<string, unknown>): Promise<boolean> {
    const answer = await this.control('simReset', { body });
    if (answer.status === 200) return true;
    if (answer.status === 400) return false;
    throw new TargetError(`the target refused the reset ${JSON.stringify(body)}: ${answer.status} ${answer.text}`);
  }

  async reset(body: Record<string, unknown>, hint = ''): Promise<void> {
    const answer = await this.control('simReset', { body });
    if (answer.status !== 200) throw new TargetError(`the target refused the reset ${JSON.stringify(body)}: ${answer.status} ${answer.text}${hint ? ` ${hint}` : ''}`);
  }

  async clockMs(): Promise<number> {
    const clock = await this.control('simClock');
    const now = (clock.value as { now?: unknown } | undefined)?.now;
    if (clock.status !== 200 || typeof now !== 'string') throw new TargetError(`${this.base}${controlPath('simClock')} answered ${clock.status} ${clock.text}`);
    return Date.parse(now);
  }

  /** A control request (its endpoint, as `src/control-client/endpoints.ts` writes it): the status, the body and its JSON value, whatever the status. */
  async control(operation: ControlOperation, parts?: ControlCallParts): Promise<{ status: number; text: string; value: unknown }> {
    const call = controlCall(operation, parts);
    const query = queryString(call.query);
    const text = call.body === undefined ? null : JSON.stringify(call.body);
    const path = query === '' ? call.path : `${call.path}?${query}`;
    const answer = await this.request(call.method, path, text === null ? {} : { 'content-type': JSON_MEDIA_TYPE }, text === null ? null : Buffer.from(text));
    let value: unknown;
    try {
      value = JSON.parse(answer.body);
    } catch {
      value = undefined;
    }
    return { status: answer.status, text: answer.body, value };
  }

  /** Sends a recorded request as it was received: path and query untouched, its headers and body. */
  send(line: TranscriptLine): Promise<Answer> {
    return this.request(line.method, line.path, { ...line.headers }, bodyOf(line));
  }

  /** The account's newest journal entry, if any. */
  async lastJournaled(apiKey: string): Promise<JournalSeen | undefined> {
    const found = await this.control('simRequests', { query: { api_key: apiKey, limit: 1 } });
    return (found.value as { data?: JournalSeen[] } | undefined)?.data?.[0];
  }

  /** The account's next journal entry after `afterId` (the request just sent), asked for until it shows (at most 10 s). */
  async nextJournaled(apiKey: string, afterId: string | undefined): Promise<JournalSeen | undefined> {
    for (const deadline = systemClock.now() + 10_000; systemClock.now() < deadline; ) {
      const last = await this.lastJournaled(apiKey);
      if (last !== undefined && last.request_id !== afterId) return last;
      await sleep(systemClock, 10);
    }
    return undefined;
  }

  /**
   * Sends a recorded request on a connection of its own and sees how it ends. A request still
   * without an answer once `journaled` shows it met a hang is let go (the replay does not wait out
   * the hang).
   */
  observe(line: TranscriptLine, journaled: Promise<JournalSeen | undefined>): Promise<Seen> {
    const body = bodyOf(line);
    const headers: IncomingHttpHeaders = { ...line.headers, connection: 'close', ...(body !== null && { 'content-length': String(body.length) }) };
    const send = this.url.protocol === 'https:' ? httpsRequest : httpRequest;
    return new Promise((resolve, reject) => {
      let settled = false;
      const settle = (seen: Seen): void => {
        if (settled) return;
        settled = true;
        resolve(seen);
      };
      const req = send(
        {
          protocol: this.url.protocol,
          hostname: this.url.hostname.replace(/^\[|\]$/g, ''),
          port: this.url.port,
          method: line.method,
          path: `${this.url.pathname.replace(/\/+$/, '')}${line.path}`,
          headers,
          agent: false,
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('end', () => settle({ ended: 'answered', status: res.statusCode ?? 0, body: Buffer.concat(chunks), headers: res.headers }));
          res.on('aborted', () => settle({ ended: 'truncated', status: res.statusCode ?? 0, body: Buffer.concat(chunks) }));
          res.on('error', () => settle({ ended: 'truncated', status: res.statusCode ?? 0, body: Buffer.concat(chunks) }));
        },
      );
      req.on('error', (e: NodeJS.ErrnoException) => {
        if (e.code === 'ECONNREFUSED' || e.code === 'ENOTFOUND') return reject(new TargetError(`cannot reach ${this.base}: ${e.code}`));
        // Node says "socket hang up" when the connection closed cleanly before an answer, "read ECONNRESET" on a reset.
        settle({ ended: e.message === 'socket hang up' ? 'close' : 'reset' });
      });
      void journaled.then((entry) => {
        // A kind the replay lets go of once the journal shows it (a hang): it would hold the connection until its hang_ms.
        const kind = entry?.network?.kind;
        if (!isNetworkKind(kind) || !NETWORK[kind].replay.letGo || settled) return;
        settle({ ended: 'hang' });
        req.destroy();
      });
      req.end(body ?? undefined);
    });
  }

  private request(method: string, path: string, headers: IncomingHttpHeaders, body: Buffer | null): Promise<Answer> {
    const prefix = this.url.pathname.replace(/\/+$/, '');
    const send = this.url.protocol === 'https:' ? httpsRequest : httpRequest;
    const sent = this.controlToken !== undefined && isControlPath(path.split('?')[0] as string) ? { ...headers, authorization: `Bearer ${this.controlToken}` } : headers;
    return new Promise((resolve, reject) => {
      const req = send(
        {
          protocol: this.url.protocol,
          hostname: this.url.hostname.replace(/^\[|\]$/g, ''),
          port: this.url.port,
          method,
          path: `${prefix}${path}`,
          headers: body === null ? sent : { ...sent, 'content-length': String(body.length) },
          agent: this.agent,
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
          res.on('error', reject);
        },
      );
      req.on('error', (e: NodeJS.ErrnoException) => reject(new TargetError(`cannot reach ${this.base}: ${e.code ?? e.message}`)));
      req.end(body ?? undefined);
    });
  }
}
