#!/usr/bin/env node
/**
 * The `sim` command: maps flags (and their environment variables) to options, and sets the
 * process's heap policy when asked (it owns the process; the programmatic API does not touch it).
 *
 *   sim [--port N] [--host ADDR] [--scenario NAME|PATH] [--seed N] [--clock manual|realtime]
 *       [--speed X] [--base-url URL] [--cdn-url URL] [--heap-growing-percent N]
 *   sim scenarios          list the bundled scenarios
 *   sim validate FILE      check a scenario file (exit 0 valid, 2 otherwise)
 *   sim openapi            print the contract (openapi.yaml)
 *   sim report --url URL --api-key KEY
 *                          the client report of a key (exit 1 on an error finding, 2 unreachable)
 */
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { readFileSync } from 'node:fs';
import { setFlagsFromString } from 'node:v8';
import { registerReportCommand } from './commands/report.js';
import { createSimulator, type SimulatorHandle } from './index.js';
import { openapiPath } from './openapi.js';
import { ScenarioError, listBundledScenarios, validateScenarioFile } from './scenarios/load.js';

const EXIT_USAGE = 2;

function integer(name: string, min: number, max: number) {
  return (value: string): number => {
    if (!/^-?\d+$/.test(value.trim())) throw new InvalidArgumentError(`${name} must be an integer.`);
    const n = Number(value);
    if (n < min || n > max) throw new InvalidArgumentError(`${name} must be between ${min} and ${max}.`);
    return n;
  };
}

function positiveNumber(value: string): number {
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n) || n <= 0) throw new InvalidArgumentError('must be a number above 0.');
  return n;
}

function url(value: string): string {
  try {
    const parsed = new URL(value);
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new Error('protocol');
  } catch {
    throw new InvalidArgumentError(`must be an http(s) URL, got '${value}'.`);
  }
  return value.replace(/\/+$/, '');
}

interface StartOptions {
  port: number;
  host: string;
  scenario: string;
  seed?: number;
  clock?: 'manual' | 'realtime';
  speed?: number;
  baseUrl?: string;
  cdnUrl?: string;
  heapGrowingPercent: number;
}

/**
 * V8's heap policy: how far the heap may grow past what is live before a full collection. V8's own
 * adaptive policy (0) lets it grow to up to four times what is live. Measured with 100,000 stored
 * generations (about 0.9 KB each of live heap; README, "Performance"): V8's policy holds 1.60-1.65 KB
 * of resident memory per generation, 30% holds 1.14-1.21 KB and 10% 1.30-1.34 KB, and creates and
 * polls ran as fast with 30% as with V8's policy (10% cost about 5% of creates and more of polls).
 * So the simulator starts with 30%. A process started with node's own `--heap-growing-percent`
 * (on its command line or in NODE_OPTIONS) keeps that unless the flag or its variable is given.
 */
const DEFAULT_HEAP_GROWING_PERCENT = 30;

function applyHeapPolicy(percent: number, fromDefault: boolean): void {
  if (fromDefault && nodeSetsHeapPolicy()) return;
  // 0 is V8's own "not set": its default, adaptive policy.
  setFlagsFromString(`--heap-growing-percent=${percent}`);
}

function nodeSetsHeapPolicy(): boolean {
  return [...process.execArgv, process.env.NODE_OPTIONS ?? ''].some((arg) => /--heap[-_]growing[-_]percent/.test(arg));
}

function start(opts: StartOptions, heapPolicyFromDefault: boolean): void {
  applyHeapPolicy(opts.heapGrowingPercent, heapPolicyFromDefault);
  let sim: SimulatorHandle;
  try {
    sim = createSimulator({
      scenario: opts.scenario,
      seed: opts.seed,
      clock: opts.clock,
      speed: opts.speed,
      baseUrl: opts.baseUrl,
      cdnUrl: opts.cdnUrl,
    });
  } catch (e) {
    if (e instanceof ScenarioError) {
      process.stderr.write(`sim: ${e.message}\n`);
      process.exit(EXIT_USAGE);
    }
    throw e;
  }
  sim.listen(opts.port, opts.host).then(
    () => {
      const shownHost = opts.host.includes(':') ? `[${opts.host}]` : opts.host;
      const { scenario, seed, clock } = sim.core;
      process.stdout.write(
        `sim listening on http://${shownHost}:${sim.port} (scenario ${scenario.name}, seed ${seed}, clock ${clock.mode})\n`,
      );
    },
    (err: NodeJS.ErrnoException) => {
      process.stderr.write(`sim: cannot listen on ${opts.host}:${opts.port}: ${err.code ?? err.message}\n`);
      process.exit(1);
    },
  );
  const stop = (): void => {
    void sim.close().then(() => process.exit(0));
    setTimeout(() => process.exit(0), 500).unref();
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

export function buildProgram(): Command {
  const program = new Command('sim')
    .description('Simulator of the video and keyframe generation service.')
    .version(JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')).version as string)
    .exitOverride()
    .showHelpAfterError('(run sim --help for every flag)');

  program
    .addOption(new Option('--port <n>', 'listen port; 0 picks a free one').env('PORT').default(8080).argParser(integer('--port', 0, 65535)))
    .addOption(new Option('--host <addr>', 'listen address').env('SIM_HOST').default('127.0.0.1'))
    .addOption(new Option('--scenario <name|path>', 'a bundled scenario or a YAML file').env('SIM_SCENARIO').default('default'))
    .addOption(new Option('--seed <n>', "overrides the scenario's seed").env('SIM_SEED').argParser(integer('--seed', -(2 ** 31), 2 ** 31 - 1)))
    .addOption(new Option('--clock <mode>', "manual or realtime (default: the scenario's)").env('SIM_CLOCK').choices(['manual', 'realtime']))
    .addOption(new Option('--speed <x>', "realtime multiplier (default: the scenario's)").env('SIM_SPEED').argParser(positiveNumber))
    .addOption(new Option('--base-url <url>', 'the base address written into responses').env('SIM_BASE_URL').argParser(url))
    .addOption(new Option('--cdn-url <url>', 'the media address written into responses (default: base URL + /cdn)').env('SIM_CDN_URL').argParser(url))
    .addOption(
      new Option('--heap-growing-percent <n>', "how far V8's heap may grow past what is live before a full collection; 0: V8's own policy (larger)")
        .env('SIM_HEAP_GROWING_PERCENT')
        .default(DEFAULT_HEAP_GROWING_PERCENT)
        .argParser(integer('--heap-growing-percent', 0, 1000)),
    )
    .action((opts: StartOptions) => start(opts, program.getOptionValueSource('heapGrowingPercent') === 'default'));

  program
    .command('scenarios')
    .description('list the bundled scenarios with their purpose')
    .action(() => {
      const all = listBundledScenarios();
      const width = Math.max(...all.map((s) => s.name.length));
      for (const s of all) process.stdout.write(`${s.name.padEnd(width)}  ${s.purpose}\n`);
    });

  program
    .command('validate')
    .description('check a scenario file; exit 0 when valid, 2 otherwise')
    .argument('<file>', 'the YAML file')
    .action((file: string) => {
      const problems = validateScenarioFile(file);
      if (problems.length === 0) {
        process.stdout.write(`${file}: valid\n`);
        return;
      }
      process.stderr.write(`${file}: ${problems.length} problem${problems.length === 1 ? '' : 's'}\n`);
      for (const p of problems) process.stderr.write(`  - ${p}\n`);
      process.exitCode = EXIT_USAGE;
    });

  program
    .command('openapi')
    .description('print the contract (openapi.yaml)')
    .action(() => {
      process.stdout.write(readFileSync(openapiPath, 'utf8'));
    });

  registerReportCommand(program);

  return program;
}

try {
  buildProgram().parse(process.argv);
} catch (e) {
  if (e instanceof CommanderError) {
    // Help and version exit 0; a bad flag exits 2 (commander has already printed the message).
    process.exit(e.exitCode === 0 ? 0 : EXIT_USAGE);
  }
  throw e;
}
