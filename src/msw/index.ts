/**
 * The simulator in the page: Mock Service Worker handlers over the same request path as the server
 * (`video-service-sim/msw`). Each handler turns an MSW request into the request path's input and
 * its answer into a `Response`; every rule, limit, fault, trigger and validation is the request
 * path's and the core's, so the answers are the server's, byte for byte, for the same scenario,
 * seed, clock and requests (media addresses aside).
 *
 *   import { setupServer } from 'msw/node';            // or setupWorker from 'msw/browser'
 *   const sim = createSimulatorHandlers({ baseUrl: 'https://api.example.test', scenario: 'fast', clock: 'manual' });
 *   const server = setupServer(...sim.handlers);
 *
 * What a page cannot have stays with the server: files (a state file, a transcript on disk),
 * sockets. A network fault becomes what a page sees of it (`answers.ts`). Nothing this module
 * loads needs Node's built-in modules: the build bundles it for the browser
 * (scripts/build-msw.mjs), with the validators compiled ahead of time (no `eval` under a strict
 * Content-Security-Policy) and the clips loaded when a video's file is first asked for.
 */
import { HttpResponse, http, type HttpHandler } from 'msw';
import { handleRequest, requestPathDeps, type ApiAnswer, type ApiRequest, type Exchange, type RequestPathDeps, type StreamedBody } from '../request-path/handleRequest.js';
import { BODY_LIMIT_BYTES } from '../request-path/body.js';
import { WaitRoom } from '../request-path/waits.js';
import { controlMethods, queryString, CONTROL_ROOT, type ControlMethods } from '../control-client/endpoints.js';
import { SimulatorControlError } from '../control-client/controlError.js';
import { fail } from '../core/errors.js';
import { defaultCdnUrl, MEDIA_ROOT } from '../core/generations/mediaPaths.js';
import type { Scenario } from '../core/scenario/scenario.js';
import { Simulator } from '../core/simulator/simulator.js';
import { JSON_MEDIA_TYPE } from '../jsonType.js';
import { createMediaFiles } from '../media/files.js';
import { TranscriptRecorder } from '../transcript/recorder.js';
import { TRANSCRIPT_FORMAT } from '../transcript/lineFormat.js';
import { isoTime } from '../core/time/clock.js';
import { SIMULATOR_VERSION } from '../version.js';
import { hostClockOf, hostClockOption, type HostClock } from '../hostClock.js';
import { apiResponse, closedResponse, mediaResponse, type PageTimers } from './answers.js';
import { bundledScenario, bundledScenarioList, resetScenario, type ScenarioOption } from './scenarios.js';

export interface SimulatorHandlersOptions {
  /**
   * The service address the app calls: an absolute http(s) URL (`https://api.example.test`), or
   * in a page a path on its own origin (`/api`). The handlers answer `/v1` (and `/_sim`) below it.
   */
  baseUrl: string;
  /** Where media URLs point, and where the handlers answer the files. Default: `baseUrl` + `/cdn`. */
  cdnUrl?: string;
  /**
   * A bundled scenario's name (`fast`), a scenario as a value (the form of a scenario file's
   * contents), or a scenario file's YAML text; `extends` names a bundled scenario. Default:
   * `default`. A value or a text is checked asynchronously (see `ready`).
   */
  scenario?: ScenarioOption;
  /** Overrides the scenario's seed. */
  seed?: number;
  /** `manual` (time moves only through `control.clock.advance`) or `realtime`. Default: the scenario's. */
  clock?: 'manual' | 'realtime';
  /** The realtime clock's multiplier. Default: the scenario's. */
  speed?: number;
  /**
   * The host's clock: its `now()` (epoch milliseconds) is the wall clock realtime mode follows, and
   * injected latency, network `hang_ms` and `slow` answers and waits for requests run on its timers.
   * Default: the page's own, `hostClockOf(globalThis)` (the global timers and `Date.now`, read when
   * called: a test runner's fake timers are followed).
   */
  hostClock?: HostClock;
  /** The host's time (epoch milliseconds) realtime mode follows, in place of `hostClock.now`: a test runner's faked `Date.now`. Default: the host clock's. */
  now?: () => number;
  /** Whether the handlers also answer the control API under `baseUrl` + `/_sim` (no token: nothing leaves the page). Default: true. */
  control?: boolean;
}

/** What `createSimulatorHandlers` gives. */
export interface SimulatorHandlers {
  /** The MSW request handlers: `/v1`, the media files and, unless `control: false`, `/_sim`. */
  readonly handlers: HttpHandler[];
  /** The control API: the same methods, answers and errors as `SimulatorControl` against a server. */
  readonly control: ControlMethods<true>;
  /**
   * Settles once the handlers can answer: at once for a bundled scenario; for a scenario given as a
   * value or as YAML text, once it is checked (its parser and validator load then). It rejects with
   * the scenario's problems (a ScenarioError); so do the handlers' answers and control calls.
   */
  readonly ready: Promise<void>;
  /** The transcript of what the handlers answered, in the transcript format (`sim replay FILE` checks it against the server). */
  transcript(): string;
  /** Stops the timers the handlers hold (latency, hangs); from then on they answer 503 `simulator_closed`. */
  close(): void;
}

/** The transcript a page keeps, at most (its recording stops there, as a server's at `--record-max-bytes`). */
const TRANSCRIPT_MAX_BYTES = 64 * 1024 * 1024;

export function createSimulatorHandlers(options: SimulatorHandlersOptions): SimulatorHandlers {
  const base = addressOption('baseUrl', options.baseUrl);
  const cdn = options.cdnUrl === undefined ? defaultCdnUrl(base) : addressOption('cdnUrl', options.cdnUrl);
  if (options.seed !== undefined && !Number.isSafeInteger(options.seed)) throw new RangeError(`seed must be an integer, got ${String(options.seed)}`);
  if (options.clock !== undefined && options.clock !== 'manual' && options.clock !== 'realtime') {
    throw new RangeError(`clock must be 'manual' or 'realtime', got ${JSON.stringify(options.clock)}`);
  }
  if (options.speed !== undefined && !(typeof options.speed === 'number' && options.speed > 0 && Number.isFinite(options.speed))) {
    throw new RangeError(`speed must be a number above 0, got ${String(options.speed)}`);
  }
  if (options.now !== undefined && typeof options.now !== 'function') throw new RangeError('now must be a function that answers epoch milliseconds');
  const hostClock = hostClockOption(options.hostClock, hostClockOf(globalThis));

  const timers: PageTimers = { held: new Set(), hostClock };
  let closed = false;
  const close = (): void => {
    closed = true;
    for (const timer of timers.held) timer.cancel();
    timers.held.clear();
    // Waits for requests held now are answered 503 simulator_closed at once.
    engine?.waits.stop();
  };
  // A bundled scenario is there at once; one given as a value or as YAML text is resolved once its
  // parser and validator are loaded (`ready`).
  const scenario = scenarioOption(options.scenario ?? 'default');
  let engine: Engine | undefined;
  const open = (resolved: Scenario): Engine => (engine = openEngine(resolved, { ...options, base, cdn, hostClock }));
  const ready: Promise<void> =
    'bundled' in scenario
      ? Promise.resolve(void open(scenario.bundled))
      : import('./customScenario.js').then(({ customScenario }) => void open(customScenario(scenario.custom)));
  // A bad scenario is the answer of `ready` (and of every request and control call), never an unhandled rejection.
  ready.catch(() => {});
  const started = async (): Promise<Engine> => {
    await ready;
    return engine as Engine;
  };

  const answerApi = async (request: Request, path: string): Promise<Response> => {
    const { core, deps, waits } = await started();
    if (closed) return closedResponse();
    let answer = handleRequest(deps, await apiRequestOf(request, path));
    if (answer.wait) {
      // Held until answered; a page that aborts the request lets it go.
      const held = await waits.hold(answer.wait, request.signal);
      if (held === undefined) return HttpResponse.error();
      answer = held;
    }
    if (answer.shutdown) queueMicrotask(close);
    return apiResponse(request, answer, { cors: !path.startsWith(CONTROL_ROOT), timers, signal: request.signal, released: () => core.held.release() });
  };
  const answerMedia = async (request: Request, path: string): Promise<Response> => {
    const { core, files } = await started();
    if (closed) return closedResponse();
    const requestId = core.nextRequestId();
    const fault = core.faults.takeMedia(request.method, `${MEDIA_ROOT}${path}`);
    const answer = await files({ method: request.method, path, header: (name) => request.headers.get(name) ?? undefined });
    return mediaResponse(request, answer, { requestId, fault, timers, onSocket: (f) => core.onSocket(f), released: () => core.held.release() });
  };

  const below = (root: string, path: string): string => path.slice(new URL(root).pathname.replace(/\/$/, '').length);
  const handlers: HttpHandler[] = [
    http.all(`${base}/v1/*`, ({ request }) => answerApi(request, below(base, new URL(request.url).pathname))),
    http.all(`${cdn}/*`, ({ request }) => answerMedia(request, below(cdn, new URL(request.url).pathname))),
  ];
  if (options.control !== false) {
    handlers.push(
      http.all(`${base}${CONTROL_ROOT}`, ({ request }) => answerApi(request, CONTROL_ROOT)),
      http.all(`${base}${CONTROL_ROOT}/*`, ({ request }) => answerApi(request, below(base, new URL(request.url).pathname))),
    );
  }

  const control = controlMethods<true>(async (call) => {
    const { deps, waits } = await started();
    if (closed) throw new SimulatorControlError(503, JSON.stringify(fail('simulator_closed').toBody()), `${call.method} ${call.path}`);
    const first = handleRequest(deps, {
      method: call.method,
      path: call.path,
      query: queryString(call.query),
      headers: call.body === undefined ? {} : { 'content-type': JSON_MEDIA_TYPE },
      body: call.body === undefined ? null : Buffer.from(JSON.stringify(call.body)),
    });
    const answer = first.wait ? ((await waits.hold(first.wait)) as ApiAnswer) : first;
    if (answer.status !== 200) throw new SimulatorControlError(answer.status, answer.body, `${call.method} ${call.path}`);
    if (call.text) return answer.stream ? answer.stream.text() : answer.body;
    return JSON.parse(answer.body) as unknown;
  });

  return { handlers, control, ready, transcript: () => engine?.transcript() ?? '', close };
}

/** What answers once the scenario is known: the core, its request path, its media files, its transcript, the waits for requests it holds. */
interface Engine {
  core: Simulator;
  deps: RequestPathDeps;
  waits: WaitRoom;
  files: ReturnType<typeof createMediaFiles>;
  transcript(): string;
}

function openEngine(scenario: Scenario, options: SimulatorHandlersOptions & { base: string; cdn: string; hostClock: HostClock }): Engine {
  const core = new Simulator({
    scenario,
    loadScenario: resetScenario,
    seed: options.seed,
    clockMode: options.clock,
    speed: options.speed,
    wallClock: options.now ?? ((): number => options.hostClock.now()),
    cdnUrl: options.cdn,
  });
  const chunks: string[] = [];
  const begun = { scenario: structuredClone(core.scenario), seed: core.seed, clock: { mode: core.clock.mode, speed: core.clock.speed, start: isoTime(core.clock.startMs) } };
  const recorder = new TranscriptRecorder({
    header: () => ({ transcript: TRANSCRIPT_FORMAT, version: SIMULATOR_VERSION, ...begun, base_url: options.base, cdn_url: core.ownCdnUrl, shard: null }),
    write: (line) => void chunks.push(line),
    truncate: () => false,
    maxBytes: TRANSCRIPT_MAX_BYTES,
    onStop: () => {},
  });
  const transcript = (): string => {
    recorder.start();
    return chunks.join('');
  };
  const deps = requestPathDeps(core, {
    app: { scenarios: bundledScenarioList, transcript: (): StreamedBody => textBody(transcript()), recording: () => recorder.status() },
    log: (line) => console.error(`video-service-sim: ${line}`),
    onExchange: (exchange: Exchange) => void (exchange.idOnly || recorder.record(exchange)),
    // A hang or a slow answer holds a place among `limits.max_hung_connections`, as on the server.
    onSocket: (fault) => core.onSocket(fault),
  });
  const files = createMediaFiles({
    videoFile(id) {
      const g = core.findGeneration(id);
      return g && g.status === 'succeeded' ? { resolution: g.request.resolution, durationSeconds: g.request.duration_seconds, prompt: g.request.prompt } : undefined;
    },
    imageFile(id) {
      const image = core.findImage(id);
      return image ? { aspectRatio: image.aspectRatio, prompt: image.prompt } : undefined;
    },
  });
  // Waits for requests run out on the handlers' host clock.
  return { core, deps, files, transcript, waits: new WaitRoom(core, options.hostClock) };
}

/** The scenario option: a bundled scenario, or one to resolve once its parser is loaded. A name that is none is refused at once. */
function scenarioOption(option: unknown): { bundled: Scenario } | { custom: ScenarioOption } {
  if (typeof option === 'string') {
    const found = bundledScenario(option);
    if (found !== undefined) return { bundled: found };
    if (/[:\n]/.test(option)) return { custom: option };
    try {
      resetScenario(option);
    } catch (e) {
      throw new RangeError(`scenario: ${(e as Error).message.replace(/^scenario: /, '')} (or a scenario's YAML text, or a scenario object)`, { cause: e });
    }
  }
  if (typeof option !== 'object' || option === null || Array.isArray(option)) {
    throw new RangeError(`scenario must be a bundled scenario's name, a scenario object or YAML text, got ${JSON.stringify(option)}`);
  }
  return { custom: option as Record<string, unknown> };
}

/** An address option: an absolute http(s) URL, or (in a page) a path on its own origin; without a trailing slash. */
function addressOption(name: string, value: unknown): string {
  if (typeof value !== 'string' || value === '') throw new RangeError(`${name} must be an http(s) URL or a path on the page's origin (/api), got ${JSON.stringify(value)}`);
  let url: URL;
  try {
    const origin = (globalThis as { location?: { origin?: string } }).location?.origin;
    if (value.startsWith('/') && origin === undefined) throw new TypeError('no page');
    url = new URL(value, value.startsWith('/') ? origin : undefined);
  } catch {
    throw new RangeError(
      `${name} must be an http(s) URL${value.startsWith('/') ? ' (a path such as /api needs a page whose origin it is on)' : ''}, got ${JSON.stringify(value.slice(0, 100))}`,
    );
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new RangeError(`${name} must be an http(s) URL, got ${JSON.stringify(value.slice(0, 100))}`);
  if (url.search !== '' || url.hash !== '') throw new RangeError(`${name} must have no query or fragment, got ${JSON.stringify(value.slice(0, 100))}`);
  return url.href.replace(/\/+$/, '');
}

/** The request path's input for an MSW request to `path` (below the base address). */
async function apiRequestOf(request: Request, path: string): Promise<ApiRequest> {
  const url = new URL(request.url);
  const headers: Record<string, string> = {};
  request.headers.forEach((value, name) => (headers[name] = value));
  let body: ApiRequest['body'] = null;
  if (request.method !== 'GET' && request.method !== 'HEAD' && request.body !== null) {
    const bytes = new Uint8Array(await request.arrayBuffer());
    body = bytes.length > BODY_LIMIT_BYTES ? 'too_large' : bytes.length === 0 ? null : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }
  return { method: request.method, path, query: url.search.slice(1), headers, body };
}

function textBody(text: string): StreamedBody {
  return {
    length: undefined,
    open: () => {
      throw new Error('a page has no streams: read text()');
    },
    text: () => text,
  };
}


export { bundledScenarioList };
// A host clock over a test's fake timers (`hostClock`), and the types of one.
export { hostClockOf, systemClock, type HostClock, type HostTimer, type TimerFunctions } from '../hostClock.js';
