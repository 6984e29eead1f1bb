/**
 * `createSimulator`: a simulator served by the calling process, as the package's programmatic API
 * gives it and the `sim` command starts it. It puts the parts together: the core (new, or restored from a state
 * file), the JSON handler and the server, the transcript, the state file's store, access, and the
 * control methods a test calls in-process. `src/index.ts` exports it with the rest of the API.
 */
import type { AddressInfo } from 'node:net';
import type { ClockMode } from './core/time/clock.js';
import { defaultCdnUrl } from './core/generations/mediaPaths.js';
import type { Scenario } from './core/scenario/scenario.js';
import { checkShard } from './core/accounts/shard.js';
import { Simulator } from './core/simulator/simulator.js';
import { createApi, type Api } from './http/jsonHandler.js';
import { createApp, type SimulatorApp } from './http/app.js';
import { controlTokenProblem, parseControlOrigins, type AccessPolicy } from './http/accessGuard.js';
import { hostInUrl, isHttpUrl, isLoopbackAddress, isWildcardAddress } from './hostNames.js';
import { JSON_MEDIA_TYPE } from './jsonType.js';
import { apiFirst, createAppServer, type AppServer } from './http/server.js';
import { logToStderr } from './host.js';
import { hostClockOption, systemClock, withNow, type HostClock } from './hostClock.js';
import { loadScenario, scenarioFile } from './scenarios/load.js';
import { resetScenarioLoader } from './scenarios/resetScenarios.js';
import { DEFAULT_RECORD_MAX_BYTES, checkRecordable, recordTo, type Recording } from './transcript/recording.js';
import { controlMethods, definedOnly, queryString, type ControlMethods, type SimClock } from './control-client/endpoints.js';
import { SimulatorControlError } from './control-client/client.js';
import type { ApiAnswer, Exchange } from './request-path/handleRequest.js';
import type { MediaFaultTaken } from './persistence/stateLines.js';
import type { StateHeader } from './persistence/header.js';
import { openState, type DurableState } from './persistence/restore.js';
import { compactedBody } from './persistence/compaction.js';
import type { StateStore } from './persistence/stateStore.js';

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
   * The host's clock: its `now()` (epoch milliseconds) is the wall clock realtime mode follows, and
   * every wait of the simulator runs on its timers: injected latency, network `hang_ms` and `slow`
   * bodies, waits for requests, the drain of `close()`, the state file's and the transcript's
   * timers. Default: `systemClock` (the process's monotonic clock; the global timers, read when
   * called). Under a test runner's fake timers, `hostClockOf(globalThis)` (vitest's
   * `vi.useFakeTimers()`) or `hostClockOf(FakeTimers.createClock())` (`@sinonjs/fake-timers`): every
   * wait then ends when the fake clock moves, and only then.
   */
  hostClock?: HostClock;
  /**
   * The wall clock that realtime mode follows, in epoch milliseconds, in place of `hostClock.now`.
   * Default: the host clock's. Pass `() => Date.now()` under a test runner's fake timers (vitest's
   * `vi.useFakeTimers()`, Jest's, `@sinonjs/fake-timers`): advancing the fake timers then moves the
   * simulator's time with the client's, so a client that polls every 2 s sees a generation resolve
   * as fast as the timers are advanced.
   */
  now?: () => number;
  /** The base address written into responses, an http(s) URL (else a RangeError). Default `http://localhost:PORT` once listening. */
  baseUrl?: string;
  /** The media address written into responses, an http(s) URL (else a RangeError). Default: the base URL plus `/cdn`. */
  cdnUrl?: string;
  /** Where the simulator's own errors are logged. Default: stderr. */
  log?: (line: string) => void;
  /**
   * Called after `POST /_sim/shutdown` has been answered and the server closed, with how many
   * requests in progress were answered while it stopped (as `close()` resolves).
   */
  onShutdown?: (stopped: Stopped) => void;
  /**
   * Writes a transcript of every request to this file (JSON Lines, one line per request as it is
   * handled), for `sim replay FILE`; `GET /_sim/transcript` streams it back. The
   * file is taken (created or emptied, and locked against other simulators) once `listen` has
   * bound its port, or at the first request recorded by an app that never listens. Throws at once
   * when another running simulator records to it or it cannot be written.
   */
  record?: string;
  /**
   * The transcript's size bound in bytes (default 1 GiB): when the next line would take the file
   * past it, recording stops (the simulator goes on answering) and `GET /_sim/health` says so.
   */
  recordMaxBytes?: number;
  /**
   * Keeps the simulator's state in this file (JSON Lines: a line per request, written before its
   * answer is sent), and restores it first when the file exists: every generation, image,
   * idempotency key, balance, bucket, queued fault, clock, journal entry and id, as they were.
   * Without `scenario`, `seed`, `clock` or `speed`, the file's are used; one given that differs
   * from the file's throws a `StateRefusedError`. The file is taken (locked, appended to) once
   * `listen` has bound its port, or at the first request of an app that never listens; another
   * running simulator holding it throws a `FileLockedError`. See docs/state.md.
   */
  state?: string;
  /**
   * Waits for injected latency (scenario `http.latency`, queued `latency_ms`) before an answer is
   * sent, in place of the host clock. Default: a timer on `hostClock`. Kept for the callers that
   * gave one before `hostClock`: give a `hostClock` instead, which every other wait follows too.
   * Once the simulator closes, answers stop waiting for it.
   */
  sleep?: (ms: number) => Promise<void>;
  /**
   * A folder of scenario files that `POST /_sim/reset {"scenario"}` (and `reset`) may switch to by
   * file name (`team.yaml`). Without it, a reset accepts only a bundled scenario's name or the name
   * of the scenario given here: never a path.
   */
  scenariosDir?: string;
  /**
   * Every `/_sim` request (but `GET /_sim/health` and the dashboard's files) must then carry
   * `Authorization: Bearer <controlToken>`: printable ASCII, at least 16 characters (a shorter one
   * throws a RangeError). Default: none (in-process, the control API is open).
   */
  controlToken?: string;
  /**
   * Host names the simulator answers beside `localhost`, `*.localhost`, 127.0.0.0/8, `[::1]` and the
   * hosts of `baseUrl` and `cdnUrl` (`.example.test` also accepts its subdomains). The Host check
   * (against DNS rebinding) runs while the app is not listening (supertest, mounted in another
   * server) or listens on a loopback address; listening elsewhere turns it off.
   */
  allowedHosts?: string[];
  /**
   * Origins of web pages that may call the control API (`/_sim`) with CORS, such as a frontend's
   * dev toolbar at `http://localhost:5173`: exact origins (scheme, host and port; another form
   * throws a RangeError). Their requests are answered with CORS headers naming the origin; the
   * control token is still needed when one is set. Every other origin is refused as before.
   */
  controlOrigins?: string[];
  /**
   * Which shard of N this simulator is, counted from 0 (`{ index: 2, count: 3 }`), when N
   * simulators behind a proxy that hashes API keys each own the accounts hashed to them
   * (docs/scaling.md). `GET /_sim/health` answers it; a state file records it, and one of another
   * shard or count is refused; a key that belongs to another shard is answered 421 `wrong_shard`.
   * (`sim --shard` also needs a control token; in-process, set `controlToken` when it listens
   * behind a proxy.) Default: the state file's, else none (a simulator running alone).
   */
  shard?: { index: number; count: number } | null;
  /**
   * How long `close()` lets requests in progress finish before it cuts their connections, in
   * milliseconds. Default 3,000.
   */
  drainGraceMs?: number;
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
  /**
   * The Express app, for supertest or for mounting in another server: made (and Express loaded)
   * when first read. A listening simulator answers its JSON API without it.
   */
  readonly app: SimulatorApp;
  /** The core, for direct inspection. */
  readonly core: Simulator;
  /** The base URL once listening (undefined before). */
  readonly url: string | undefined;
  /** The port once listening (the real one when 0 was asked for). */
  readonly port: number | undefined;
  /** With `state`: the requests restored from the state file (undefined: no state file, or a new one). */
  readonly stateRestored: number | undefined;
  /** Starts an HTTP server; resolves to its base URL. Port 0 picks a free port. */
  listen(port?: number, host?: string): Promise<string>;
  readonly clock: ControlMethods<false>['clock'] & {
    /** The clock (an account's, with `apiKey`): the same as `clock.get`. */
    state(apiKey?: string): SimClock;
  };
  /**
   * Stops the server gracefully: no new connections; every request already received gets its
   * answer (injected latency still being waited out is cut short), idle connections are closed;
   * a connection still open after `drainGraceMs` (3 s by default) is cut. Resolves once the server
   * is closed (`stopped` then says how many requests were answered meanwhile).
   */
  close(): Promise<void>;
  /** What the last stop did (`close()`, `POST /_sim/shutdown`); undefined until one has ended. */
  readonly stopped: Stopped | undefined;
}

/** What stopping a simulator did. */
export interface Stopped {
  /** Requests answered while the server stopped (in progress when it began, or arriving on a connection still open). */
  drained: number;
}

/** How long a closing server waits for requests in progress before it cuts their connections. */
export const DEFAULT_DRAIN_GRACE_MS = 3000;

export function createSimulator(options: CreateSimulatorOptions = {}): SimulatorHandle {
  const tokenProblem = options.controlToken === undefined ? undefined : controlTokenProblem(options.controlToken);
  if (tokenProblem !== undefined) throw new RangeError(`controlToken ${tokenProblem}`);
  const controlOrigins = parseControlOrigins(options.controlOrigins ?? [], 'controlOrigins');
  for (const field of ['baseUrl', 'cdnUrl'] as const) {
    const address = options[field];
    if (address !== undefined && !isHttpUrl(address)) throw new RangeError(`${field} must be an http(s) URL, got ${JSON.stringify(address)}`);
  }
  const hostClock = hostClockGiven(options);
  const log = options.log ?? logToStderr;
  const explicitCdn = options.cdnUrl ?? (options.baseUrl ? defaultCdnUrl(options.baseUrl) : undefined);
  const overrides = definedOnly({ seed: options.seed, clock: options.clock, speed: options.speed });
  // With a state file, restored now, before anything is answered; the file is taken once the port is bound.
  const { core, durable } = openCore(options, { explicitCdn, overrides, log, hostClock });
  let server: AppServer | undefined;
  let url: string | undefined;
  let port: number | undefined;
  const recording = options.record === undefined ? undefined : startRecording(options.record, options.recordMaxBytes, core, () => url ?? options.baseUrl ?? null, log, hostClock);
  let closing: Promise<void> | undefined;
  let stopped: Stopped | undefined;
  const close = (): Promise<void> => {
    if (closing) return closing;
    // Answers waiting for the state file's lines (a full disk) that cannot be written by now are never sent.
    durable?.store.stopWaiting();
    const endDrain = api.drain();
    const closed = server ? server.drain(options.drainGraceMs ?? DEFAULT_DRAIN_GRACE_MS) : Promise.resolve(0);
    server = undefined;
    closing = closed
      .then((drained) => {
        recording?.close();
        durable?.store.close();
        stopped = { drained };
      })
      .finally(() => {
        endDrain();
        closing = undefined;
      });
    return closing;
  };
  const access: AccessPolicy = {
    checkHost: true,
    allowedHosts: [...(options.allowedHosts ?? []), ...hostsOf(options.baseUrl, explicitCdn)],
    ownOrigins: options.baseUrl ? [options.baseUrl] : [],
    controlOrigins,
    controlToken: options.controlToken,
  };
  // Listening without a base or media URL given, the addresses in answers follow each request's Host.
  let followsHost = false;
  const api = createApi(core, {
    access,
    followsHost: () => followsHost,
    log,
    hostClock,
    sleep: options.sleep,
    onShutdown: () => void close().then(() => options.onShutdown?.(stopped as Stopped)),
    // Recording and state off: no hook at all on the request path.
    onExchange: exchangeHook(recording, durable?.store),
    ...(durable && { onMediaFault: (download: MediaFaultTaken) => durable.store.recordMediaFault(download) }),
    ...(recording && {
      transcript: () => recording.transcript(),
      recording: () => recording.status(),
    }),
    // GET /_sim/state: the state as a compacted file, whether or not it is kept in one.
    snapshot: durable ? () => durable.store.compacted() : () => compactedBody(core, overrides, core.clock.wallStartMs, 0),
    ...(durable && { stateStatus: () => durable.store.status(), whenWritten: () => durable.store.whenWritten() }),
  });
  // The Express app (for the files, and `sim.app`) is made, and Express loaded, on first use.
  let app: SimulatorApp | undefined;
  const appOf = (): SimulatorApp => (app ??= createApp(core, api, log));
  const serve = apiFirst(api.handle, appOf);

  const control = inProcessControl(api);

  const handle: SimulatorHandle = {
    get app() {
      return appOf();
    },
    core,
    get url() {
      return url;
    },
    get port() {
      return port;
    },
    get stopped() {
      return stopped;
    },
    stateRestored: durable?.restored,
    listen(requestedPort = 0, host = '127.0.0.1') {
      return new Promise((resolveUrl, reject) => {
        const listening = createAppServer(serve, api.requestId, hostClock);
        server = listening;
        listening.once('error', (err) => {
          if (server === listening) server = undefined;
          reject(err);
        });
        listening.listen(requestedPort, host, () => {
          const actual = (listening.address() as AddressInfo).port;
          const listeningUrl = options.baseUrl?.replace(/\/+$/, '') ?? defaultBaseUrl(host, actual);
          // The transcript is taken only now that the port is ours: a start that fails touches nothing.
          try {
            url = listeningUrl;
            if (!explicitCdn) core.configure({ cdnUrl: defaultCdnUrl(listeningUrl) });
            recording?.open();
            durable?.listening();
          } catch (e) {
            url = undefined;
            if (server === listening) server = undefined;
            listening.close();
            return reject(e instanceof Error ? e : new Error(String(e)));
          }
          port = actual;
          access.checkHost = isLoopbackAddress(host);
          access.ownOrigins = [listeningUrl];
          followsHost = !explicitCdn;
          resolveUrl(listeningUrl);
        });
      });
    },
    ...control,
    clock: { ...control.clock, state: (apiKey) => control.clock.get(apiKey) },
    close,
  };
  return handle;
}

/**
 * The core for `options`: its scenario, seed and clock are the ones asked for, and with a state
 * file, the file's for what was not asked for, restored from it (`durable`).
 */
function openCore(
  options: CreateSimulatorOptions,
  opening: { explicitCdn: string | undefined; overrides: StateHeader['overrides']; log: (line: string) => void; hostClock: HostClock },
): { core: Simulator; durable: DurableState | undefined } {
  const asked =
    options.scenario === undefined ? undefined : typeof options.scenario === 'object' ? options.scenario : loadScenario(options.scenario);
  const { hostClock } = opening;
  const wallClock = (): number => hostClock.now();
  // A reset names a scenario, never a file (src/scenarios/resetScenarios.ts).
  const resetScenarios = (scenario: Scenario) =>
    resetScenarioLoader({
      start: { scenario, file: typeof options.scenario === 'string' && options.scenario !== scenario.name ? scenarioFile(options.scenario) : undefined },
      scenariosDir: options.scenariosDir,
    });
  const newCore = (wall: () => number): Simulator => {
    const scenario = asked ?? loadScenario('default');
    return new Simulator({
      scenario,
      loadScenario: resetScenarios(scenario),
      seed: options.seed,
      clockMode: options.clock,
      speed: options.speed,
      wallClock: wall,
      cdnUrl: opening.explicitCdn ?? defaultCdnUrl('http://localhost'),
      shard: checkShard(options.shard),
    });
  };
  if (options.state === undefined) return { core: newCore(wallClock), durable: undefined };
  const durable = openState(options.state, {
    asked: {
      scenario: asked && { value: asked, name: typeof options.scenario === 'string' ? options.scenario : asked.name },
      seed: options.seed,
      clock: options.clock,
      speed: options.speed,
      shard: options.shard === undefined ? undefined : checkShard(options.shard),
    },
    overrides: opening.overrides,
    hostClock,
    cdnUrl: opening.explicitCdn,
    resetScenarios,
    newCore,
    log: opening.log,
  });
  return { core: durable.core, durable };
}

/** The control methods in-process: each the control request it names, through the API's request path, answered at once. */
function inProcessControl(api: Api): ControlMethods<false> {
  return controlMethods<false>((call) => {
    // A wait for requests may be held: its answer comes later (a promise); every other call answers at once.
    const answer = api.answerHeld({
      method: call.method,
      path: call.path,
      query: queryString(call.query),
      headers: call.body === undefined ? {} : { 'content-type': JSON_MEDIA_TYPE },
      body: call.body === undefined ? null : Buffer.from(JSON.stringify(call.body)),
    });
    const valueOf = (sent: ApiAnswer): unknown => {
      if (sent.status !== 200) throw new SimulatorControlError(sent.status, sent.body, `${call.method} ${call.path}`);
      if (call.text) return sent.stream ? sent.stream.text() : sent.body;
      return JSON.parse(sent.body);
    };
    return answer instanceof Promise ? answer.then(valueOf) : valueOf(answer);
  });
}

/** The one hook on the request path that feeds the transcript and the state file (undefined: neither is on). */
function exchangeHook(recording: Recording | undefined, state: StateStore | undefined): ((exchange: Exchange) => void) | undefined {
  if (recording && state) {
    return (exchange) => {
      if (!exchange.idOnly) recording.record(exchange);
      state.record(exchange);
    };
  }
  if (recording) return (exchange) => exchange.idOnly || recording.record(exchange);
  if (state) return (exchange) => state.record(exchange);
  return undefined;
}

/** The host clock of `options`: `hostClock` (checked), its `now` replaced by `now` when given; default `systemClock`. */
function hostClockGiven(options: CreateSimulatorOptions): HostClock {
  const clock = hostClockOption(options.hostClock, systemClock);
  return options.now === undefined ? clock : withNow(clock, options.now);
}

function startRecording(
  file: string,
  maxBytes: number | undefined,
  core: Simulator,
  baseUrl: () => string | null,
  warn: (line: string) => void,
  hostClock: HostClock,
): Recording {
  if (maxBytes !== undefined && !(Number.isSafeInteger(maxBytes) && maxBytes > 0)) {
    throw new RangeError(`recordMaxBytes must be a whole number of bytes above 0, got ${String(maxBytes)}`);
  }
  checkRecordable(file);
  return recordTo(file, core, baseUrl, { maxBytes: maxBytes ?? DEFAULT_RECORD_MAX_BYTES, warn, hostClock });
}

/** `http://localhost:PORT` for a wildcard or loopback host, else `http://HOST:PORT` (the addresses written into responses). */
export function defaultBaseUrl(host: string, port: number): string {
  return `http://${isWildcardAddress(host) || isLoopbackAddress(host) ? 'localhost' : hostInUrl(host)}:${port}`;
}

/** The host names of the given URLs (the addresses written into responses are always served). */
function hostsOf(...urls: (string | undefined)[]): string[] {
  return urls.flatMap((u) => {
    try {
      return u ? [new URL(u).host] : [];
    } catch {
      return [];
    }
  });
}
