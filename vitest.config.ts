import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    exclude: ['test/browser/**', 'test/docker/**', 'test/package/**', 'test/contract/**', 'node_modules/**'],
    setupFiles: ['test/setup.ts'],
    testTimeout: 15_000,
    hookTimeout: 15_000,
  },
});
