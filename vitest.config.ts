import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    exclude: ['test/browser/**', 'test/docker/**', 'test/shards/**', 'test/package/**', 'test/examples/**', 'test/contract/**', 'test/large/**', 'node_modules/**'],
    setupFiles: ['test/setup.ts'],
    testTimeout: 15_000,
    hookTimeout: 15_000,
    // One file per core: many files spend their time waiting on spawned simulators and sockets,
    // so a worker per core (rather than one fewer) keeps both cores busy.
    pool: 'forks',
    maxWorkers: availableParallelism(),
    // Each worker process runs file after file with the modules it has loaded: the simulator's code,
    // express-openapi-validator and the contract it compiles (test/crossCheck.ts) are loaded once
    // per worker rather than once per file, which was half of the suite's CPU time. A test file
    // therefore leaves nothing behind that another could see: it closes the simulators that keep a
    // file (each holds the file's lock, refreshed on a timer, until closed), test/setup.ts forgets
    // its contract checks once they are made, and process-wide settings (fake timers, fast-check's
    // global configuration, the working directory) are put back after use.
    // The modules' own singletons are the process's by nature, not a test file's, so sharing them
    // is safe: src/http/turnWrites.ts holds the writes of the current event-loop turn (emptied at
    // the turn's end, whichever file asked for them; its channel is unref'd and serves every file)
    // and src/fileLock.ts the locks this process holds (test/setup.ts fails a file that leaves one
    // held; the refresh timer stops with the last lock, and the process's identity does not change).
    // Isolation measured on four files in one worker: 10.6 s against 8.5 s, a quarter more CPU,
    // most of it loading the same modules again per file; so it stays off.
    isolate: false,
  },
});
