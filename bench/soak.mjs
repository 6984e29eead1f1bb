#!/usr/bin/env node
// Soak test of the simulator (`npm run soak`): mixed load under the flaky scenario, with a bounded
// store, then SIGTERM while requests are in flight.
//
//   node bench/soak.mjs [--seconds 60] [--connections 64] [--json FILE]
//
// Starts `node dist/cli.js --port 0 --scenario <tmp>/soak.yaml --clock manual`, where soak.yaml
// extends the bundled `flaky` scenario (500s and 429s injected on ~7% of /v1 requests each) with
// `limits: { max_stored_generations: 2000, journal_size: 2000 }` so that the caps are reached
// within the run and memory can be seen to level off, and with rate limits out of reach (so that
// every 429 is an injected one). Then, for --seconds, 64 concurrent keep-alive connections
// (loopback only) run a mix of create / poll / list / cancel / advance. Fails (exit 1) when:
//   - any answer is not a 2xx or an injected fault (429 rate_limit_exceeded, 500 internal_error
//     whose message says "injected"), or any connection error or timeout happens during the run;
//   - the simulator writes to stderr anything but its stop line (e.g. a response that failed
//     validation against openapi.yaml);
//   - resident memory at the end exceeds that at the middle of the run by more than 50%;
//   - after SIGTERM with requests in flight, the process takes more than 1 s to exit (it is
//     killed at 3 s), or an in-flight request neither gets an answer nor a clean connection error.
// The summary reports the simulator's event-loop delay (p50/p99/max from monitorEventLoopDelay, by
// bench/event-loop-delay.mjs preloaded into the simulator process; nothing in src/ measures it) and
// client-observed latency (p50/p99 per operation, and of a /_sim/health probe every 100 ms).
import http from 'node:http';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { BENCH_DIR, CLI, fmtBytes, log, now, option, quantile, request, requireBuilt, rssBytes, sleep, startServer } from './lib.mjs';

const SECONDS = Number(option('--seconds', '60'));
const CONNECTIONS = Number(option('--connections', '64'));
const JSON_OUT = option('--json', null);
if (!(SECONDS > 0) || !(CONNECTIONS >= 4)) {
  process.stderr.write('usage: node bench/soak.mjs [--seconds N > 0] [--connections N >= 4] [--json FILE]\n');
  process.exit(2);
}
const CAP = 2000;
const SHUTDOWN_TARGET_MS = 1000;
const SHUTDOWN_KILL_MS = 3000;

const agent = new http.Agent({ keepAlive: true, maxSockets: CONNECTIONS + 8 });
const CREATE = (i) => ({
  model: ['video-3.0', 'video-3.1', 'video-3.2'][i % 3],
  prompt: `Soak test shot ${i}: a paper boat drifting down a gutter stream in the rain.`,
  ...(i % 4 === 0 ? { duration_seconds: 4, resolution: '720p' } : {}),
});

// ---- state ----------------------------------------------------------------------------------

const stats = {
  requests: 0,
  byOutcome: new Map(), // "200", "429 rate_limit_error/rate_limit_exceeded (injected)", ...
  byOp: new Map(), // op -> latencies
  unexpected: [], // examples
  unexpectedCount: 0,
  connectionErrors: 0,
  creates: new Map(), // account -> successful creates
};
const health = [];
const rss = [];
let phase = 'load'; // 'load' | 'shutdown'
let startedAt = now();
const slow = []; // requests slower than 500 ms: when they were sent and what they were
let inFlight = 0;
const shutdown = { inFlightAtSigterm: 0, responses: 0, connectionErrors: new Map(), hung: 0, exitMs: null, signal: null };

function count(map, key, n = 1) {
  map.set(key, (map.get(key) ?? 0) + n);
}

function unexpected(what) {
  stats.unexpectedCount++;
  if (stats.unexpected.length < 10) stats.unexpected.push(what);
}

/** One request, accounted: resolves the response, or null on a connection error. */
async function call(base, op, method, path, { key, body, headers = {} } = {}) {
  const h = { ...headers };
  if (key) h.Authorization = `Bearer ${key}`;
  if (sigtermSent) return null; // no new requests once SIGTERM is sent
  inFlight++;
  try {
    const r = await request(`${base}${path}`, { method, headers: h, body, agent, timeoutMs: 10_000 });
    stats.requests++;
    if (phase === 'shutdown' && sigtermSent) shutdown.responses++;
    const outcome = classify(r);
    count(stats.byOutcome, outcome.label);
    if (!outcome.ok) unexpected(`${method} ${path} -> ${r.status} ${r.text.slice(0, 300)}`);
    let lat = stats.byOp.get(op);
    if (!lat) stats.byOp.set(op, (lat = []));
    lat.push(r.ms);
    if (r.ms > 500) slow.push({ atSeconds: (now() - r.ms - startedAt) / 1000, op, ms: r.ms });
    return r;
  } catch (e) {
    if (phase === 'shutdown' && sigtermSent) {
      const code = e.code ?? e.message;
      if (/timeout/.test(e.message)) shutdown.hung++;
      else count(shutdown.connectionErrors, code);
    } else {
      stats.connectionErrors++;
      unexpected(`${method} ${path} -> connection error ${e.code ?? ''} ${e.message}`);
    }
    return null;
  } finally {
    inFlight--;
  }
}
let sigtermSent = false;

function classify(r) {
  if (r.status >= 200 && r.status < 300) return { ok: true, label: String(r.status) };
  const e = r.json?.error;
  const label = `${r.status} ${e?.type ?? '?'}/${e?.code ?? '?'}`;
  const injected =
    typeof e?.message === 'string' &&
    /injected by scenario/.test(e.message) &&
    ((r.status === 429 && e.type === 'rate_limit_error' && e.code === 'rate_limit_exceeded') ||
      (r.status === 500 && e.type === 'api_error' && e.code === 'internal_error'));
  return { ok: injected, label: `${label}${injected ? ' (injected)' : ' (NOT injected)'}` };
}

const retryable = (r) => r !== null && (r.status === 429 || r.status === 500);

// ---- the workers ------------------------------------------------------------------------------

/**
 * Flow accounts create, poll, list and advance their own clock; the cancel account creates and
 * cancels at once and is never advanced (so a fresh generation is always still cancelable, and
 * every request of the run is a valid one whatever the interleaving).
 */
function makeAccount(key, kind) {
  return { key, kind, recent: [], created: 0 };
}

function remember(account, id) {
  account.recent.push(id);
  if (account.recent.length > 100) account.recent.shift();
  account.created++;
}

const pick = (xs) => xs[Math.floor(Math.random() * xs.length)];

async function create(base, account, i) {
  const body = CREATE(i);
  // Idempotency keys only on flow accounts: entries expire on the account's clock, which the
  // cancel account never moves (its keys would pile up for the whole run).
  const idem = account.kind === 'flow' && i % 2 === 0 ? { 'Idempotency-Key': `soak-${account.key}-${i}` } : {};
  for (let attempt = 0; attempt < 4; attempt++) {
    const r = await call(base, 'create', 'POST', '/v1/videos', { key: account.key, body, headers: idem });
    if (r && r.status === 200) {
      remember(account, r.json.id);
      return r.json.id;
    }
    if (!retryable(r) || !idem['Idempotency-Key']) return null;
  }
  return null;
}

async function worker(base, account, w, deadline) {
  let i = w * 1_000_000;
  while (!sigtermSent) {
    if (phase === 'load' && now() >= deadline) phase = 'shutdown';
    i++;
    const roll = Math.random();
    if (account.kind === 'cancel') {
      if (roll < 0.4 || account.recent.length === 0) {
        const id = await create(base, account, i);
        if (id) {
          for (let attempt = 0; attempt < 4; attempt++) {
            const r = await call(base, 'cancel', 'DELETE', `/v1/videos/${id}`, { key: account.key });
            if (!retryable(r)) break;
          }
        }
      } else if (roll < 0.8) {
        await call(base, 'poll', 'GET', `/v1/videos/${pick(account.recent)}`, { key: account.key });
      } else {
        await call(base, 'list', 'GET', listPath(account), { key: account.key });
      }
    } else if (roll < 0.35 || account.recent.length === 0) {
      await create(base, account, i);
    } else if (roll < 0.7) {
      await call(base, 'poll', 'GET', `/v1/videos/${pick(account.recent)}`, { key: account.key });
    } else if (roll < 0.85) {
      await call(base, 'list', 'GET', listPath(account), { key: account.key });
    } else {
      await call(base, 'advance', 'POST', '/_sim/clock/advance', { body: { seconds: 5 + Math.round(Math.random() * 55), api_key: account.key } });
    }
  }
}

function listPath(account) {
  const params = new URLSearchParams({ limit: String(1 + Math.floor(Math.random() * 100)) });
  if (Math.random() < 0.5) params.set('after', pick(account.recent));
  if (Math.random() < 0.2) params.set('status', pick(['queued', 'processing', 'succeeded', 'failed', 'canceled']));
  return `/v1/videos?${params}`;
}

async function healthProbe(base) {
  while (phase === 'load') {
    try {
      const r = await request(`${base}/_sim/health`, { agent, timeoutMs: 10_000 });
      if (r.status === 200) health.push(r.ms);
      if (r.ms > 500) slow.push({ atSeconds: (now() - r.ms - startedAt) / 1000, op: 'health', ms: r.ms });
    } catch {
      // reported by the workers
    }
    await sleep(100);
  }
}

// ---- main -------------------------------------------------------------------------------------

/** The largest of many numbers (Math.max(...xs) overflows the stack on long runs). */
function maxOf(xs) {
  let m = -Infinity;
  for (const x of xs) if (x > m) m = x;
  return m;
}

function fmtMs(x) {
  return Number.isFinite(x) ? `${x.toFixed(x < 10 ? 2 : 0)} ms` : 'n/a';
}

async function main() {
  requireBuilt();
  const dir = mkdtempSync(join(os.tmpdir(), 'sim-soak-'));
  const eventLoopFile = join(dir, 'event-loop.json');
  const readEventLoop = () => {
    try {
      return JSON.parse(readFileSync(eventLoopFile, 'utf8'));
    } catch {
      return null;
    }
  };
  const scenarioPath = join(dir, 'soak.yaml');
  writeFileSync(
    scenarioPath,
    [
      '# soak: flaky with small caps, so that the stored-generation cap and the journal bound are reached within a run.',
      'extends: flaky',
      'name: soak',
      'description: flaky with max_stored_generations 2000 and journal_size 2000; rate limits out of reach (only injected 429s).',
      `limits: { max_stored_generations: ${CAP}, journal_size: ${CAP} }`,
      'rate_limits: { capacity: 1000000000, refill_per_second: 1000000000 }',
      '',
    ].join('\n'),
  );
  const failures = [];
  let sim;
  try {
    sim = await startServer(CLI, ['--port', '0', '--scenario', scenarioPath, '--clock', 'manual'], {
      name: 'sim',
      nodeArgs: ['--import', pathToFileURL(join(BENCH_DIR, 'event-loop-delay.mjs')).href],
      env: { BENCH_EVENT_LOOP_FILE: eventLoopFile },
    });
    const base = sim.url;
    log(`soak: ${SECONDS} s, ${CONNECTIONS} connections, ${sim.stdout.trim()}`);
    const h = await request(`${base}/_sim/health`, { agent });
    if (h.status !== 200) throw new Error(`health: ${h.status}`);
    await sleep(300);
    const startRss = rssBytes(sim.pid);
    process.kill(sim.pid, 'SIGUSR2'); // the event-loop histogram starts with the load
    const t0 = now();
    startedAt = t0;
    const deadline = t0 + SECONDS * 1000;
    let eventLoopMiddle;
    const sampler = setInterval(() => {
      const b = rssBytes(sim.pid);
      if (b !== null && phase === 'load') rss.push({ t: (now() - t0) / 1000, bytes: b });
      if (eventLoopMiddle === undefined && now() - t0 >= (SECONDS * 1000) / 2) eventLoopMiddle = readEventLoop();
    }, 250);
    const progress = setInterval(() => {
      const last = rss.at(-1);
      log(`  ${((now() - t0) / 1000).toFixed(0)} s: ${stats.requests} requests, RSS ${fmtBytes(last?.bytes)}, ${stats.unexpectedCount} unexpected`);
    }, 5000);

    const accounts = [makeAccount('sk_test_soak_flow_a', 'flow'), makeAccount('sk_test_soak_flow_b', 'flow'), makeAccount('sk_test_soak_cancel', 'cancel')];
    const workers = [];
    for (let w = 0; w < CONNECTIONS; w++) {
      const account = w % 4 === 3 ? accounts[2] : accounts[w % 2];
      workers.push(worker(base, account, w, deadline));
    }
    const probe = healthProbe(base);

    // Shutdown: once the deadline passes the workers keep going; SIGTERM lands with requests in flight.
    while (now() < deadline) await sleep(50);
    clearInterval(sampler);
    clearInterval(progress);
    const endRss = rssBytes(sim.pid);
    rss.push({ t: (now() - t0) / 1000, bytes: endRss });
    await sleep(300); // one more write of the histogram, still under load
    const eventLoop = readEventLoop();
    await sleep(20);
    shutdown.inFlightAtSigterm = inFlight;
    const sigtermAt = now();
    sigtermSent = true;
    sim.proc.kill('SIGTERM');
    const killer = setTimeout(() => sim.proc.kill('SIGKILL'), SHUTDOWN_KILL_MS);
    const exit = await sim.exited;
    clearTimeout(killer);
    shutdown.exitMs = exit.at - sigtermAt;
    shutdown.signal = exit.signal;
    shutdown.exitCode = exit.code;
    const settled = await Promise.race([Promise.all([...workers, probe]).then(() => true), sleep(5000).then(() => false)]);
    if (!settled) shutdown.hung += inFlight;

    // ---- verdict ----
    const elapsed = (sigtermAt - t0) / 1000;
    const middle = rss.reduce((best, s) => (Math.abs(s.t - SECONDS / 2) < Math.abs(best.t - SECONDS / 2) ? s : best), rss[0]);
    const growth = endRss / middle.bytes;
    if (stats.unexpectedCount > 0) failures.push(`${stats.unexpectedCount} answers or connection errors that were not injected faults`);
    // The one line a stop prints (`sim: stopped (SIGTERM): drained N requests in progress`) is expected.
    const unexpectedStderr = sim.stderr.split('\n').filter((line) => line.trim() !== '' && !/^sim: stopped \(SIGTERM\): drained \d+ requests? in progress$/.test(line));
    if (unexpectedStderr.length > 0) failures.push(`the simulator wrote to stderr:\n${unexpectedStderr.slice(0, 10).join('\n')}`);
    if (growth > 1.5) failures.push(`memory did not level off: end RSS ${fmtBytes(endRss)} is ${((growth - 1) * 100).toFixed(0)}% above the middle's ${fmtBytes(middle.bytes)}`);
    if (shutdown.signal === 'SIGKILL') failures.push(`the simulator did not exit within ${SHUTDOWN_KILL_MS} ms of SIGTERM (killed)`);
    else if (shutdown.exitMs > SHUTDOWN_TARGET_MS) failures.push(`the simulator took ${shutdown.exitMs.toFixed(0)} ms to exit after SIGTERM (target ${SHUTDOWN_TARGET_MS} ms)`);
    if (shutdown.exitCode !== 0 && shutdown.signal !== 'SIGKILL') failures.push(`the simulator exited with ${shutdown.exitCode ?? shutdown.signal} after SIGTERM`);
    if (shutdown.hung > 0) failures.push(`${shutdown.hung} in-flight request(s) got neither an answer nor a connection error after SIGTERM`);

    const all = [...stats.byOp.values()].flat();
    const ops = [...stats.byOp.entries()].map(([op, xs]) => ({ op, count: xs.length, p50: quantile(xs, 0.5), p99: quantile(xs, 0.99), max: maxOf(xs) }));
    const summary = {
      seconds: elapsed,
      connections: CONNECTIONS,
      requests: stats.requests,
      requestsPerSecond: stats.requests / elapsed,
      byOutcome: Object.fromEntries([...stats.byOutcome.entries()].sort()),
      unexpected: stats.unexpected,
      connectionErrorsDuringRun: stats.connectionErrors,
      latencyMs: { p50: quantile(all, 0.5), p99: quantile(all, 0.99), max: maxOf(all), byOperation: ops },
      slowRequests: slow.length,
      slowestRequests: [...slow].sort((a, b) => b.ms - a.ms).slice(0, 5),
      healthProbeMs: { count: health.length, p50: quantile(health, 0.5), p99: quantile(health, 0.99), max: maxOf(health) },
      eventLoopDelayMs: { firstHalf: eventLoopMiddle ?? null, wholeRun: eventLoop },
      createsByAccount: Object.fromEntries(accounts.map((a) => [a.key, a.created])),
      rssBytes: { start: startRss, middle: middle.bytes, middleAtSeconds: middle.t, end: endRss, endOverMiddle: growth, samples: rss },
      shutdown: { ...shutdown, connectionErrors: Object.fromEntries(shutdown.connectionErrors) },
      failures,
      pass: failures.length === 0,
    };

    const out = [];
    out.push('');
    out.push(`soak summary (${elapsed.toFixed(1)} s, ${CONNECTIONS} connections, scenario flaky + limits ${CAP}/${CAP}, clock manual)`);
    out.push(`  requests       ${stats.requests} (${summary.requestsPerSecond.toFixed(0)}/s)`);
    for (const [k, v] of Object.entries(summary.byOutcome)) out.push(`    ${k.padEnd(58)} ${v}`);
    out.push(`  creates        ${accounts.map((a) => `${a.key} ${a.created}${a.created > CAP ? ' (cap reached)' : ''}`).join(', ')}`);
    const eld = (x) => (x ? `p50 ${fmtMs(x.p50)}, p99 ${fmtMs(x.p99)}, max ${fmtMs(x.max)}` : 'not measured');
    out.push(`  event loop     delay in the simulator (monitorEventLoopDelay): whole run ${eld(eventLoop)}; first half ${eld(eventLoopMiddle)}`);
    out.push('  latency        client-observed:');
    out.push(`    all          p50 ${fmtMs(summary.latencyMs.p50)}, p99 ${fmtMs(summary.latencyMs.p99)}, max ${fmtMs(summary.latencyMs.max)}`);
    for (const o of ops) out.push(`    ${o.op.padEnd(12)} ${String(o.count).padStart(7)} x  p50 ${fmtMs(o.p50)}, p99 ${fmtMs(o.p99)}, max ${fmtMs(o.max)}`);
    out.push(`    health probe p50 ${fmtMs(summary.healthProbeMs.p50)}, p99 ${fmtMs(summary.healthProbeMs.p99)} (${health.length} probes, one every 100 ms)`);
    if (slow.length) {
      const when = [...new Set(slow.map((x) => x.atSeconds.toFixed(1)))].slice(0, 8).join(', ');
      out.push(`    ${slow.length} requests took over 500 ms (sent at ${when} s into the run)`);
    }
    out.push(`  RSS            start ${fmtBytes(startRss)}, middle ${fmtBytes(middle.bytes)} (at ${middle.t.toFixed(0)} s), end ${fmtBytes(endRss)}; end/middle ${growth.toFixed(2)} (limit 1.50)`);
    out.push(
      `  shutdown       SIGTERM with ${shutdown.inFlightAtSigterm} requests in flight: exit ${shutdown.signal ?? shutdown.exitCode} after ${shutdown.exitMs.toFixed(0)} ms (limit ${SHUTDOWN_TARGET_MS}); ` +
        `${shutdown.responses} answered, ${[...shutdown.connectionErrors.entries()].map(([k, v]) => `${v} ${k}`).join(', ') || 'no connection errors'}, ${shutdown.hung} hung`,
    );
    if (stats.unexpected.length) out.push('  unexpected:', ...stats.unexpected.map((u) => `    ${u}`));
    out.push(failures.length === 0 ? 'soak: PASS' : `soak: FAIL\n${failures.map((f) => `  - ${f}`).join('\n')}`);
    process.stdout.write(`${out.join('\n')}\n`);
    if (JSON_OUT) writeFileSync(JSON_OUT, `${JSON.stringify(summary, null, 2)}\n`);
    agent.destroy();
    process.exitCode = failures.length === 0 ? 0 : 1;
  } finally {
    // Whatever happened: no simulator left running, no temporary files left behind.
    if (sim && sim.proc.exitCode === null && sim.proc.signalCode === null) {
      sim.proc.kill('SIGKILL');
      await sim.exited;
    }
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((e) => {
  process.stderr.write(`soak: ${e.stack ?? e}\n`);
  process.exit(1);
});
