import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['**/*.test.ts'],
    exclude: ['**/node_modules/**'],
    // Starts one simulator for the run; its URL reaches the tests through inject('simUrl').
    globalSetup: ['./global-setup.ts'],
  },
});
