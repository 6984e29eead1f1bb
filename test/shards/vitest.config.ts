import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

// `npm run test:shards`: N shards (`--shard I/N`) behind Debian's nginx with the configuration
// `sim deploy nginx` prints (apt-get install -y nginx; never run as the system service), the typed
// client over them, and the dashboard in headless Chromium.
export default defineConfig({
  test: {
    root: fileURLToPath(new URL('../..', import.meta.url)),
    include: ['test/shards/**/*.test.ts'],
    testTimeout: 90_000,
    hookTimeout: 60_000,
    fileParallelism: false,
  },
});
