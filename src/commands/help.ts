/**
 * `sim help [command]`: the help of sim, or of one command (exit 0); an unknown command is named,
 * with the one it was likely meant to be (exit 2). Commander's own help command prints the whole
 * help for an unknown name instead, so this one replaces it.
 */
import type { Command } from 'commander';
import { closestMatch } from '../closestMatch.js';
import { EXIT_USAGE } from './parsers.js';

export function addHelpCommand(program: Command): void {
  program.helpCommand(false);
  program
    .command('help')
    .description('print the help of sim or of one command')
    .argument('[command]', 'the command')
    .action((name?: string) => {
      if (name === undefined) program.help();
      const command = program.commands.find((c) => c.name() === name || c.aliases().includes(name));
      if (!command) failUnknownCommand(program, name);
      command.help();
    });
}

/** Exits 2 naming a command that sim does not have, with a suggestion when one is close. */
export function failUnknownCommand(program: Command, name: string): never {
  const guess = closestMatch(name, program.commands.map((c) => c.name()));
  program.error(`error: unknown command '${name}'${guess ? `\n(Did you mean ${guess}?)` : ''}`, {
    code: 'commander.unknownCommand',
    exitCode: EXIT_USAGE,
  });
}
