import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    exclude: ['test/browser/**', 'test/docker/**', 'test/package/**', 'node_modules/**'],
    testTimeout: 15_000,
    hookTimeout: 15_000,
  },
});
