/**
 * `sim state compact FILE`: rewrites a state file (`--state FILE`) as its header and a snapshot of
 * the state it holds, the file that restores the same state fastest (docs/state.md). Exit 0 with
 * the sizes before and after; 1 when a running simulator holds the file (naming its pid) or it
 * cannot be rewritten; 2 when it cannot be read or is not a state file this version restores.
 */
import type { Command } from 'commander';
import { FileLockedError } from '../fileLock.js';
import { CompactionFailedError, compactStateFile } from '../persistence/compact.js';
import { StateRefusedError } from '../persistence/open.js';
import { EXIT_USAGE } from './parsers.js';

export function registerStateCommand(program: Command): void {
  const state = program.command('state').description('work on a state file (--state FILE)');
  state
    .command('compact')
    .description('rewrite a state file as its header and a snapshot (the file that restores the same state fastest)')
    .argument('<file>', 'the state file')
    .action(async (file: string) => {
      const warnings: string[] = [];
      try {
        const done = await compactStateFile(file, (line) => warnings.push(line));
        for (const line of warnings) process.stderr.write(`${line}\n`);
        process.stdout.write(
          `${file}: compacted from ${bytes(done.before)} to ${bytes(done.after)} (a snapshot of ${done.requests} request${done.requests === 1 ? '' : 's'})\n`,
        );
      } catch (e) {
        for (const line of warnings) process.stderr.write(`${line}\n`);
        if (e instanceof FileLockedError) {
          process.stderr.write(`sim: cannot compact: ${e.message}\n`);
          process.exitCode = 1;
        } else if (e instanceof StateRefusedError) {
          process.stderr.write(`sim: ${e.message}\n`);
          process.exitCode = e instanceof CompactionFailedError ? 1 : EXIT_USAGE;
        } else throw e;
      }
    });
}

function bytes(n: number): string {
  return `${n.toLocaleString('en-US')} bytes`;
}
