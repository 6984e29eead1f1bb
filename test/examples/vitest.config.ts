import { defineConfig } from 'vitest/config';

// `npm run test:examples`: packs the package once, then runs each frontend example of examples/
// as a user would: a copy of its folder, the tarball installed in place of the clone, its own
// `npm test`. Slow (npm install, Chromium, a Storybook build); CI runs it after the browser tests.
export default defineConfig({
  test: {
    include: ['test/examples/**/*.test.ts'],
    root: new URL('../..', import.meta.url).pathname,
    testTimeout: 15 * 60_000,
    hookTimeout: 5 * 60_000,
    fileParallelism: false,
  },
});
