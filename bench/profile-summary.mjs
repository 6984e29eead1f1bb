#!/usr/bin/env node
// Summarises a V8 .cpuprofile (from `node --cpu-prof`): where the time goes, by package or file,
// by function (self time), and the heaviest call paths (inclusive time) through the project's code.
//
//   node bench/profile-summary.mjs FILE.cpuprofile [--top 25] [--from MS] [--to MS]
//                                  [--within FUNCTION] [--callers FUNCTION]
//
// --from / --to keep only samples in that window (milliseconds from the profile's start);
// --within keeps only samples with FUNCTION on the stack; --callers adds FUNCTION's caller chains.
import { readFileSync } from 'node:fs';

const argv = process.argv.slice(2);
const file = argv.find((a, i) => !a.startsWith('--') && !/^\d+$/.test(a) && !['--within', '--callers'].includes(argv[i - 1]));
const option = (name, fallback) => {
  const i = argv.indexOf(name);
  return i >= 0 ? Number(argv[i + 1]) : fallback;
};
if (!file) {
  process.stderr.write('usage: node bench/profile-summary.mjs FILE.cpuprofile [--top N] [--from MS] [--to MS]\n');
  process.exit(2);
}
const TOP = option('--top', 25);
const FROM = option('--from', 0);
const TO = option('--to', Infinity);
const profile = JSON.parse(readFileSync(file, 'utf8'));
const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
const parent = new Map();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);

// Sample weights: the time delta that follows each sample.
const self = new Map();
let t = profile.startTime;
let total = 0;
for (let i = 0; i < profile.samples.length; i++) {
  const dt = (profile.timeDeltas[i] ?? 0) / 1000;
  t += profile.timeDeltas[i] ?? 0;
  const at = (t - profile.startTime) / 1000;
  if (at < FROM || at > TO) continue;
  self.set(profile.samples[i], (self.get(profile.samples[i]) ?? 0) + dt);
  total += dt;
}

// --within NAME: keep only the samples whose stack contains a function called NAME.
const within = argv.includes('--within') ? argv[argv.indexOf('--within') + 1] : null;
if (within) {
  for (const id of [...self.keys()]) {
    let inside = false;
    for (let cur = id; cur !== undefined && !inside; cur = parent.get(cur)) inside = nodes.get(cur).callFrame.functionName === within;
    if (!inside) {
      total -= self.get(id);
      self.delete(id);
    }
  }
}

function where(url) {
  if (!url) return '(native / V8)';
  const nm = url.lastIndexOf('node_modules/');
  if (nm >= 0) {
    const rest = url.slice(nm + 'node_modules/'.length).split('/');
    return `npm:${rest[0].startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0]}`;
  }
  if (url.startsWith('node:')) return url;
  const m = /\/(dist|src|bench)\/(.*)$/.exec(url);
  return m ? `${m[1]}/${m[2]}` : url;
}
const label = (n) => {
  const cf = n.callFrame;
  const name = cf.functionName || '(anonymous)';
  return `${name} ${where(cf.url)}${cf.url ? `:${cf.lineNumber + 1}` : ''}`;
};

const byPlace = new Map();
const byFn = new Map();
for (const [id, ms] of self) {
  const n = nodes.get(id);
  const cf = n.callFrame;
  const place = ['(garbage collector)', '(program)', '(idle)'].includes(cf.functionName) ? cf.functionName : where(cf.url);
  byPlace.set(place, (byPlace.get(place) ?? 0) + ms);
  const l = label(n);
  byFn.set(l, (byFn.get(l) ?? 0) + ms);
}

// Inclusive time per project function (dist/ or src/), counted once per sample stack.
const incl = new Map();
for (const [id, ms] of self) {
  const seen = new Set();
  for (let cur = id; cur !== undefined; cur = parent.get(cur)) {
    const n = nodes.get(cur);
    if (!/\/(dist|src)\//.test(n.callFrame.url) || /node_modules/.test(n.callFrame.url)) continue;
    const l = label(n);
    if (seen.has(l)) continue;
    seen.add(l);
    incl.set(l, (incl.get(l) ?? 0) + ms);
  }
}

// Inclusive time by the outermost npm package on the stack (who called into the dependencies).
const outer = new Map();
for (const [id, ms] of self) {
  let found;
  for (let cur = id; cur !== undefined; cur = parent.get(cur)) {
    const w = where(nodes.get(cur).callFrame.url);
    if (w.startsWith('npm:')) found = w;
  }
  if (found) outer.set(found, (outer.get(found) ?? 0) + ms);
}

const pct = (ms) => `${((100 * ms) / total).toFixed(1).padStart(5)}%`;
const show = (title, map) => {
  process.stdout.write(`\n${title}\n`);
  for (const [k, ms] of [...map.entries()].sort((a, b) => b[1] - a[1]).slice(0, TOP)) {
    process.stdout.write(`  ${ms.toFixed(0).padStart(7)} ms ${pct(ms)}  ${k}\n`);
  }
};
process.stdout.write(`${file}: ${total.toFixed(0)} ms sampled${FROM || TO < Infinity ? ` (window ${FROM}-${TO} ms)` : ''}${within ? ` within ${within}` : ''}\n`);
show('self time by package / file', byPlace);
show('inclusive time by outermost npm package on the stack', outer);
show('self time by function', byFn);
show('inclusive time of project functions (dist/, src/)', incl);

// --callers NAME: inclusive time of NAME by the chain of its callers (3 frames up).
const callersOf = argv.includes('--callers') ? argv[argv.indexOf('--callers') + 1] : null;
if (callersOf) {
  const chains = new Map();
  for (const [id, ms] of self) {
    const stack = [];
    for (let cur = id; cur !== undefined; cur = parent.get(cur)) stack.push(nodes.get(cur));
    const at = stack.findLastIndex((n) => n.callFrame.functionName === callersOf);
    if (at < 0) continue;
    const chain = stack.slice(at, at + 4).map(label).join(' <- ');
    chains.set(chain, (chains.get(chain) ?? 0) + ms);
  }
  show(`inclusive time of ${callersOf} by caller chain`, chains);
}
