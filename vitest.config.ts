import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    exclude: ['test/browser/**', 'test/docker/**', 'test/shards/**', 'test/package/**', 'test/contract/**', 'test/large/**', 'node_modules/**'],
    setupFiles: ['test/setup.ts'],
    testTimeout: 15_000,
    hookTimeout: 15_000,
    // One file per core: many files spend their time waiting on spawned simulators and sockets,
    // so a worker per core (rather than one fewer) keeps both cores busy.
    maxWorkers: availableParallelism(),
  },
});
