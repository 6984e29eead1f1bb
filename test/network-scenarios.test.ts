/**
 * Network faults drawn by a scenario (`http.faults` items with `network`): checked on load naming
 * the item's field, drawn in the one draw per request from the account's own stream (so a
 * manual-clock run over real sockets is byte-identical run after run), and the bundled
 * `unreliable-network` scenario's shares.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import { afterAll, describe, expect, it } from 'vitest';
import { createSimulator, loadScenario, validateScenarioFile } from '../src/index.js';
import { PROMPT, expectShare, fastWith, makeSim } from './helpers.js';
import { rawRequest } from './rawHttp.js';

const dir = mkdtempSync(join(tmpdir(), 'sim-network-scenarios-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let counter = 0;

function yamlFile(text: string): string {
  const path = join(dir, `s${++counter}.yaml`);
  writeFileSync(path, text);
  return path;
}

const withFault = (item: string) => yamlFile(`extends: fast\nname: t\nhttp:\n  faults:\n    - ${item}\n`);

describe('a scenario file with network faults', () => {
  it.each<[string, string, string]>([
    ['a kind field with another kind', '{ network: hang, gateway_status: 502, probability: 0.1 }', "http.faults[0].gateway_status: gateway_status goes with network 'gateway', not 'hang'."],
    ['slow before the request takes effect', '{ network: slow, phase: before, probability: 0.1 }', 'http.faults[0].phase: '],
    ['an item with neither status nor network', '{ probability: 0.1 }', 'http.faults[0]: expected either status (an error) or network (a network failure), got neither'],
    ['an item with both', '{ status: 500, network: reset, probability: 0.1 }', 'http.faults[0]: expected either status (an error) or network (a network failure), not both'],
    ['hang_ms over 600,000', '{ network: hang, hang_ms: 600001, probability: 0.1 }', 'http.faults[0].hang_ms: '],
    ['an unknown kind', '{ network: explode, probability: 0.1 }', 'http.faults[0].network: '],
    ['bytes_per_second 0', '{ network: slow, bytes_per_second: 0, probability: 0.1 }', 'http.faults[0].bytes_per_second: '],
    ['gateway_status 500', '{ network: gateway, gateway_status: 500, probability: 0.1 }', 'http.faults[0].gateway_status: '],
  ])('with %s is refused, naming the item and its field', (_what, item, problem) => {
    const problems = validateScenarioFile(withFault(item));
    expect(problems).toHaveLength(1);
    expect(problems[0]?.startsWith(problem)).toBe(true);
  });

  it('with a network item and its own fields is valid', () => {
    expect(validateScenarioFile(withFault('{ path: /v1/videos, method: POST, network: hang, hang_ms: 5000, phase: after, probability: 0.1 }'))).toEqual([]);
  });
});

/** A scenario whose /v1 requests meet every kind, often. */
const NETWORKED = fastWith((s) => {
  s.name = 'networked';
  s.http.faults = [
    { status: 500, probability: 0.1 },
    { path: '/v1/*', network: 'reset', phase: 'after', probability: 0.1 },
    { path: '/v1/*', network: 'reset', probability: 0.05 },
    { path: '/v1/*', network: 'close', phase: 'after', probability: 0.05 },
    { path: '/v1/*', network: 'hang', hang_ms: 1, probability: 0.05 },
    { path: '/v1/videos', method: 'POST', network: 'truncate', probability: 0.1 },
    { path: '/v1/*', network: 'gateway', gateway_status: 503, phase: 'after', probability: 0.05 },
    { path: '/v1/*', network: 'slow', bytes_per_second: 10_485_760, probability: 0.05 },
  ];
});

/** A client's run over real sockets: creates and lists of two accounts, one at a time. Resolves to the transcript's lines (header left out: it names the port) and the journal. */
async function run(file: string): Promise<{ lines: string[]; journal: unknown; ends: string[] }> {
  const sim = makeSim({ scenario: NETWORKED, record: file });
  const url = await sim.listen(0);
  const ends: string[] = [];
  try {
    for (let i = 0; i < 60; i++) {
      const key = i % 3 === 0 ? 'sk_test_bob' : 'sk_test_alice';
      const create = i % 2 === 0;
      const body = JSON.stringify({ model: 'video-3.2', prompt: `${PROMPT} ${i}` });
      const answer = await rawRequest(url, {
        method: create ? 'POST' : 'GET',
        path: '/v1/videos',
        // One Host for both runs, whatever their ports: the addresses in answers (and the transcript's `host`) follow it.
        headers: { host: 'localhost:8080', authorization: `Bearer ${key}`, connection: 'close', ...(create && { 'content-type': 'application/json', 'idempotency-key': `k${i}` }) },
        ...(create && { body }),
      });
      ends.push(`${answer.end} ${answer.status ?? '-'} ${answer.body.length}`);
    }
    const journal = (await request(sim.app).get('/_sim/requests').query({ limit: 1000 })).body.data;
    return { lines: readFileSync(file, 'utf8').split('\n').slice(1), journal, ends };
  } finally {
    await sim.close();
  }
}

describe('network faults drawn by a scenario', () => {
  it('a manual-clock run over real sockets is byte-identical run after run: transcript, journal and what the client saw', async () => {
    const first = await run(join(dir, 'first.jsonl'));
    const second = await run(join(dir, 'second.jsonl'));
    expect(second.lines).toEqual(first.lines);
    expect(second.journal).toEqual(first.journal);
    expect(second.ends).toEqual(first.ends);
    // Every kind was drawn, beside the status faults of the same draw.
    const faults = (first.journal as { fault?: string }[]).map((e) => e.fault ?? '');
    for (const kind of ['reset', 'close', 'hang', 'truncate', 'gateway', 'slow']) expect(faults.some((f) => f.includes(`network ${kind}`))).toBe(true);
    expect(faults.some((f) => f.includes('fault: 500'))).toBe(true);
  });

  it("the bundled 'unreliable-network' loses about the shares its file states, on /v1, after default's timings", () => {
    const scenario = loadScenario('unreliable-network');
    const base = loadScenario('default');
    expect(scenario.stages).toEqual(base.stages);
    expect(scenario.http.latency).toEqual(base.http.latency);
    const sim = createSimulator({ scenario: 'unreliable-network', clock: 'manual' });
    const n = 6000;
    for (let i = 0; i < n; i++) {
      sim.app.answer({ method: 'GET', path: '/v1/videos', query: '', headers: { authorization: `Bearer sk_test_u${i % 40}` }, body: null });
    }
    const seen: Record<string, number> = {};
    for (const record of sim.core.journal.toState()) {
      const name = record.network ? `${record.network.kind} ${record.network.phase}` : 'none';
      seen[name] = (seen[name] ?? 0) + 1;
    }
    expectShare('reset after', (seen['reset after'] ?? 0) / n, 0.02, 0.006);
    expectShare('reset before', (seen['reset before'] ?? 0) / n, 0.01, 0.005);
    expectShare('hang before', (seen['hang before'] ?? 0) / n, 0.01, 0.005);
    expectShare('truncate after', (seen['truncate after'] ?? 0) / n, 0.01, 0.005);
    expectShare('gateway after', (seen['gateway after'] ?? 0) / n, 0.01, 0.005);
    expect(Object.keys(seen).sort()).toEqual(['gateway after', 'hang before', 'none', 'reset after', 'reset before', 'truncate after']);
  });

  it("the 'flaky' scenario draws no network fault", () => {
    expect(loadScenario('flaky').http.faults.every((f) => f.network === undefined)).toBe(true);
  });
});
