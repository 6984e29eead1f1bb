#!/usr/bin/env node
// The simulator's memory bounds under hostile load (`npm run soak:bounds`):
//
//   node bench/bounds.mjs [--only keys,bodies] [--keys 1000000] [--bodies 5000] [--json FILE]
//
// Each run starts a fresh `node dist/cli.js --port 0 --scenario fast --clock manual` (the default
// limits: max_stored_generations 100,000, max_accounts 10,000, journal_size 10,000), sends its
// load over keep-alive connections to 127.0.0.1 only, and prints resident memory (VmRSS) over time:
//   - keys: --keys distinct API keys, one request each (every tenth a create, the others a list),
//     pipelined on 8 connections. Memory must level off once max_accounts is reached: it fails when
//     resident memory at the end is more than 25% above that at the middle, when an answer is not
//     200, or when GET /_sim/health does not show max_accounts accounts and the rest evicted.
//   - bodies: --bodies POST /v1/videos of exactly 1 MiB (a prompt far over its 4,000 characters,
//     so each is answered 400), on 4 connections. Fails when resident memory grows by 100 MB or
//     more from before the first body to after the last, or an answer is not that 400.
// Exit 1 when a run fails. Needs the built code (`npm run build --silent`). For comparisons:
// `--cli PATH` runs another build's dist/cli.js, `--node-args "--cpu-prof"` passes flags to node.
// (`npm run soak:bounds -- --keys 100000` passes options through npm.)
import net from 'node:net';
import { writeFileSync } from 'node:fs';
import { CLI, fmtBytes, log, now, option, request, requireBuilt, rssBytes, sleep, startServer, stopServer } from './lib.mjs';

const RUNS = ['keys', 'bodies'];
const only = option('--only', RUNS.join(',')).split(',');
const KEYS = Number(option('--keys', '1000000'));
const BODIES = Number(option('--bodies', '5000'));
const JSON_OUT = option('--json', null);
const SIM = option('--cli', CLI);
const NODE_ARGS = option('--node-args', '').split(' ').filter(Boolean);
if (only.some((r) => !RUNS.includes(r)) || !(KEYS >= 1) || !(BODIES >= 1)) {
  process.stderr.write('usage: node bench/bounds.mjs [--only keys,bodies] [--keys N] [--bodies N] [--json FILE] [--cli PATH] [--node-args ARGS]\n');
  process.exit(2);
}
const SIM_ARGS = ['--port', '0', '--scenario', 'fast', '--clock', 'manual'];
const MAX_ACCOUNTS = 10_000; // the default of limits.max_accounts
const BODY_BYTES = 1024 * 1024;

/**
 * Sends `total` requests over `connections` keep-alive sockets to 127.0.0.1, up to `depth` in
 * flight on each (HTTP/1.1 pipelining), and calls `onAnswer(status, body, i)` for each answer.
 * `requestOf(i)` gives the bytes of request i. Resolves once every request is answered.
 */
function pipelined(port, { total, connections, depth, requestOf, onAnswer }) {
  let next = 0;
  let answered = 0;
  return new Promise((resolve, reject) => {
    for (let c = 0; c < Math.min(connections, total); c++) {
      const socket = net.connect(port, '127.0.0.1');
      const waiting = [];
      let buffer = Buffer.alloc(0);
      const fill = () => {
        while (waiting.length < depth && next < total) {
          const i = next++;
          waiting.push(i);
          socket.write(requestOf(i));
        }
        if (waiting.length === 0) socket.end();
      };
      socket.on('connect', fill);
      socket.on('error', reject);
      socket.on('data', (chunk) => {
        buffer = buffer.length === 0 ? chunk : Buffer.concat([buffer, chunk]);
        for (;;) {
          const headEnd = buffer.indexOf('\r\n\r\n');
          if (headEnd < 0) break;
          const head = buffer.subarray(0, headEnd).toString('latin1');
          const length = Number(/\r\ncontent-length: *(\d+)/i.exec(head)?.[1] ?? 0);
          if (buffer.length < headEnd + 4 + length) break;
          const status = Number(head.slice(9, 12));
          const body = buffer.subarray(headEnd + 4, headEnd + 4 + length).toString('utf8');
          buffer = buffer.subarray(headEnd + 4 + length);
          onAnswer(status, body, waiting.shift());
          if (++answered === total) resolve();
        }
        fill();
      });
    }
  });
}

/** Samples the server's VmRSS every second; `note()` adds what the run has done so far. */
function sampler(pid, t0, note) {
  const samples = [];
  const timer = setInterval(() => {
    const bytes = rssBytes(pid);
    if (bytes === null) return;
    const s = { t: (now() - t0) / 1000, bytes, ...note() };
    samples.push(s);
    if (samples.length % 5 === 1) log(`  ${s.t.toFixed(0).padStart(4)} s: RSS ${fmtBytes(bytes)}, ${Object.entries(note()).map(([k, v]) => `${k} ${v.toLocaleString('en')}`).join(', ')}`);
  }, 1000);
  return { samples, stop: () => clearInterval(timer) };
}

async function settledRss(pid) {
  await sleep(1000);
  return rssBytes(pid);
}

async function healthOf(url) {
  const r = await request(`${url}/_sim/health`);
  if (r.status !== 200) throw new Error(`health: ${r.status} ${r.text}`);
  return r.json;
}

// ---- a million keys ------------------------------------------------------------------------------

async function runKeys() {
  const sim = await startServer(SIM, SIM_ARGS, { name: 'sim', nodeArgs: NODE_ARGS });
  const failures = [];
  try {
    log(`keys: ${KEYS.toLocaleString('en')} distinct API keys, one request each (every tenth a create), 8 connections x 32 pipelined`);
    const startRss = await settledRss(sim.pid);
    const createBody = JSON.stringify({ model: 'video-3.2', prompt: 'A paper boat drifting down a gutter stream in the rain.' });
    const requestOf = (i) =>
      i % 10 === 0
        ? `POST /v1/videos HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer sk_test_k${i}\r\nContent-Type: application/json\r\nContent-Length: ${createBody.length}\r\n\r\n${createBody}`
        : `GET /v1/videos?limit=1 HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer sk_test_k${i}\r\n\r\n`;
    let done = 0;
    const unexpected = [];
    const t0 = now();
    const rss = sampler(sim.pid, t0, () => ({ keys: done }));
    await pipelined(sim.port, {
      total: KEYS,
      connections: 8,
      depth: 32,
      requestOf,
      onAnswer: (status, body, i) => {
        done++;
        if (status !== 200 && unexpected.length < 5) unexpected.push(`request ${i}: ${status} ${body.slice(0, 200)}`);
      },
    });
    const seconds = (now() - t0) / 1000;
    rss.stop();
    const endRss = await settledRss(sim.pid);
    const health = await healthOf(sim.url);
    const middle = rss.samples.reduce((best, s) => (Math.abs(s.keys - KEYS / 2) < Math.abs(best.keys - KEYS / 2) ? s : best), rss.samples[0] ?? { bytes: endRss, keys: 0 });
    const growth = endRss / middle.bytes;
    log(`  ${KEYS.toLocaleString('en')} keys in ${seconds.toFixed(1)} s (${Math.round(KEYS / seconds).toLocaleString('en')}/s); RSS at rest ${fmtBytes(startRss)}, at ${middle.keys.toLocaleString('en')} keys ${fmtBytes(middle.bytes)}, at the end ${fmtBytes(endRss)} (end/middle ${growth.toFixed(2)}, limit 1.25)`);
    log(`  health limits: ${JSON.stringify(health.limits)}`);
    if (unexpected.length) failures.push(`answers other than 200: ${unexpected.join('; ')}`);
    if (KEYS >= 4 * MAX_ACCOUNTS && growth > 1.25) failures.push(`memory did not level off: ${fmtBytes(endRss)} at the end, ${fmtBytes(middle.bytes)} at the middle`);
    const expectedAccounts = Math.min(KEYS, MAX_ACCOUNTS);
    if (health.limits?.accounts !== expectedAccounts || health.limits?.evicted_accounts !== KEYS - expectedAccounts) {
      failures.push(`health shows ${health.limits?.accounts} accounts and ${health.limits?.evicted_accounts} evicted; expected ${expectedAccounts} and ${KEYS - expectedAccounts}`);
    }
    return { keys: KEYS, seconds, rssBytes: { rest: startRss, middle: middle.bytes, middleAtKeys: middle.keys, end: endRss, endOverMiddle: growth, samples: rss.samples }, health: health.limits, failures };
  } finally {
    await stopServer(sim);
  }
}

// ---- 5,000 rejected 1 MiB bodies ------------------------------------------------------------------

async function runBodies() {
  const sim = await startServer(SIM, SIM_ARGS, { name: 'sim', nodeArgs: NODE_ARGS });
  const failures = [];
  try {
    log(`bodies: ${BODIES.toLocaleString('en')} POST /v1/videos of exactly 1 MiB (prompt too long: 400), 4 connections`);
    // Warm up with small requests of the same kind, so that the reading at rest includes the code.
    const small = JSON.stringify({ model: 'video-3.2', prompt: 'x'.repeat(4001) });
    for (let i = 0; i < 50; i++) await request(`${sim.url}/v1/videos`, { method: 'POST', headers: { Authorization: 'Bearer sk_test_bodies' }, body: small });
    const startRss = await settledRss(sim.pid);
    const prefix = '{"model":"video-3.2","prompt":"';
    const suffix = '"}';
    const body = Buffer.from(`${prefix}${'x'.repeat(BODY_BYTES - prefix.length - suffix.length)}${suffix}`);
    const head = Buffer.from(`POST /v1/videos HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer sk_test_bodies\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`);
    const whole = Buffer.concat([head, body]);
    let done = 0;
    const unexpected = [];
    const t0 = now();
    const rss = sampler(sim.pid, t0, () => ({ bodies: done }));
    await pipelined(sim.port, {
      total: BODIES,
      connections: 4,
      depth: 1,
      requestOf: () => whole,
      onAnswer: (status, text, i) => {
        done++;
        if ((status !== 400 || !text.includes('"param":"prompt"')) && unexpected.length < 5) unexpected.push(`body ${i}: ${status} ${text.slice(0, 200)}`);
      },
    });
    const seconds = (now() - t0) / 1000;
    rss.stop();
    const endRss = await settledRss(sim.pid);
    const peak = Math.max(endRss, ...rss.samples.map((s) => s.bytes));
    const growth = endRss - startRss;
    const health = await healthOf(sim.url);
    log(`  ${BODIES.toLocaleString('en')} bodies (${fmtBytes(BODIES * BODY_BYTES)}) in ${seconds.toFixed(1)} s; RSS before ${fmtBytes(startRss)}, after ${fmtBytes(endRss)} (+${fmtBytes(growth)}, limit +100 MB), peak ${fmtBytes(peak)}`);
    if (unexpected.length) failures.push(`answers other than 400 param prompt: ${unexpected.join('; ')}`);
    if (growth >= 100 * 1024 * 1024) failures.push(`resident memory grew by ${fmtBytes(growth)} (limit 100 MB)`);
    return { bodies: BODIES, bodyBytes: body.length, seconds, rssBytes: { before: startRss, after: endRss, growth, peak, samples: rss.samples }, health: health.limits, failures };
  } finally {
    await stopServer(sim);
  }
}

// ---- main -----------------------------------------------------------------------------------------

async function main() {
  requireBuilt();
  const results = {};
  if (only.includes('keys')) results.keys = await runKeys();
  if (only.includes('bodies')) results.bodies = await runBodies();
  const failures = Object.entries(results).flatMap(([run, r]) => r.failures.map((f) => `${run}: ${f}`));
  process.stdout.write(failures.length === 0 ? 'bounds: PASS\n' : `bounds: FAIL\n${failures.map((f) => `  - ${f}`).join('\n')}\n`);
  if (JSON_OUT) writeFileSync(JSON_OUT, `${JSON.stringify(results, null, 2)}\n`);
  process.exitCode = failures.length === 0 ? 0 : 1;
}

main().catch((e) => {
  process.stderr.write(`bounds: ${e.stack ?? e}\n`);
  process.exit(1);
});
