// Preloaded into the simulator by bench.mjs's memory figure, and only there (`node --expose-gc
// --import bench/gc-on-signal.mjs dist/cli.js ...`): on SIGUSR2 it runs a full garbage collection
// and writes one line `bench-gc {"rss":..,"heapUsed":..,"heapTotal":..,"external":..}` to stderr,
// so that the bench can tell live objects from garbage next to the figure itself (which is read
// before any forced collection). Changes nothing else in the process.
if (typeof globalThis.gc === 'function') {
  process.on('SIGUSR2', () => {
    globalThis.gc();
    globalThis.gc();
    const { rss, heapUsed, heapTotal, external } = process.memoryUsage();
    process.stderr.write(`bench-gc ${JSON.stringify({ rss, heapUsed, heapTotal, external })}\n`);
  });
}
