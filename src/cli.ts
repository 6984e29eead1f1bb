#!/usr/bin/env node
/**
 * The `sim` command (also installed as `video-service-sim`):
 *
 *   sim [--port N] [--host ADDR] [--scenario NAME|PATH] [--seed N] [--clock manual|realtime]
 *       [--speed X] [--base-url URL] [--cdn-url URL] [--record FILE] [--heap-growing-percent N]
 *       [--control-token TOKEN|none] [--allowed-hosts H1,H2] [--scenarios-dir DIR]
 *   sim scenarios          list the bundled scenarios
 *   sim validate FILE      check a scenario file (exit 0 valid, 2 otherwise)
 *   sim openapi            print the contract (openapi.yaml)
 *   sim replay FILE        replay a transcript and compare every answer (exit 0 identical, 1 not)
 *                          (--target URL [--control-token TOKEN]: against a running simulator)
 *   sim drift --target URL --api-key KEY
 *                          put the simulator's assumptions to the real service (exit 1 on a contradiction)
 *   sim report --url URL --api-key KEY [--control-token TOKEN]
 *                          the client report of a key (exit 1 on an error finding, 2 unreachable)
 *   sim state compact FILE rewrite a state file as its header and a snapshot (exit 1 held, 2 unreadable)
 *   sim deploy nginx --shards URL,URL,... [--listen PORT]
 *                          print the nginx.conf that puts shards behind one address (docs/scaling.md)
 *   sim help [COMMAND]     print the help of sim or of one command
 *
 * Each command lives in its own module under commands/ and is registered here with one line.
 * Exit status: 0 done (or the reader of the output went away: `sim openapi | head`), 1 a runtime
 * failure (the port is taken), 2 a usage error.
 */
import { Command, CommanderError } from 'commander';
import { exitQuietlyWhenOutputCloses } from './commands/closedOutput.js';
import { addHelpCommand, failUnknownCommand } from './commands/help.js';
import { addOpenapiCommand } from './commands/openapi.js';
import { EXIT_USAGE } from './commands/parsers.js';
import { addScenariosCommand } from './commands/scenarios.js';
import { addStartOptions } from './commands/start.js';
import { addValidateCommand } from './commands/validate.js';
import { registerDeployCommand } from './commands/deploy.js';
import { registerDriftCommand } from './commands/drift.js';
import { registerReplayCommand } from './commands/replay.js';
import { registerReportCommand } from './commands/report.js';
import { registerStateCommand } from './commands/state.js';
import { SIMULATOR_VERSION } from './version.js';

export function buildProgram(): Command {
  const program = new Command('sim')
    .description('Simulator of the video and keyframe generation service. Without a command: start the server.')
    .version(SIMULATOR_VERSION)
    .exitOverride()
    .showHelpAfterError('(run sim --help for every flag)');

  addStartOptions(program);
  addScenariosCommand(program);
  addValidateCommand(program);
  addOpenapiCommand(program);
  registerReplayCommand(program);
  registerDriftCommand(program);
  registerReportCommand(program);
  registerStateCommand(program);
  registerDeployCommand(program);
  addHelpCommand(program);

  refuseUnknownCommands(program);
  return program;
}

/**
 * `sim valdate x` names the unknown command (and the one it was likely meant to be) instead of
 * "too many arguments", which is what a root that takes no arguments would say.
 */
function refuseUnknownCommands(program: Command): void {
  program.allowExcessArguments().hook('preAction', (_root, actionCommand) => {
    if (actionCommand === program && program.args.length > 0) failUnknownCommand(program, program.args[0]!);
  });
}

/**
 * `--sceanrio=flaky`: commander names an unknown option with its value attached and then finds
 * nothing similar to suggest. Without the value (`--sceanrio`) it says "Did you mean --scenario?",
 * as it does for `--sceanrio flaky`. Known options keep their `=value`.
 */
function detachValuesOfUnknownOptions(program: Command, argv: readonly string[]): string[] {
  const known = new Set(['--help', '--version']);
  for (const command of [program, ...program.commands]) for (const option of command.options) if (option.long) known.add(option.long);
  const end = argv.indexOf('--');
  return argv.map((arg, i) => {
    const m = /^(--[^=]+)=/.exec(arg);
    return m && !known.has(m[1]!) && (end < 0 || i < end) ? m[1]! : arg;
  });
}

exitQuietlyWhenOutputCloses();
try {
  const program = buildProgram();
  await program.parseAsync(detachValuesOfUnknownOptions(program, process.argv));
} catch (e) {
  if (e instanceof CommanderError) {
    // Help and version exit 0; a usage error exits 2 (commander has already printed the message).
    process.exit(e.exitCode === 0 ? 0 : EXIT_USAGE);
  }
  throw e;
}
