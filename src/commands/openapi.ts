/** `sim openapi`: prints the contract, openapi.yaml. */
import type { Command } from 'commander';
import { readFileSync } from 'node:fs';
import { openapiPath } from '../openapi.js';

export function addOpenapiCommand(program: Command): void {
  program
    .command('openapi')
    .description('print the contract (openapi.yaml), e.g. sim openapi > service-openapi.yaml')
    .action(() => {
      process.stdout.write(readFileSync(openapiPath, 'utf8'));
    });
}
