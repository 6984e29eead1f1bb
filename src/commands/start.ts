/**
 * `sim [flags]`: starts the server. Each flag has an environment variable (so that `docker run -e`
 * configures it); the flag wins over the variable. The CLI owns the process, so it also sets the
 * heap policy (the programmatic API does not touch it) and stops on SIGTERM and SIGINT.
 */
import { Option, type Command } from 'commander';
import { statSync } from 'node:fs';
import { createSimulator, DEFAULT_DRAIN_GRACE_MS, type SimulatorHandle } from '../createSimulator.js';
import { ScenarioError } from '../scenarios/load.js';
import { FileLockedError } from '../fileLock.js';
import { systemClock } from '../hostClock.js';
import { hostInUrl } from '../hostNames.js';
import { defaultCdnUrl } from '../core/generations/mediaPaths.js';
import { TranscriptFileError } from '../transcript/file.js';
import { StateRefusedError } from '../persistence/open.js';
import { keepServingWhenOutputCloses } from './closedOutput.js';
import { controlAccess, openControlWarning, type ControlAccess } from './access.js';
import { applyHeapPolicy, DEFAULT_HEAP_GROWING_PERCENT } from './heapPolicy.js';
import { EXIT_USAGE, hostList, integer, originList, positiveNumber, shard, url } from './parsers.js';
import type { ShardSpec } from '../core/accounts/shard.js';

interface StartOptions {
  port: number;
  host: string;
  /** Undefined when not given (the default scenario, or a state file's). */
  scenario?: string;
  seed?: number;
  clock?: 'manual' | 'realtime';
  speed?: number;
  baseUrl?: string;
  cdnUrl?: string;
  record?: string;
  recordMaxBytes?: number;
  state?: string;
  heapGrowingPercent: number;
  controlToken?: string;
  allowedHosts?: string[];
  controlOrigin?: string[];
  scenariosDir?: string;
  shard?: ShardSpec;
}

/**
 * A stopping server exits by then, drained or not: the drain's grace, and a second to close after
 * it. The docs promise an exit within 4.5 s of the signal: the half second left is for a loaded
 * machine's late timer and the exit itself.
 */
const STOP_DEADLINE_MS = DEFAULT_DRAIN_GRACE_MS + 1000;

/** The server's flags on the program itself, and starting the server as its action. */
export function addStartOptions(program: Command): void {
  program
    .addOption(new Option('--port <n>', 'listen port; 0 picks a free one').env('PORT').default(8080).argParser(integer('--port', 0, 65535)))
    .addOption(new Option('--host <addr>', 'listen address').env('SIM_HOST').default('127.0.0.1'))
    .addOption(new Option('--scenario <name|path>', 'a bundled scenario or a YAML file').env('SIM_SCENARIO').default('default'))
    .addOption(new Option('--seed <n>', "overrides the scenario's seed").env('SIM_SEED').argParser(integer('--seed', -(2 ** 31), 2 ** 31 - 1)))
    .addOption(new Option('--clock <mode>', "manual or realtime (default: the scenario's)").env('SIM_CLOCK').choices(['manual', 'realtime']))
    .addOption(new Option('--speed <x>', "realtime multiplier (default: the scenario's)").env('SIM_SPEED').argParser(positiveNumber))
    .addOption(new Option('--base-url <url>', 'the base address written into responses').env('SIM_BASE_URL').argParser(url))
    .addOption(new Option('--cdn-url <url>', 'the media address written into responses (default: base URL + /cdn)').env('SIM_CDN_URL').argParser(url))
    .addOption(new Option('--record <file>', 'write a transcript of every request to FILE, for sim replay').env('SIM_RECORD'))
    .addOption(new Option('--state <file>', 'keep the state in FILE and restore it from there at start (a restart clients do not notice)').env('SIM_STATE'))
    .addOption(
      new Option('--control-token <token>', 'the bearer token /_sim needs; none: no token (default: none on a loopback address, else one generated and printed)')
        .env('SIM_CONTROL_TOKEN'),
    )
    .addOption(new Option('--allowed-hosts <h1,h2>', 'host names served beside localhost (a guard against DNS rebinding)').env('SIM_ALLOWED_HOSTS').argParser(hostList))
    .addOption(
      new Option('--control-origin <o1,o2>', 'origins of web pages that may call /_sim with CORS (a dev toolbar at http://localhost:5173); the token is still needed')
        .env('SIM_CONTROL_ORIGINS')
        .argParser(originList),
    )
    .addOption(new Option('--scenarios-dir <dir>', 'a folder of scenario files a reset may name by file name').env('SIM_SCENARIOS_DIR'))
    .addOption(
      new Option(
        '--shard <I/N|auto/N>',
        "this simulator is shard I of N behind a proxy that hashes API keys (auto: I from the host name's ordinal, sim-2 is 2); needs --control-token",
      )
        .env('SIM_SHARD')
        .argParser(shard),
    )
    .addOption(
      new Option('--record-max-bytes <n>', "the transcript's size bound; recording stops when the next line would pass it (default 1 GiB)")
        .env('SIM_RECORD_MAX_BYTES')
        .argParser(integer('--record-max-bytes', 1, Number.MAX_SAFE_INTEGER)),
    )
    .addOption(
      new Option('--heap-growing-percent <n>', "how far V8's heap may grow past what is live before a full collection; 0: V8's own policy (larger)")
        .env('SIM_HEAP_GROWING_PERCENT')
        .default(DEFAULT_HEAP_GROWING_PERCENT)
        .argParser(integer('--heap-growing-percent', 0, 1000)),
    )
    .action((opts: StartOptions) => {
      refuseSpeedOnManualClock(program, opts);
      // The default scenario is not asked for: a state file's own is used instead.
      const scenarioAsked = program.getOptionValueSource('scenario') !== 'default';
      start(
        { ...opts, scenario: scenarioAsked ? opts.scenario : undefined },
        program.getOptionValueSource('heapGrowingPercent') === 'default',
        program.getOptionValueSource('controlToken') === 'env',
      );
    });
}

/**
 * `--clock manual` with `--speed`: the speed of a clock that never runs by itself. Refused as a
 * usage error (exit 2), naming each setting as it was given (flag or environment variable).
 */
function refuseSpeedOnManualClock(program: Command, opts: StartOptions): void {
  if (opts.clock !== 'manual' || opts.speed === undefined) return;
  const given = (name: string, flag: string, env: string) => (program.getOptionValueSource(name) === 'env' ? env : flag);
  const clock = given('clock', '--clock manual', 'SIM_CLOCK=manual');
  const speed = given('speed', `--speed ${opts.speed}`, `SIM_SPEED=${opts.speed}`);
  program.error(
    `error: ${clock} and ${speed} conflict: the speed applies to the realtime clock, and the manual clock moves only through ` +
      'POST /_sim/clock/advance. Drop the speed, or use --clock realtime.',
    { exitCode: EXIT_USAGE, code: 'sim.clockConflict' },
  );
}

function start(opts: StartOptions, heapPolicyFromDefault: boolean, tokenFromEnv: boolean): void {
  keepServingWhenOutputCloses();
  applyHeapPolicy(opts.heapGrowingPercent, heapPolicyFromDefault);
  let access: ControlAccess;
  try {
    access = controlAccess(opts, tokenFromEnv);
    if (opts.shard !== undefined) requireShardToken(access);
    if (opts.scenariosDir !== undefined && !isDirectory(opts.scenariosDir)) {
      throw new Error(`--scenarios-dir ${opts.scenariosDir}: expected a directory of scenario files, but there is none at this path.`);
    }
  } catch (e) {
    process.stderr.write(`sim: ${(e as Error).message}\n`);
    process.exit(EXIT_USAGE);
  }
  let sim: SimulatorHandle;
  try {
    sim = createSimulator({
      scenario: opts.scenario,
      seed: opts.seed,
      clock: opts.clock,
      speed: opts.speed,
      baseUrl: opts.baseUrl,
      cdnUrl: opts.cdnUrl,
      record: opts.record,
      recordMaxBytes: opts.recordMaxBytes,
      state: opts.state,
      controlToken: access.token,
      allowedHosts: opts.allowedHosts,
      controlOrigins: opts.controlOrigin,
      scenariosDir: opts.scenariosDir,
      shard: opts.shard,
      // POST /_sim/shutdown: the server has drained and closed; the process exits as on SIGTERM.
      onShutdown: (stopped) => exitStopped('POST /_sim/shutdown', stopped.drained),
    });
  } catch (e) {
    exitRefused(e, opts);
    throw e;
  }
  sim.listen(opts.port, opts.host).then(
    () => {
      if (access.open) process.stderr.write(`sim: warning: ${openControlWarning(`${hostInUrl(opts.host)}:${sim.port}`)}\n`);
      process.stdout.write(startupLines(sim, opts.host, access) + addressesLine(opts) + stateLine(sim, opts.state) + shardLine(sim));
    },
    (err: NodeJS.ErrnoException) => {
      // The transcript and the state file are taken once the port is bound: they can still be refused then.
      exitRefused(err, opts);
      process.stderr.write(`sim: cannot listen on ${hostInUrl(opts.host)}:${opts.port}: ${listenProblem(err)}\n`);
      process.exit(1);
    },
  );
  // Drains (every request already received gets its answer), says so in one line, then exits 0;
  // whatever still holds the process after STOP_DEADLINE_MS does not keep it from exiting. A second
  // signal is Node's own: the process ends at once.
  const stop = (signal: NodeJS.Signals): void => {
    void sim.close().then(() => exitStopped(signal, sim.stopped?.drained ?? 0));
    // A process-level deadline: on the host's own clock.
    systemClock
      .setTimeout(() => {
        process.stderr.write(`sim: stopped (${signal}) before the drain ended: requests still in progress after ${STOP_DEADLINE_MS / 1000} s were cut\n`);
        process.exit(0);
      }, STOP_DEADLINE_MS)
      .unref?.();
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

/**
 * A shard needs a control token it was given: behind a proxy every request reaches it from the
 * proxy's address (loopback, when they share a machine), and the proxy passes the client's Host,
 * so neither the loopback default (no token) nor the Host check keeps anyone who can reach the
 * proxy from resetting or stopping it. One token generated per shard would differ from shard to
 * shard, and the clients that reach every shard (the typed client, the dashboard) send one.
 */
function requireShardToken(access: ControlAccess): void {
  if (access.token !== undefined && !access.generated) return;
  throw new Error(
    `--shard needs a control token${access.open ? ' (--control-token none is refused for a shard)' : ''}: behind a proxy every request reaches a shard from the proxy, ` +
      "so without one anyone who can reach the proxy could reset or stop it. Give every shard the same token with SIM_CONTROL_TOKEN or --control-token " +
      '(make one with `openssl rand -hex 16`); the typed client, the dashboard and `sim report` send it.',
  );
}

/** The one line a stop prints (to stderr, beside the other `sim:` lines), then exit 0. */
function exitStopped(how: string, drained: number): never {
  process.stderr.write(`sim: stopped (${how}): drained ${drained} request${drained === 1 ? '' : 's'} in progress\n`);
  process.exit(0);
}

/** Why a port could not be listened on, with what to do about it. */
function listenProblem(err: NodeJS.ErrnoException): string {
  if (err.code === 'EADDRINUSE') return 'the port is in use (EADDRINUSE); stop what listens there, choose another --port, or --port 0 for a free one';
  if (err.code === 'EACCES') return 'not allowed to listen there (EACCES); a port below 1024 needs privileges: choose another --port, or --port 0 for a free one';
  if (err.code === 'EADDRNOTAVAIL') return `no interface of this machine has the address (EADDRNOTAVAIL); check --host`;
  return err.code ?? err.message;
}

/**
 * Exits when `e` is a refusal of what the command line asked for: a file another simulator holds
 * (exit 1), a scenario, transcript or state file that cannot be used (exit 2). Returns otherwise.
 */
function exitRefused(e: unknown, opts: StartOptions): void {
  if (e instanceof FileLockedError) {
    process.stderr.write(`sim: ${lockedFileMessage(e, opts)}\n`);
    process.exit(1);
  }
  if (e instanceof ScenarioError || e instanceof TranscriptFileError || e instanceof StateRefusedError) {
    process.stderr.write(`sim: ${e.message}\n`);
    process.exit(EXIT_USAGE);
  }
}

/** A file another simulator holds: the transcript's or the state's. */
function lockedFileMessage(e: FileLockedError, opts: StartOptions): string {
  return `${e.file === opts.state ? 'cannot keep the state' : 'cannot record'}: ${e.message}`;
}

/**
 * What the server prints once listening. The first line is for scripts to parse, so its shape is
 * fixed: `sim listening on http://HOST:PORT (scenario NAME, seed N, clock MODE)`. The second
 * names the dashboard at the base URL the simulator writes into responses. A token generated at
 * start is in the dashboard's address (`#token=`, which the page takes and hides) and on a third
 * line, `control token: TOKEN (...)`.
 */
function startupLines(sim: SimulatorHandle, host: string, access: ControlAccess): string {
  const { scenario, seed, clock } = sim.core;
  const generated = access.generated ? access.token : undefined;
  return (
    `sim listening on http://${hostInUrl(host)}:${sim.port} (scenario ${scenario.name}, seed ${seed}, clock ${clock.mode})\n` +
    `dashboard: ${sim.url}/_sim/${generated ? `#token=${generated}` : ''}\n` +
    (generated
      ? `control token: ${generated} (generated at start: /_sim requests need "Authorization: Bearer ${generated}"; choose one with --control-token)\n`
      : '')
  );
}

/**
 * Where the addresses written into answers point: given (`--base-url`, `--cdn-url`), or following
 * the Host each request used (a client behind a remapped port gets URLs it can fetch).
 */
function addressesLine(opts: StartOptions): string {
  if (opts.cdnUrl !== undefined) return `media URLs: ${opts.cdnUrl} (--cdn-url)\n`;
  if (opts.baseUrl !== undefined) return `media URLs: ${defaultCdnUrl(opts.baseUrl)} (--base-url)\n`;
  return 'media URLs: on the Host each request used (http://HOST/cdn); --base-url fixes them\n';
}

/** A shard: `shard: 2/3 (it answers the accounts a proxy hashes to it)`. */
function shardLine(sim: SimulatorHandle): string {
  const { shard } = sim.core;
  return shard === null ? '' : `shard: ${shard.index}/${shard.count} (it answers the accounts a proxy hashes to it)\n`;
}

/** With `--state`: `state: FILE (N requests restored)`, or `(new)`. */
function stateLine(sim: SimulatorHandle, file: string | undefined): string {
  if (file === undefined) return '';
  const restored = sim.stateRestored;
  return `state: ${file} (${restored === undefined ? 'new' : `${restored} request${restored === 1 ? '' : 's'} restored`})\n`;
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}
