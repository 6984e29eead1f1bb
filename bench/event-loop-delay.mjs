// Preloaded into the simulator by soak.mjs, and only there (`node --import bench/event-loop-delay.mjs
// dist/cli.js ...` with BENCH_EVENT_LOOP_FILE set): measures the event-loop delay with
// perf_hooks.monitorEventLoopDelay and writes it, every 250 ms, as one JSON object
// {"p50":ms,"p99":ms,"max":ms,"samples":n} to that file. SIGUSR2 starts the histogram over (the
// soak sends it when the load starts). Changes nothing else in the process and writes nothing to
// its stdout or stderr.
import { writeFileSync } from 'node:fs';
import { monitorEventLoopDelay } from 'node:perf_hooks';

const file = process.env.BENCH_EVENT_LOOP_FILE;
if (file) {
  const histogram = monitorEventLoopDelay({ resolution: 5 });
  histogram.enable();
  const ms = (ns) => Math.round(ns / 1e4) / 100;
  const write = () => {
    const summary = { p50: ms(histogram.percentile(50)), p99: ms(histogram.percentile(99)), max: ms(histogram.max), samples: histogram.count };
    try {
      writeFileSync(file, JSON.stringify(summary));
    } catch {
      // The soak may remove its directory first: never let the measurement disturb the process.
    }
  };
  setInterval(write, 250).unref();
  process.on('SIGUSR2', () => {
    histogram.reset();
    write();
  });
}
