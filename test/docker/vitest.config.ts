import { defineConfig } from 'vitest/config';

// `npm run test:docker`: builds the image and runs it with the `docker` CLI from PATH (whatever
// DOCKER_HOST the environment sets). Slow: the first build installs dependencies twice.
export default defineConfig({
  test: {
    include: ['test/docker/**/*.test.ts'],
    testTimeout: 120_000,
    hookTimeout: 20 * 60_000,
    fileParallelism: false,
  },
});
