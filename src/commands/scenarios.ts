/** `sim scenarios`: the bundled scenarios, one per line with its purpose. */
import type { Command } from 'commander';
import { listBundledScenarios } from '../scenarios/load.js';

export function addScenariosCommand(program: Command): void {
  program
    .command('scenarios')
    .description('list the bundled scenarios with their purpose')
    .action(() => {
      const all = listBundledScenarios();
      const width = Math.max(...all.map((s) => s.name.length));
      for (const s of all) process.stdout.write(`${s.name.padEnd(width)}  ${s.purpose}\n`);
    });
}
