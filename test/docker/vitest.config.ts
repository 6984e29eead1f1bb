import { defineConfig } from 'vitest/config';

// `npm run test:docker`: builds the image and runs it with the `docker` CLI from PATH (whatever
// DOCKER_HOST the environment sets). Slow: the first build installs dependencies twice.
export default defineConfig({
  test: {
    include: ['test/docker/**/*.test.ts'],
    testTimeout: 120_000,
    hookTimeout: 20 * 60_000,
    fileParallelism: false,
    // Testcontainers' reaper (Ryuk) is an image of its own, which an engine without a registry
    // cannot pull; the tests stop their containers themselves. Set it to 'false' to use Ryuk.
    env: { TESTCONTAINERS_RYUK_DISABLED: process.env.TESTCONTAINERS_RYUK_DISABLED ?? 'true' },
  },
});
