import { defineConfig } from 'vitest/config';

// `npm run test:contract`: the simulator behind Stoplight Prism's validating proxy. Prism takes a
// few seconds to start on a busy machine, hence the long hook timeout.
export default defineConfig({
  test: {
    include: ['test/contract/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 180_000,
    fileParallelism: false,
  },
});
