#!/usr/bin/env node
// Durable state (`--state FILE`): what it costs. Not part of `npm test`; the figures are in
// bench/README.md, "State".
//
//   node bench/state.mjs [--requests N] [--runs N] [--seconds N] [--only restore,throughput,large] [--large-creates N]
//
// restore:    a state file of N requests (default 100,000: creates, polls and clock advances over
//             many accounts) is made in-process (compacted past its bound as it grows: a snapshot
//             and the tail of lines after it), then compacted whole with `sim state compact`; for
//             each file, `sim --state FILE` is started on it, and started without it, interleaved;
//             the restore is the difference of the times to the "listening" line. Also the
//             in-process restore (createSimulator) alone. Target: < 3 s.
// throughput: creates and polls against the same simulator with and without --state, interleaved
//             rounds of autocannon (32 connections); the ratio is the cost.
// large:      (not in the default set) a state whose snapshot is past V8's longest string: N
//             creates (--large-creates, default 22,000) with prompts and negative prompts of the
//             longest length under Idempotency-Keys, made in-process (no compaction runs meanwhile:
//             it runs between requests), then a turn of the event loop: the compaction that follows
//             captures the whole state and runs while a 1 ms timer watches the event loop (its longest
//             turn is the longest any request could wait; the CPU time spent in it tells work from
//             waiting for a CPU on a loaded machine), and the capture it begins with is timed apart. Then `sim --state FILE` restores the compacted file: its start-up time and peak
//             resident memory (VmHWM), per 100 MiB of file.
//
// Needs the built code (`npm run build --silent`) and autocannon in node_modules.
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { acHeaders, autocannon, CLI, cpuMs, fmtBytes, log, median, now, option, quantile, request, requireAutocannon, requireBuilt, ROOT, runToExit, startServer, stopServer } from './lib.mjs';

const REQUESTS = Number(option('--requests', '100000'));
const RUNS = Number(option('--runs', '3'));
const SECONDS = Number(option('--seconds', '5'));
const only = new Set(option('--only', 'restore,throughput').split(','));
const SIM_ARGS = ['--port', '0', '--scenario', 'fast', '--clock', 'manual'];
const CREATE_BODY = JSON.stringify({ model: 'video-3.2', prompt: 'A lighthouse on a cliff at dawn, waves crashing below.' });

requireBuilt();
const { createSimulator } = await import(pathToFileURL(join(ROOT, 'dist', 'index.js')).href);
const dir = mkdtempSync(join(os.tmpdir(), 'sim-bench-state-'));
log(`load average before: ${os.loadavg().map((x) => x.toFixed(2)).join(' ')} on ${os.cpus().length} CPUs`);

/** A request through the in-process handle's request path (recorded like an HTTP one). */
function answer(sim, method, path, { key, body } = {}) {
  const queryAt = path.indexOf('?');
  const headers = {};
  if (key) headers.authorization = `Bearer ${key}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  return sim.app.answer({
    method,
    path: queryAt < 0 ? path : path.slice(0, queryAt),
    query: queryAt < 0 ? '' : path.slice(queryAt + 1),
    headers,
    body: body === undefined ? null : Buffer.from(JSON.stringify(body)),
  });
}

/** A state of `n` requests: per 10, 3 creates and 6 polls over 100 accounts, and 1 clock advance. */
async function makeState(file, n) {
  const sim = createSimulator({ scenario: 'fast', clock: 'manual', state: file, log: () => {} });
  // Listening, so that the file names the address a restart on the same port will have (a restore
  // on another address replays twice: see docs/state.md).
  await sim.listen(0);
  const port = sim.port;
  const ids = [];
  for (let i = 0; i < n; i++) {
    const key = `sk_test_state${i % 100}`;
    const kind = i % 10;
    if (kind < 3 || ids.length === 0) {
      const a = answer(sim, 'POST', '/v1/videos', { key, body: { model: 'video-3.2', prompt: `Prompt ${i}` } });
      ids.push([key, JSON.parse(a.body).id]);
    } else if (kind < 9) {
      const [owner, id] = ids[(i * 7919) % ids.length];
      answer(sim, 'GET', `/v1/videos/${id}`, { key: owner });
    } else {
      answer(sim, 'POST', '/_sim/clock/advance', { body: { seconds: 0.5 } });
    }
    // A compaction runs between requests: a turn of the event loop now and then lets it go on.
    if (i % 1000 === 999) await new Promise((resolve) => setTimeout(resolve, 0));
  }
  await sim.close();
  return port;
}

async function benchRestore() {
  const file = join(dir, 'state.jsonl');
  const t0 = now();
  const port = await makeState(file, REQUESTS);
  log(`made a state of ${REQUESTS} requests in ${((now() - t0) / 1000).toFixed(1)} s: ${fmtBytes(statSync(file).size)}, ${tailOf(file)} request lines after its snapshot`);
  await measureRestore(file, port, 'as kept (a snapshot and its tail)');
  const compact = await runToExit(CLI, ['state', 'compact', file], { timeoutMs: 120_000 });
  log(`sim state compact: ${compact.stdout.trim()}`);
  await measureRestore(file, port, 'compacted (sim state compact)');
}

/** Request lines after the snapshot (or all of them without one). */
function tailOf(file) {
  return readFileSync(file, 'utf8').split('\n').filter((line) => line.startsWith('{"seq"')).length;
}

async function measureRestore(file, port, what) {
  const size = statSync(file).size;
  const inProcess = [];
  const cpu = [];
  for (let i = 0; i < RUNS; i++) {
    const t = now();
    const cpuBefore = process.cpuUsage();
    const sim = createSimulator({ state: file, log: () => {} });
    inProcess.push(now() - t);
    const used = process.cpuUsage(cpuBefore);
    cpu.push((used.user + used.system) / 1000);
    if (sim.stateRestored !== REQUESTS) throw new Error(`restored ${sim.stateRestored} requests, not ${REQUESTS}`);
    await sim.close();
  }
  log(`${what}: in-process restore (createSimulator): ${inProcess.map((ms) => `${ms.toFixed(0)} ms`).join(', ')}; median ${median(inProcess).toFixed(0)} ms (${median(cpu).toFixed(0)} ms of CPU)`);

  const times = { with: [], without: [] };
  for (let i = 0; i < RUNS; i++) {
    for (const kind of i % 2 === 0 ? ['with', 'without'] : ['without', 'with']) {
      const server = await startServer(CLI, kind === 'with' ? ['--port', String(port), '--state', file] : SIM_ARGS, { name: `sim ${kind} state`, timeoutMs: 120_000 });
      times[kind].push(server.listenedAt - server.spawnedAt);
      await stopServer(server);
    }
    log(`  run ${i + 1}: start-up with the state ${times.with.at(-1).toFixed(0)} ms, without ${times.without.at(-1).toFixed(0)} ms`);
  }
  const restore = median(times.with) - median(times.without);
  log(`=> restore of ${REQUESTS} requests, ${what}, ${fmtBytes(size)}: start-up ${median(times.with).toFixed(0)} ms against ${median(times.without).toFixed(0)} ms without: ${restore.toFixed(0)} ms (target < 3000 ms: ${restore < 3000 ? 'PASS' : 'MISS'})`);
}

async function benchThroughput() {
  requireAutocannon();
  const key = 'sk_test_bench';
  const auth = { Authorization: `Bearer ${key}` };
  const plain = await startServer(CLI, SIM_ARGS, { name: 'sim' });
  const kept = await startServer(CLI, [...SIM_ARGS, '--state', join(dir, 'throughput.jsonl')], { name: 'sim --state' });
  try {
    const servers = { plain, kept };
    const ids = {};
    for (const [name, server] of Object.entries(servers)) {
      const r = await request(`${server.url}/v1/videos`, { method: 'POST', headers: { ...auth, 'Content-Type': 'application/json' }, body: CREATE_BODY });
      ids[name] = r.json.id;
    }
    const specs = {
      poll: (name) => [`${servers[name].url}/v1/videos/${ids[name]}`, ['-c', '32', ...acHeaders(auth)]],
      create: (name) => [`${servers[name].url}/v1/videos`, ['-c', '32', '-m', 'POST', '-b', CREATE_BODY, ...acHeaders({ ...auth, 'Content-Type': 'application/json' })]],
    };
    for (const [kind, spec] of Object.entries(specs)) {
      for (const name of Object.keys(servers)) await autocannon(...spec(name).map((x, i) => (i === 1 ? [...x, '-d', '1'] : x)));
      const runs = { plain: [], kept: [] };
      for (let round = 0; round < RUNS; round++) {
        const line = [];
        for (const name of round % 2 === 0 ? ['plain', 'kept'] : ['kept', 'plain']) {
          const [url, args] = spec(name);
          const cpuBefore = cpuMs(servers[name].pid);
          const r = await autocannon(url, [...args, '-d', String(SECONDS)]);
          const rps = r.requests.total / r.duration;
          const cpuUs = ((cpuMs(servers[name].pid) - cpuBefore) * 1000) / r.requests.total;
          if (r.non2xx > 0 || r.errors > 0) log(`  WARNING: ${name} answered ${r.non2xx} non-2xx, ${r.errors} errors`);
          runs[name].push({ rps, cpuUs });
          line.push(`${name} ${rps.toFixed(0)} req/s (${cpuUs.toFixed(1)} µs CPU each)`);
        }
        log(`  ${kind} round ${round + 1}: ${line.join(', ')}`);
      }
      const rps = (name) => median(runs[name].map((x) => x.rps));
      const cpu = (name) => median(runs[name].map((x) => x.cpuUs));
      log(
        `=> ${kind}s: with --state ${rps('kept').toFixed(0)} req/s (${cpu('kept').toFixed(1)} µs CPU each), without ${rps('plain').toFixed(0)} req/s (${cpu('plain').toFixed(1)} µs): ratio ${(rps('kept') / rps('plain')).toFixed(2)}`,
      );
    }
    log(`state file after the runs: ${fmtBytes(statSync(join(dir, 'throughput.jsonl')).size)}`);
  } finally {
    await Promise.all([stopServer(plain), stopServer(kept)]);
  }
}

/** The longest prompt (and negative prompt) a create takes: 4,000 characters. */
const longest = (seed) => `${seed} A lighthouse on a cliff at dawn, waves below. `.repeat(80).slice(0, 4000);

async function benchLarge() {
  const creates = Number(option('--large-creates', '22000'));
  const file = join(dir, 'large.jsonl');
  const scenario = join(dir, 'large.yaml');
  writeFileSync(scenario, JSON.stringify({ extends: 'fast', name: 'large-state', limits: { max_stored_generations: 1_000_000 }, rate_limits: { capacity: 1_000_000, refill_per_second: 1000 } }));
  const sim = createSimulator({ scenario, clock: 'manual', state: file, log: (line) => log(`  sim: ${line}`) });
  await sim.listen(0);
  let t = now();
  const negative = longest('Not');
  for (let i = 0; i < creates; i++) {
    const body = { model: 'video-3.2', prompt: longest(String(i)), negative_prompt: negative };
    const a = sim.app.answer({ method: 'POST', path: '/v1/videos', query: '', headers: { authorization: `Bearer sk_test_large${i % 50}`, 'idempotency-key': `create-${i}`, 'content-type': 'application/json' }, body: Buffer.from(JSON.stringify(body)) });
    if (a.status !== 200) throw new Error(`create ${i}: ${a.status} ${a.body}`);
  }
  log(`made ${creates} creates in ${((now() - t) / 1000).toFixed(1)} s: a log of ${fmtBytes(statSync(file).size)}`);
  t = now();
  const capture = sim.core.captureState();
  log(`capture of the state (${capture.count} rows): ${(now() - t).toFixed(1)} ms`);
  const health = () => JSON.parse(sim.app.answer({ method: 'GET', path: '/_sim/health', query: '', headers: {}, body: null }).body).state;
  const junk = Buffer.from('x'.repeat(2 ** 20 - 64));
  // Each turn of a 1 ms timer: the time since the last (wall clock), and the CPU time the process
  // used meanwhile (on a loaded machine the first grows while the process waits for a CPU; the
  // second is what it spent, collections included).
  const turns = [];
  let compactions = 0;
  let compactedMs = 0;
  let compactionCpuMs = 0;
  for (let i = 0; health().compacted_at === null; i++) {
    if (health().compacting) {
      compactions++;
      const began = now();
      const cpuBefore = process.cpuUsage();
      let last = now();
      let lastCpu = process.cpuUsage();
      while (health().compacting) {
        await new Promise((resolve) => setTimeout(resolve, 1));
        const cpu = process.cpuUsage(lastCpu);
        turns.push({ wall: now() - last, cpu: (cpu.user + cpu.system) / 1000 });
        last = now();
        lastCpu = process.cpuUsage();
      }
      compactedMs = now() - began;
      const used = process.cpuUsage(cpuBefore);
      compactionCpuMs = (used.user + used.system) / 1000;
    } else {
      sim.app.answer({ method: 'POST', path: '/v1/videos', query: '', headers: { authorization: 'Bearer sk_test_large0', 'content-type': 'application/json' }, body: junk });
      await new Promise(setImmediate);
    }
    if (i > 5000) throw new Error('never compacted');
  }
  const size = statSync(file).size;
  log(`compacted to ${fmtBytes(size)} in ${(compactedMs / 1000).toFixed(1)} s, ${(compactionCpuMs / 1000).toFixed(1)} s of CPU (${compactions} compaction${compactions === 1 ? '' : 's'})`);
  const slowest = turns.reduce((a, b) => (b.wall > a.wall ? b : a), { wall: 0, cpu: 0 });
  const busiest = turns.reduce((a, b) => (b.cpu > a.cpu ? b : a), { wall: 0, cpu: 0 });
  log(
    `turns of the event loop while compacting: ${turns.length}; the longest ${slowest.wall.toFixed(1)} ms (${slowest.cpu.toFixed(1)} ms of CPU in it); ` +
      `the most CPU in one ${busiest.cpu.toFixed(1)} ms (${busiest.wall.toFixed(1)} ms long); CPU per turn p99 ${quantile(turns.map((x) => x.cpu), 0.99).toFixed(1)} ms`,
  );
  await sim.close();
  const server = await startServer(CLI, ['--port', '0', '--state', file], { name: 'sim --state (large)', timeoutMs: 600_000 });
  const startMs = server.listenedAt - server.spawnedAt;
  const peak = Number(/VmHWM:\s+(\d+)\s+kB/.exec(readFileSync(`/proc/${server.pid}/status`, 'utf8'))?.[1]) * 1024;
  const cpu = cpuMs(server.pid);
  await stopServer(server);
  const per100 = (x) => (x * 100 * 2 ** 20) / size;
  log(
    `=> restore of ${fmtBytes(size)}: start-up ${(startMs / 1000).toFixed(1)} s (${(per100(startMs) / 1000).toFixed(2)} s per 100 MiB), ` +
      `${(cpu / 1000).toFixed(1)} s of CPU (${(per100(cpu) / 1000).toFixed(2)} s per 100 MiB), peak RSS ${fmtBytes(peak)}`,
  );
}

try {
  if (only.has('restore')) await benchRestore();
  if (only.has('large')) await benchLarge();
  if (only.has('throughput')) await benchThroughput();
} finally {
  rmSync(dir, { recursive: true, force: true });
  log(`load average after: ${os.loadavg().map((x) => x.toFixed(2)).join(' ')}`);
}
