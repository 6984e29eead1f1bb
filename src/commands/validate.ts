/** `sim validate FILE`: every problem of a scenario file; exit 0 when valid, 2 otherwise. */
import type { Command } from 'commander';
import { validateScenarioFile } from '../scenarios/load.js';
import { formatProblems } from '../scenarios/problems.js';
import { EXIT_USAGE } from './parsers.js';

export function addValidateCommand(program: Command): void {
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
      process.stderr.write(`${file}: ${problems.length} problem${problems.length === 1 ? '' : 's'}\n${formatProblems(problems)}\n`);
      process.exitCode = EXIT_USAGE;
    });
}
