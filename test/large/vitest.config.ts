import { defineConfig } from 'vitest/config';

// `npm run test:large`: state files past V8's string limit (about 512 MiB), made, compacted and
// restored by `node dist/cli.js` processes. Heavy (about 1.5 GB of disk, minutes of CPU): not part of
// `npm test`. Needs the built code (`npm run build`).
export default defineConfig({
  test: {
    include: ['test/large/**/*.test.ts'],
    testTimeout: 15 * 60_000,
    hookTimeout: 60_000,
    fileParallelism: false,
  },
});
