/**
 * The programmatic API, for test runners that run the simulator in-process:
 *
 * ```ts
 * import { createSimulator } from 'video-service-sim';
 * const sim = createSimulator({ scenario: 'fast', clock: 'manual' });
 * const url = await sim.listen(0);           // or: supertest(sim.app)
 * // ... create a video with fetch(`${url}/v1/videos`, ...)
 * sim.clock.advance(10);                     // every due transition is applied
 * await sim.close();
 * ```
 */
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import type { ClockMode } from './core/clock.js';
import type { Scenario } from './core/scenario.js';
import { Simulator } from './core/simulator.js';
import { createApp, type SimulatorApp } from './http/app.js';
import { createAppServer } from './http/server.js';
import { loadScenario } from './scenarios/load.js';
import { recordTo } from './transcript/recording.js';
import { controlMethods, queryString, type ControlMethods, type SimClock } from './control/api.js';
import { SimulatorControlError } from './control/client.js';

export { openapiPath } from './openapi.js';
export { ERROR_CATALOGUE, ERROR_CODES, type ErrorBody } from './core/errors.js';
export type { ApiError, CancelResponse, ErrorCode, Image, Video, VideoList, VideoStatus } from './api-types.js';
export { loadScenario, listBundledScenarios, validateScenarioFile, ScenarioError } from './scenarios/load.js';
export type { Scenario } from './core/scenario.js';
export type { VideoView } from './core/generation.js';
export type { ClientReport, ClientFinding, FindingCode } from './core/clientReport.js';
export { Simulator } from './core/simulator.js';
export { SimulatorControl, SimulatorControlError, type SimulatorControlOptions } from './control/client.js';
export type {
  ControlMethods,
  GenerationListOptions,
  ResetOptions,
  SimClientReport,
  SimClock,
  SimFaultList,
  SimFaultQueued,
  SimFaultRequest,
  SimGeneration,
  SimGenerationList,
  SimHealth,
  SimulatorControlApi,
} from './control/api.js';

export interface CreateSimulatorOptions {
  /** A bundled scenario's name, a YAML file's path, or a resolved scenario object. Default `default`. */
  scenario?: string | Scenario;
  /** Overrides the scenario's seed (kept across resets unless a reset names a seed). */
  seed?: number;
  /** `manual`: time moves only through `clock.advance`. Default: the scenario's, else realtime. */
  clock?: ClockMode;
  /** Realtime multiplier. Default: the scenario's, else 1. */
  speed?: number;
  /**
   * The wall clock that realtime mode follows, in epoch milliseconds. Default: the process's clock.
   * Pass `() => Date.now()` under a test runner's fake timers (vitest's `vi.useFakeTimers()`,
   * Jest's, `@sinonjs/fake-timers`): advancing the fake timers then moves the simulator's time
   * with the client's, so a client that polls every 2 s sees a generation resolve as fast as the
   * timers are advanced.
   */
  now?: () => number;
  /** The base address written into responses. Default `http://localhost:PORT` once listening. */
  baseUrl?: string;
  /** The media address written into responses. Default: the base URL plus `/cdn`. */
  cdnUrl?: string;
  /** Where the simulator's own errors are logged. Default: stderr. */
  log?: (line: string) => void;
  /** Called after `POST /_sim/shutdown` has been answered and the server closed. */
  onShutdown?: () => void;
  /**
   * Writes a transcript of every request to this file (JSON Lines, one line per request as it is
   * handled), for `sim replay FILE`; `GET /_sim/transcript` answers its most recent lines.
   */
  record?: string;
  /**
   * Waits for injected latency (scenario `http.latency`, queued `latency_ms`) before an answer is
   * sent. Default: `setTimeout`. Under fake timers that also fake `setTimeout`, pass one the test
   * advances, or a real one.
   */
  sleep?: (ms: number) => Promise<void>;
}

/**
 * An in-process simulator. Beside the app and the server, it has the control methods of
 * `SimulatorControl` (`health`, `clock`, `reset`, `faults`, `generations`, `report`, `transcript`),
 * with the same names, arguments and answers, but synchronous: each is the control request it names,
 * answered through the same request path as over HTTP (checked and recorded alike; no token needed)
 * and returned at once. A refused call throws a `SimulatorControlError`. So a suite that awaits
 * every call (`SimulatorControlApi`) runs against either, chosen by configuration.
 */
export interface SimulatorHandle extends Omit<ControlMethods<false>, 'clock'> {
  /** The Express app, for supertest or for mounting in another server. */
  readonly app: SimulatorApp;
  /** The core, for direct inspection. */
  readonly core: Simulator;
  /** The base URL once listening (undefined before). */
  readonly url: string | undefined;
  /** The port once listening (the real one when 0 was asked for). */
  readonly port: number | undefined;
  /** Starts an HTTP server; resolves to its base URL. Port 0 picks a free port. */
  listen(port?: number, host?: string): Promise<string>;
  readonly clock: ControlMethods<false>['clock'] & {
    /** The clock (an account's, with `apiKey`): the same as `clock.get`. */
    state(apiKey?: string): SimClock;
  };
  /** Stops the server, closing open connections. */
  close(): Promise<void>;
}

export function createSimulator(options: CreateSimulatorOptions = {}): SimulatorHandle {
  const scenario =
    typeof options.scenario === 'object' ? options.scenario : loadScenario(options.scenario ?? 'default');
  const explicitCdn = options.cdnUrl ?? (options.baseUrl ? `${options.baseUrl.replace(/\/+$/, '')}/cdn` : undefined);
  const core = new Simulator({
    scenario,
    loadScenario: (name) => loadScenario(name),
    seed: options.seed,
    clockMode: options.clock,
    speed: options.speed,
    wallClock: options.now ?? (() => performance.timeOrigin + performance.now()),
    cdnUrl: explicitCdn ?? 'http://localhost/cdn',
  });
  let server: Server | undefined;
  let url: string | undefined;
  let port: number | undefined;
  const recording = options.record === undefined ? undefined : recordTo(options.record, core, () => url ?? options.baseUrl ?? null);
  const close = (): Promise<void> =>
    new Promise<void>((resolveClose) => {
      if (!server) return resolveClose();
      server.close(() => resolveClose());
      server.closeAllConnections();
      server = undefined;
    }).then(() => recording?.close());
  const app = createApp(core, {
    log: options.log,
    sleep: options.sleep,
    onShutdown: () => void close().then(() => options.onShutdown?.()),
    // Recording off: no hook at all on the request path.
    ...(recording && {
      onExchange: (exchange) => recording.recorder.record(exchange),
      transcript: () => recording.recorder.text(),
    }),
  });

  // The control methods: each the control request it names, through the app's request path.
  const control = controlMethods<false>((call) => {
    const answer = app.answer({
      method: call.method,
      path: call.path,
      query: queryString(call.query),
      headers: call.body === undefined ? {} : { 'content-type': 'application/json' },
      body: call.body === undefined ? null : Buffer.from(JSON.stringify(call.body)),
    });
    if (answer.status !== 200) throw new SimulatorControlError(answer.status, answer.body, `${call.method} ${call.path}`);
    return call.text ? answer.body : JSON.parse(answer.body);
  });

  const handle: SimulatorHandle = {
    app,
    core,
    get url() {
      return url;
    },
    get port() {
      return port;
    },
    listen(requestedPort = 0, host = '127.0.0.1') {
      return new Promise((resolveUrl, reject) => {
        server = createAppServer(handle.app, () => core.nextRequestId());
        server.once('error', reject);
        server.listen(requestedPort, host, () => {
          const actual = (server?.address() as AddressInfo).port;
          port = actual;
          url = options.baseUrl?.replace(/\/+$/, '') ?? defaultBaseUrl(host, actual);
          if (!explicitCdn) core.cdnUrl = `${url}/cdn`;
          recording?.recorder.start();
          resolveUrl(url);
        });
      });
    },
    ...control,
    clock: { ...control.clock, state: (apiKey) => control.clock.get(apiKey) },
    close,
  };
  return handle;
}

/** `http://localhost:PORT` for a wildcard or loopback host, else `http://HOST:PORT` (the addresses written into responses). */
export function defaultBaseUrl(host: string, port: number): string {
  const local = ['0.0.0.0', '::', '127.0.0.1', '::1', 'localhost', ''].includes(host) || host.startsWith('127.');
  const shown = local ? 'localhost' : host.includes(':') ? `[${host}]` : host;
  return `http://${shown}:${port}`;
}
