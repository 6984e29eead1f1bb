#!/usr/bin/env node
// The simulator's memory bounds under hostile load (`npm run soak:bounds`):
//
//   node bench/bounds.mjs [--only costs,fill,keys,bodies] [--text ascii,emoji] [--state] [--rounds 2] [--keys 1000000] [--bodies 5000] [--cost TEXT] [--json FILE]
//
// Each run starts a fresh `node dist/cli.js --port 0 --scenario fast --clock manual` (the default
// limits, read from GET /_sim/scenario), sends its load over keep-alive connections to 127.0.0.1
// only, and prints resident memory (VmRSS) over time:
//   - costs: what one more stored thing costs, in a process of its own for each (limits raised out
//     of reach, preloading gc-on-signal.mjs): resident memory and live JavaScript heap after a full
//     collection, before and after --count of them (default 8,000), per thing. A stored generation
//     with a short prompt, and with a 4,000-character prompt and negative prompt of ASCII and of
//     emoji; an answer stored under an Idempotency-Key (a keyed create, less an unkeyed one); a
//     fault with every string at its maximum length; an account with a 255-character key; a
//     journal record of a 16 KB path, and of a 16 KB path with a body at the bounds of what a
//     record keeps of one (ASCII and emoji). Informational: it fails only when an answer is
//     unexpected. `--cost TEXT` measures only the things whose name holds TEXT.
//   - fill: every bound filled at once with the largest values a client may send, on the manual
//     clock where nothing resolves unless asked, once with ASCII text and once with emoji (--text),
//     with a state file kept beside it when --state is given: max_accounts accounts with
//     255-character keys; as many more 255-character keys named by control calls (`GET
//     /_sim/clock?api_key=`, each counted apart); max_queued_faults faults with every string
//     at its maximum length; max_stored_generations video generations in flight over 1,000 keys,
//     each with a 4,000-character prompt and negative prompt and a 255-character Idempotency-Key,
//     then as many creates again, all refused (429); then, on one more key, journal_size creates of
//     the same size, each resolved by an advance of that key's clock and evicted by the next, so
//     that the journal holds journal_size negative prompts the store no longer holds and the
//     idempotency keys hold max_idempotency_keys answers (--rounds times journal_size creates:
//     memory levels off well within the first); then, on that key, journal_size requests to a
//     16 KB path (refused) with a body at the bounds of what a journal record keeps of one (8
//     fields, each name of 32 characters and each value of 64 characters of JSON, kept as they
//     are), so that the journal ends holding journal_size of its largest records. Fails when the process's resident memory ever
//     passes 800 MiB (900 MiB with --state; its high-water mark, VmHWM), or an answer is not the
//     one expected.
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
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterGc, BENCH_DIR, CLI, fmtBytes, log, now, option, peakRssBytes, request, requireBuilt, rssBytes, sleep, startServer, stopServer } from './lib.mjs';

const RUNS = ['costs', 'fill', 'keys', 'bodies'];
const TEXTS = ['ascii', 'emoji'];
const only = option('--only', RUNS.join(',')).split(',');
const texts = option('--text', TEXTS.join(',')).split(',');
const ROUNDS = Number(option('--rounds', '2'));
const COUNT = Number(option('--count', '8000'));
const KEYS = Number(option('--keys', '1000000'));
const BODIES = Number(option('--bodies', '5000'));
const JSON_OUT = option('--json', null);
const COST_ONLY = option('--cost', null);
const WITH_STATE = process.argv.includes('--state');
const SIM = option('--cli', CLI);
const NODE_ARGS = option('--node-args', '').split(' ').filter(Boolean);
if (only.some((r) => !RUNS.includes(r)) || texts.some((t) => !TEXTS.includes(t)) || !(KEYS >= 1) || !(BODIES >= 1) || !(ROUNDS >= 1) || !(COUNT >= 100)) {
  process.stderr.write(
    'usage: node bench/bounds.mjs [--only costs,fill,keys,bodies] [--text ascii,emoji] [--state] [--rounds N] [--count N] [--keys N] [--bodies N] [--cost TEXT] [--json FILE] [--cli PATH] [--node-args ARGS]\n',
  );
  process.exit(2);
}
const SIM_ARGS = ['--port', '0', '--scenario', 'fast', '--clock', 'manual'];
const MAX_ACCOUNTS = 10_000; // the default of limits.max_accounts
const BODY_BYTES = 1024 * 1024;
const MIB = 1024 * 1024;
/** The fill's bound on resident memory: well under 1 GiB, so that a container limit of 1.5 GiB leaves a margin. */
const FILL_LIMIT = WITH_STATE ? 900 * MIB : 800 * MIB;

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

// ---- every bound filled with the largest values ------------------------------------------------------

/** A string of `length` characters (code points): ASCII, or emoji (two UTF-16 units, four UTF-8 bytes each), `tag` first. */
function textOf(kind, length, tag = '') {
  const fill = kind === 'emoji' ? '\u{1F600}' : 'a';
  return `${tag}${fill.repeat(length - [...tag].length)}`;
}

/**
 * A `POST` to a 16 KB path (no route: 404) with a body at the bounds of what a journal record keeps
 * of one (docs/limits.md): 8 fields, each name of 32 characters and each value of 64 characters of
 * JSON, kept as they are.
 */
function journalBody(kind) {
  const body = Object.fromEntries(Array.from({ length: 8 }, (_, f) => [textOf(kind, kind === 'emoji' ? 17 : 32, `f${f}`), textOf(kind, kind === 'emoji' ? 31 : 62)]));
  return (i, key) => rawRequest('POST', `/v1/videos/${textOf('ascii', 16000, `${i}_`)}`, { key, body });
}

/** The bytes of one HTTP/1.1 request to 127.0.0.1. */
function rawRequest(method, path, { key, body, headers = {} } = {}) {
  const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
  const lines = [`${method} ${path} HTTP/1.1`, 'Host: 127.0.0.1'];
  if (key) lines.push(`Authorization: Bearer ${key}`);
  for (const [name, value] of Object.entries(headers)) lines.push(`${name}: ${value}`);
  if (payload) lines.push('Content-Type: application/json', `Content-Length: ${payload.length}`);
  const head = Buffer.from(`${lines.join('\r\n')}\r\n\r\n`);
  return payload ? Buffer.concat([head, payload]) : head;
}

async function runFill(kind) {
  const dir = WITH_STATE ? mkdtempSync(join(tmpdir(), 'sim-bounds-')) : null;
  const args = dir ? [...SIM_ARGS, '--state', join(dir, 'state.jsonl')] : SIM_ARGS;
  const sim = await startServer(SIM, args, { name: 'sim', nodeArgs: NODE_ARGS });
  const failures = [];
  try {
    const limits = (await request(`${sim.url}/_sim/scenario`)).json.limits;
    log(`fill (${kind}${dir ? ', with a state file' : ''}): limits ${JSON.stringify(limits)}`);
    const startRss = await settledRss(sim.pid);
    const t0 = now();
    let phase = 'accounts';
    let done = 0;
    const rss = sampler(sim.pid, t0, () => ({ [phase]: done }));
    const unexpected = [];
    /** Sends `total` requests and checks each answer's status (`expect(i)`: the status, or a predicate). */
    const send = async (name, total, requestOf, expect, { connections = 4, depth = 16 } = {}) => {
      phase = name;
      done = 0;
      await pipelined(sim.port, {
        total,
        connections,
        depth,
        requestOf,
        onAnswer: (status, body, i) => {
          done++;
          const wanted = expect(i);
          const ok = typeof wanted === 'function' ? wanted(status, body) : status === wanted;
          if (!ok && unexpected.length < 5) unexpected.push(`${name} ${i}: ${status} ${body.slice(0, 200)}`);
        },
      });
    };
    const keyOf = (name, i) => textOf('ascii', 255, `sk_test_${name}${i}_`);
    const holders = 1000;
    const fillers = limits.max_accounts - holders - 1;
    const prompt = (i) => textOf(kind, 4000, `${i} `);
    const idemKey = (i) => textOf('ascii', 255, `k${i}-`);
    const create = (key, i) => rawRequest('POST', '/v1/videos', { key, body: { model: 'video-3.2', prompt: prompt(i), negative_prompt: prompt(i) }, headers: { 'Idempotency-Key': idemKey(i) } });
    const full = (status, body) => status === 429 && body.includes('limits.max_stored_generations');

    // Accounts with the longest keys: all but the holders' and one more.
    await send('accounts', fillers, (i) => rawRequest('GET', '/v1/videos?limit=1', { key: keyOf('filler', i) }), () => 200);
    // As many longest keys named by control calls, which count their requests apart.
    await send('control keys', limits.max_accounts, (i) => rawRequest('GET', `/_sim/clock?api_key=${keyOf('watched', i)}`), () => 200);
    // The fault queue full of the largest faults, for an account that never sends a request.
    const flags = Array.from({ length: 3 }, () => ({ code: textOf(kind, 100), severity: 'info', message: textOf(kind, 200) }));
    await send(
      'faults',
      limits.max_queued_faults + 100,
      (i) =>
        rawRequest('POST', '/_sim/faults', {
          body: { path: textOf(kind, 200, '/v1/videos/'), status: 500, message: textOf(kind, 1000, `${i} `), times: 100000, api_key: textOf(kind, 255, `sk_test_never${i}_`), outcome: { flags } },
        }),
      (i) => (i < limits.max_queued_faults ? 200 : 400),
      { connections: 1, depth: 32 },
    );
    // The store full of generations in flight, over many keys; then as many creates refused.
    await send('store', 2 * limits.max_stored_generations, (i) => create(keyOf('holder', i % holders), i), (i) => (i < limits.max_stored_generations ? 200 : full), { connections: 1, depth: 32 });
    // One holder's clock moves: its generations resolve and make room for the last key's creates,
    // each resolved by an advance of that key's clock and evicted by the next create.
    await send('advance', 1, () => rawRequest('POST', '/_sim/clock/advance', { body: { seconds: 3600, api_key: keyOf('holder', 0) } }), () => 200, { connections: 1 });
    const last = keyOf('last', 0);
    const base = 2 * limits.max_stored_generations;
    await send(
      'journal',
      2 * ROUNDS * limits.journal_size,
      (i) => (i % 2 === 0 ? create(last, base + i / 2) : rawRequest('POST', '/_sim/clock/advance', { body: { seconds: 3600, api_key: last } })),
      () => 200,
      { connections: 1, depth: 32 },
    );
    // The journal's largest records: a 16 KB path and a body at the bounds of what a record keeps
    // of one (docs/limits.md); refused (no route takes POST there), or 429 once the key's bucket
    // is spent: the journal keeps both alike.
    const largest = journalBody(kind);
    await send(
      'journal bodies',
      limits.journal_size,
      (i) => largest(i, last),
      () => (status) => status === 404 || status === 429,
      { connections: 1, depth: 32 },
    );
    const seconds = (now() - t0) / 1000;
    rss.stop();
    const endRss = await settledRss(sim.pid);
    const peak = peakRssBytes(sim.pid);
    const health = await healthOf(sim.url);
    const queued = (await request(`${sim.url}/_sim/faults`)).json.faults.length;
    log(`  ${seconds.toFixed(1)} s; RSS at rest ${fmtBytes(startRss)}, at the end ${fmtBytes(endRss)}, at most ${fmtBytes(peak)} (VmHWM; limit ${fmtBytes(FILL_LIMIT)})`);
    log(`  health limits: ${JSON.stringify(health.limits)}; faults queued ${queued}`);
    if (unexpected.length) failures.push(`unexpected answers: ${unexpected.join('; ')}`);
    if (peak === null || peak >= FILL_LIMIT) failures.push(`resident memory reached ${fmtBytes(peak)} (limit ${fmtBytes(FILL_LIMIT)})`);
    if (health.limits.accounts !== limits.max_accounts || health.limits.stored_generations !== limits.max_stored_generations || queued !== limits.max_queued_faults) {
      failures.push(`not every bound was filled: ${JSON.stringify(health.limits)}, ${queued} faults`);
    }
    return { text: kind, state: dir !== null, limits, seconds, rssBytes: { rest: startRss, end: endRss, peak, samples: rss.samples }, health: health.limits, failures };
  } finally {
    await stopServer(sim);
    if (dir) rmSync(dir, { recursive: true, force: true });
  }
}

// ---- what one more stored thing costs ----------------------------------------------------------------


/** `count` things made by `requestOf(i)` (each answered `status`) in a fresh process: resident memory and live heap per thing. */
async function costOf(name, scenarioPath, count, requestOf, status) {
  const hook = pathToFileURL(join(BENCH_DIR, 'gc-on-signal.mjs')).href;
  const sim = await startServer(SIM, ['--port', '0', '--scenario', scenarioPath, '--clock', 'manual'], { name: 'sim', nodeArgs: ['--expose-gc', '--import', hook, ...NODE_ARGS] });
  const unexpected = [];
  try {
    const send = (total, of, wanted) =>
      pipelined(sim.port, {
        total,
        connections: 1,
        depth: 16,
        requestOf: of,
        onAnswer: (got, body, i) => {
          if (got !== wanted && unexpected.length < 3) unexpected.push(`${name} ${i}: ${got} ${body.slice(0, 200)}`);
        },
      });
    // The same requests first (other keys, other ids), so that compiled code and young space are in both readings.
    await send(200, (i) => requestOf(count + i, 'sk_test_warmup'), status);
    const before = await afterGc(sim, settledRss);
    await send(count, (i) => requestOf(i, 'sk_test_cost'), status);
    const after = await afterGc(sim, settledRss);
    const cost = { name, count, rssBytes: (after.rss - before.rss) / count, heapBytes: (after.heapUsed - before.heapUsed) / count };
    log(`  ${name}: ${fmtBytes(cost.rssBytes)} resident, ${fmtBytes(cost.heapBytes)} of live heap each`);
    return { ...cost, unexpected };
  } finally {
    await stopServer(sim);
  }
}

async function runCosts() {
  const dir = mkdtempSync(join(tmpdir(), 'sim-bounds-'));
  // Every limit out of reach; the journal keeps one record (but where its records are measured),
  // so that each figure is the thing alone.
  const scenarioOf = (journalSize) => {
    const path = join(dir, `costs-${journalSize}.yaml`);
    writeFileSync(
      path,
      'extends: fast\nname: costs\ndescription: fast with every limit out of reach.\n' +
        `limits: { max_stored_generations: 10000000, max_accounts: 10000000, journal_size: ${journalSize}, max_idempotency_keys: 10000000, max_queued_faults: 10000000 }\n`,
    );
    return path;
  };
  const alone = scenarioOf(1);
  log(`costs: ${COUNT.toLocaleString('en')} of each, limits out of reach, a process for each`);
  const video = (kind, keyed) => (i, key) => {
    const text = kind === 'short' ? `A paper boat drifting down a gutter stream, ${i}.` : textOf(kind, 4000, `${i} `);
    const body = kind === 'short' ? { model: 'video-3.2', prompt: text } : { model: 'video-3.2', prompt: text, negative_prompt: text };
    return rawRequest('POST', '/v1/videos', { key, body, headers: keyed ? { 'Idempotency-Key': `${key}-${i}` } : {} });
  };
  const fault = (kind) => (i) => {
    const flags = Array.from({ length: 3 }, () => ({ code: textOf(kind, 100), severity: 'info', message: textOf(kind, 200) }));
    return rawRequest('POST', '/_sim/faults', {
      body: { path: textOf(kind, 200, '/v1/videos/'), status: 500, message: textOf(kind, 1000, `${i} `), times: 100000, api_key: textOf(kind, 255, `sk_test_${i}_`), outcome: { flags } },
    });
  };
  const results = [];
  const failures = [];
  try {
    for (const [name, requestOf, status, scenarioPath] of [
      ['generation, short prompt', video('short', false), 200],
      ['generation, 4,000-character ASCII prompt and negative prompt', video('ascii', false), 200],
      ['generation, 4,000-character emoji prompt and negative prompt', video('emoji', false), 200],
      ['generation as above, ASCII, with an Idempotency-Key', video('ascii', true), 200],
      ['generation as above, emoji, with an Idempotency-Key', video('emoji', true), 200],
      ['fault, every string at its maximum, ASCII', fault('ascii'), 200],
      ['fault, every string at its maximum, emoji', fault('emoji'), 200],
      ['account, 255-character key', (i) => rawRequest('GET', '/v1/videos?limit=1', { key: textOf('ascii', 255, `sk_test_${i}_`) }), 200],
      ['journal record of a 16 KB path', (i, key) => rawRequest('GET', `/v1/videos/${textOf('ascii', 16000, `${i}_`)}`, { key }), 404, scenarioOf(10_000_000)],
      ['journal record of a 16 KB path and a body at the kept bounds, ASCII', journalBody('ascii'), 404, scenarioOf(10_000_000)],
      ['journal record of a 16 KB path and a body at the kept bounds, emoji', journalBody('emoji'), 404, scenarioOf(10_000_000)],
    ].filter(([name]) => COST_ONLY === null || name.includes(COST_ONLY))) {
      const cost = await costOf(name, scenarioPath ?? alone, COUNT, requestOf, status);
      results.push(cost);
      if (cost.unexpected.length) failures.push(`unexpected answers: ${cost.unexpected.join('; ')}`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const by = (name) => results.find((r) => r.name === name);
  for (const kind of ['ASCII', 'emoji']) {
    const keyed = by(`generation as above, ${kind}, with an Idempotency-Key`);
    const plain = by(`generation, 4,000-character ${kind} prompt and negative prompt`);
    if (keyed === undefined || plain === undefined) continue;
    log(`  an answer stored under an Idempotency-Key (${kind}): ${fmtBytes(keyed.rssBytes - plain.rssBytes)} resident, ${fmtBytes(keyed.heapBytes - plain.heapBytes)} of live heap`);
  }
  return { count: COUNT, results, failures };
}

// ---- main -----------------------------------------------------------------------------------------

async function main() {
  requireBuilt();
  const results = {};
  if (only.includes('costs')) results.costs = await runCosts();
  if (only.includes('fill')) for (const kind of texts) results[`fill ${kind}`] = await runFill(kind);
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
