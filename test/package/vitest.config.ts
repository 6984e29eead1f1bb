import { defineConfig } from 'vitest/config';

// `npm run test:package`: packs the package, installs the tarball into a fresh project and uses it
// as a user would (npx sim, the programmatic API, the downstream example). Slow: npm install.
export default defineConfig({
  test: {
    include: ['test/package/**/*.test.ts'],
    testTimeout: 5 * 60_000,
    hookTimeout: 15 * 60_000,
    fileParallelism: false,
  },
});
