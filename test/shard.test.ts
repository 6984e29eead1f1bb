/**
 * A simulator as one shard of N (`--shard I/N`): what it says of itself, the values refused, and
 * its state files and transcripts, which hold one shard's accounts and record which.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import { afterAll, describe, expect, it } from 'vitest';
import { shardOfKey } from '../src/core/accounts/shard.js';
import { parseShard, ShardSpecError } from '../src/index.js';
import { compactStateFile } from '../src/persistence/compact.js';
import { StateRefusedError } from '../src/persistence/open.js';
import { createVideo, makeSim, postFault, queueFault } from './helpers.js';
import { spawn } from 'node:child_process';
import { CLI, childProcesses, cleanEnv, runCli } from './processes.js';

const children = childProcesses();
const dir = mkdtempSync(join(tmpdir(), 'sim-shard-test-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;
const file = (ext: string): string => join(dir, `f-${++files}.${ext}`);
const TOKEN = 'shard-test-token-0123456789';

/** A key (`sk_test_own_N`) that shard `index` of `count` holds: the first that hashes to it. */
function ownKey(index: number, count: number, prefix = 'sk_test_own_'): string {
  for (let n = 0; ; n++) if (shardOfKey(`${prefix}${n}`, count) === index) return `${prefix}${n}`;
}

describe('which shard a simulator is', () => {
  it('GET /_sim/health answers shard null when the simulator runs alone, and {index, count} as a shard', async () => {
    expect((await request(makeSim().app).get('/_sim/health')).body.shard).toBeNull();
    const sim = makeSim({ shard: { index: 2, count: 3 } });
    expect((await request(sim.app).get('/_sim/health')).body.shard).toEqual({ index: 2, count: 3 });
    // A reset keeps it: the shard is the deployment's, not the run's.
    expect((await request(sim.app).post('/_sim/reset').send({})).body.shard).toEqual({ index: 2, count: 3 });
  });

  it('reads I/N, and auto/N from the trailing ordinal of the host name as a StatefulSet names its pods', () => {
    expect(parseShard('1/3', 'anything')).toEqual({ index: 1, count: 3 });
    expect(parseShard('auto/3', 'sim-2')).toEqual({ index: 2, count: 3 });
    expect(parseShard('auto/4', 'video-sim-0')).toEqual({ index: 0, count: 4 });
    expect(() => parseShard('auto/3', 'sim-3')).toThrow(/host name 'sim-3' makes this shard 3, but there are 3 shards/);
    expect(() => parseShard('auto/3', 'laptop')).toThrow(/host name 'laptop' does not end with an ordinal/);
  });

  it('createSimulator refuses a shard outside 0 <= index < count', () => {
    expect(() => makeSim({ shard: { index: 3, count: 3 } })).toThrow(ShardSpecError);
    expect(() => makeSim({ shard: { index: 0, count: 0 } })).toThrow(ShardSpecError);
  });

  it.each([
    ['3/3', /'3\/3' is invalid.*shard 3 does not exist among 3 shards/],
    ['0/0', /'0\/0' is invalid.*shard count must be 1 to 10000/],
    ['x', /'x' is invalid.*expected I\/N/],
  ])('sim --shard %s exits 2 naming the value', async (value, message) => {
    const flag = await runCli(['--port', '0', '--shard', value]);
    expect(flag.status).toBe(2);
    expect(flag.stderr).toMatch(message);
    const env = await runCli(['--port', '0'], { SIM_SHARD: value });
    expect(env.status).toBe(2);
    expect(env.stderr).toMatch(/from env 'SIM_SHARD' is invalid/);
  });
});

describe('a shard needs a control token', () => {
  it.each([
    [[], ''],
    [['--control-token', 'none'], ' (--control-token none is refused for a shard)'],
    [['--host', '0.0.0.0'], ''],
  ])('sim --shard 0/2 %j exits 2 naming SIM_CONTROL_TOKEN: behind a proxy every request arrives from it', async (args, refusedNone) => {
    const run = await runCli(['--port', '0', '--shard', '0/2', ...args]);
    expect(run.status).toBe(2);
    expect(run.stderr).toContain(`sim: --shard needs a control token${refusedNone}: behind a proxy every request reaches a shard from the proxy`);
    expect(run.stderr).toContain('SIM_CONTROL_TOKEN');
  });

  it('starts with one (SIM_CONTROL_TOKEN), and its control API needs it from loopback too', async () => {
    const child = spawn(process.execPath, [CLI, '--port', '0', '--shard', '0/2'], { env: cleanEnv({ SIM_CONTROL_TOKEN: TOKEN }), stdio: ['ignore', 'pipe', 'pipe'] });
    children.add(child);
    let stdout = '';
    const url = await new Promise<string>((resolve, reject) => {
      child.stdout.on('data', (chunk: Buffer) => {
        stdout += chunk.toString();
        const m = /^sim listening on (http:\/\/\S+) /m.exec(stdout);
        if (m && /^shard: 0\/2 /m.test(stdout)) resolve(m[1] as string);
      });
      child.once('exit', (code) => reject(new Error(`exited ${code}`)));
    });
    expect((await fetch(`${url}/_sim/reset`, { method: 'POST' })).status).toBe(401);
    expect((await fetch(`${url}/_sim/reset`, { method: 'POST', headers: { Authorization: `Bearer ${TOKEN}` } })).status).toBe(200);
  });
});

describe('a key of another shard', () => {
  const shard = { index: 1, count: 3 };
  const own = ownKey(1, 3);
  const other = ownKey(0, 3);
  const WRONG = 'This simulator is shard 1 of 3, and the API key of this request belongs to shard 0: this shard holds none of its state. Send the request through the proxy in front of the shards (or to shard 0).';

  it('is 421 wrong_shard on /v1, counted globally, before the scenario judges it, and makes no account', async () => {
    const sim = makeSim({ shard });
    const res = await createVideo(sim, {}, other);
    expect(res.status).toBe(421);
    expect(res.body).toEqual({ error: { type: 'invalid_request_error', code: 'wrong_shard', param: null, message: WRONG } });
    expect(res.headers['x-request-id']).toMatch(/^req_\d{10}$/);
    // The Bearer credential as the simulator reads it: spaces and tabs around it are not part of it.
    expect((await request(sim.app).get('/v1/videos').set('Authorization', `Bearer ${other}\t`)).status).toBe(421);
    expect((await request(sim.app).get('/v1/videos').set('Authorization', `Bearer ${own}\t`)).status).toBe(200);
    expect((await request(sim.app).get('/_sim/health')).body.limits.accounts).toBe(1);
    expect((await createVideo(sim, {}, own)).status).toBe(200);
    await sim.close();
  });

  it('is 421 wrong_shard for a control call that names it, in the query (decoded, as read) or in the body alone, and changes nothing', async () => {
    const sim = makeSim({ shard });
    const encoded = other.replace(/[a-z]$/, (c) => `%${c.charCodeAt(0).toString(16)}`);
    for (const query of [`api_key=${other}`, `api_key=${encoded}`]) {
      const clock = await request(sim.app).get(`/_sim/clock?${query}`);
      expect(clock.status, query).toBe(421);
      expect(clock.body.error.code).toBe('wrong_shard');
      expect(clock.headers['x-request-id']).toMatch(/^req_\d{10}$/);
    }
    const fault = await postFault(sim, { path: '/v1/videos', status: 500, api_key: other });
    expect(fault.status).toBe(421);
    expect(fault.body.error.message).toBe(WRONG);
    const reset = await request(sim.app).post('/_sim/reset').send({ api_key: other });
    expect(reset.status).toBe(421);
    expect((await request(sim.app).get('/_sim/faults')).body.queued).toBe(0);
    expect((await request(sim.app).get('/_sim/health')).body.limits.accounts).toBe(0);
    // Its own keys are answered; an endpoint that takes no key answers as before (400 unknown_parameter).
    expect((await request(sim.app).get(`/_sim/clock?api_key=${own}`)).status).toBe(200);
    await queueFault(sim, { path: '/v1/videos', status: 500, api_key: own });
    expect((await request(sim.app).get(`/_sim/scenario?api_key=${other}`)).body.error.code).toBe('unknown_parameter');
    await sim.close();
  });

  it('cannot be injected by a fault', async () => {
    const sim = makeSim();
    const res = await postFault(sim, { path: '/v1/videos', status: 400, code: 'wrong_shard' });
    expect(res.status).toBe(400);
    expect(res.body.error.param).toBe('code');
    await sim.close();
  });

  it('is the same shard the proxy computes: shares of 0.01% each, the last shard the rest', () => {
    expect(shardOfKey('sk_test_anything', 1)).toBe(0);
    const counts = [0, 0, 0];
    for (let n = 0; n < 3000; n++) counts[shardOfKey(`sk_test_${n}`, 3)]! += 1;
    for (const c of counts) expect(c).toBeGreaterThan(850);
  });
});

describe('state files and transcripts of a shard', () => {
  it('a state file records its shard; a simulator of another shard or count is refused, one without --shard takes the file\'s', async () => {
    const path = file('jsonl');
    const first = makeSim({ state: path, shard: { index: 1, count: 3 } });
    expect((await createVideo(first, {}, ownKey(1, 3))).status).toBe(200);
    await first.close();
    expect(JSON.parse(readFileSync(path, 'utf8').split('\n')[0] as string).shard).toEqual({ index: 1, count: 3 });

    expect(() => makeSim({ scenario: undefined, clock: undefined, state: path, shard: { index: 2, count: 3 } })).toThrow(
      /holds the accounts of shard 1\/3, but this simulator is shard 2\/3/,
    );
    expect(() => makeSim({ scenario: undefined, clock: undefined, state: path, shard: { index: 1, count: 4 } })).toThrow(StateRefusedError);
    expect(() => makeSim({ scenario: undefined, clock: undefined, state: path, shard: null })).toThrow(/but this simulator is unsharded/);
    const again = makeSim({ scenario: undefined, clock: undefined, state: path });
    expect((await request(again.app).get('/_sim/health')).body.shard).toEqual({ index: 1, count: 3 });
    await again.close();
  });

  it('sim --state with the file of another shard exits 2 naming both', async () => {
    const path = file('jsonl');
    const first = makeSim({ state: path, shard: { index: 0, count: 2 } });
    expect((await createVideo(first, {}, ownKey(0, 2))).status).toBe(200);
    await first.close();
    const refused = await runCli(['--port', '0', '--state', path, '--shard', '1/2', '--control-token', TOKEN]);
    expect(refused.status).toBe(2);
    expect(refused.stderr).toContain(`${path} holds the accounts of shard 0/2, but this simulator is shard 1/2`);
  });

  it('a transcript records its shard', async () => {
    const path = file('ndjson');
    const sim = makeSim({ record: path, shard: { index: 0, count: 2 } });
    expect((await createVideo(sim, {}, ownKey(0, 2))).status).toBe(200);
    await sim.close();
    expect(JSON.parse(readFileSync(path, 'utf8').split('\n')[0] as string).shard).toEqual({ index: 0, count: 2 });
  });
});

describe('answers that do not depend on the deployment', () => {
  const A = 'sk_test_owner';
  const B = 'sk_test_neighbour';
  const tagOf = (id: string): string => id.split('_')[1] as string;

  /** What account A sees of a script of its own, /v1 and keyed control calls alike, while `noise` runs between its steps. */
  async function scriptOfA(sim: ReturnType<typeof makeSim>, noise: () => Promise<unknown>) {
    const seen: unknown[] = [];
    // A journal entry's `seq` is the simulator's arrival number, which other accounts' requests move: left out.
    const note = (res: request.Response) => seen.push({ id: res.headers['x-request-id'], status: res.status, body: res.text.replaceAll(/"seq":\d+,/g, '') });
    note(await createVideo(sim, {}, A));
    await noise();
    const list = await request(sim.app).get('/_sim/generations').query({ api_key: A });
    note(list);
    const cursor = list.body.cursor as number;
    await noise();
    note(await request(sim.app).post('/_sim/clock/advance').query({ api_key: A }).send({ seconds: 5 }));
    await noise();
    note(await request(sim.app).get('/_sim/generations').query({ api_key: A, changed_since: cursor }));
    note(await request(sim.app).get('/_sim/clock').query({ api_key: A }));
    note(await createVideo(sim, {}, A));
    note(await request(sim.app).get('/_sim/requests').query({ api_key: A }));
    return seen;
  }

  it('a control call that names an account counts its request id within that account, apart from its /v1 ids', async () => {
    const sim = makeSim();
    const seen = (await scriptOfA(sim, async () => {})) as { id: string }[];
    const tag = tagOf(seen[0]!.id);
    expect(seen.map((s) => s.id)).toEqual([
      `req_${tag}_000001`,
      `req_${tag}_sim_000001`,
      `req_${tag}_sim_000002`,
      `req_${tag}_sim_000003`,
      `req_${tag}_sim_000004`,
      `req_${tag}_000002`,
      `req_${tag}_sim_000005`,
    ]);
    // A call that names no account still counts globally.
    expect((await request(sim.app).get('/_sim/health')).headers['x-request-id']).toMatch(/^req_\d{10}$/);
  });

  it("an account's answers, control calls and cursors included, are byte-identical whatever other accounts and global reads do", async () => {
    const alone = await scriptOfA(makeSim(), async () => {});
    const crowded = makeSim();
    const noisy = await scriptOfA(crowded, async () => {
      await createVideo(crowded, {}, B);
      await request(crowded.app).get('/_sim/generations').query({ api_key: B });
      await request(crowded.app).get('/_sim/generations');
      await request(crowded.app).get('/_sim/health');
    });
    expect(noisy).toEqual(alone);
  });

  it("the cursor of one account's list counts that account's changes, and changed_since with it lists only what changed since", async () => {
    const sim = makeSim();
    await createVideo(sim, {}, A);
    const first = (await request(sim.app).get('/_sim/generations').query({ api_key: A })).body;
    for (let i = 0; i < 3; i++) await createVideo(sim, {}, B);
    const unchanged = (await request(sim.app).get('/_sim/generations').query({ api_key: A, changed_since: first.cursor })).body;
    expect(unchanged).toEqual({ object: 'list', data: [], has_more: false, cursor: first.cursor });
    await request(sim.app).post('/_sim/clock/advance').send({ seconds: 600 });
    const changed = (await request(sim.app).get('/_sim/generations').query({ api_key: A, changed_since: first.cursor, limit: 1 })).body;
    expect(changed.data.map((g: { id: string }) => g.id)).toEqual([first.data[0].id]);
    expect(changed.has_more).toBe(false);
    expect(changed.cursor).toBeGreaterThan(first.cursor);
  });

  it('gives out no control request id of an account twice across a restart, reads included, from the request lines and from a snapshot', async () => {
    const path = file('jsonl');
    const first = makeSim({ state: path });
    await createVideo(first, {}, A);
    for (let i = 0; i < 3; i++) await request(first.app).get('/_sim/clock').query({ api_key: A });
    const last = (await request(first.app).get('/_sim/generations').query({ api_key: A })).headers['x-request-id'] as string;
    expect(last).toMatch(/_sim_000004$/);
    await first.close();

    const second = makeSim({ scenario: undefined, clock: undefined, state: path });
    expect((await request(second.app).get('/_sim/clock').query({ api_key: A })).headers['x-request-id']).toBe(last.replace(/4$/, '5'));
    await second.close();
    await compactStateFile(path, () => {});
    const third = makeSim({ scenario: undefined, clock: undefined, state: path });
    expect((await request(third.app).get('/_sim/clock').query({ api_key: A })).headers['x-request-id']).toBe(last.replace(/4$/, '6'));
    await third.close();
  });
});

describe('clock moves that can be sent twice (POST /_sim/clock/advance {"to"})', () => {
  const START = '2026-01-01T00:00:00.000Z';
  const advance = (sim: ReturnType<typeof makeSim>, body: object, apiKey?: string) =>
    request(sim.app).post('/_sim/clock/advance').query(apiKey ? { api_key: apiKey } : {}).send(body);

  it('moves the clock to the instant, and leaves it there when sent again or when it is already past', async () => {
    const sim = makeSim();
    const to = '2026-01-01T00:10:00.000Z';
    const first = await advance(sim, { to });
    expect(first.status).toBe(200);
    expect(first.body).toEqual({ mode: 'manual', now: to, speed: 1 });
    expect((await advance(sim, { to })).body.now).toBe(to);
    expect((await advance(sim, { to: START })).body.now).toBe(to);
    // Transitions due by then are applied, as with seconds.
    const created = await createVideo(sim);
    await advance(sim, { to: '2026-01-01T01:00:00.000Z' });
    expect((await request(sim.app).get(`/_sim/generations/${created.body.id}`)).body.status).not.toBe('queued');
  });

  it("moves one account's clock with api_key, the others staying", async () => {
    const sim = makeSim();
    expect((await advance(sim, { to: '2026-01-01T00:00:30.000Z' }, 'sk_test_a')).body.now).toBe('2026-01-01T00:00:30.000Z');
    expect((await advance(sim, { to: '2026-01-01T00:00:10.000Z' }, 'sk_test_a')).body.now).toBe('2026-01-01T00:00:30.000Z');
    expect(sim.clock.get().now).toBe(START);
    expect(sim.clock.get('sk_test_b').now).toBe(START);
    expect(sim.clock.advanceTo(new Date('2026-01-01T00:01:00.000Z')).now).toBe('2026-01-01T00:01:00.000Z');
    expect(sim.clock.get('sk_test_a').now).toBe('2026-01-01T00:01:30.000Z');
  });

  it('refuses seconds and to together, neither, a to that is no instant, and one more than a year ahead', async () => {
    const sim = makeSim();
    const refused = async (body: object, code: string, param: string) => {
      const res = await advance(sim, body);
      expect(res.status).toBe(400);
      expect(res.body.error).toMatchObject({ code, param });
    };
    await refused({ seconds: 5, to: '2026-01-01T00:10:00.000Z' }, 'invalid_parameter', 'to');
    await refused({}, 'missing_parameter', 'seconds');
    await refused({ to: 'tomorrow' }, 'invalid_parameter', 'to');
    await refused({ to: '2027-06-01T00:00:00.000Z' }, 'invalid_parameter', 'to');
    expect(sim.clock.get().now).toBe(START);
  });
});

describe('media routable through a proxy by a path prefix of --cdn-url', () => {
  it('writes the prefix into every media URL, and still serves the files under /cdn', async () => {
    const cdnUrl = 'http://proxy.example.test:8080/shards/2/cdn';
    const sim = makeSim({ cdnUrl, shard: { index: 2, count: 3 } });
    const key = ownKey(2, 3);
    const image = (await request(sim.app).post('/v1/images').set({ Authorization: `Bearer ${key}` }).send({ prompt: 'a still' })).body;
    expect(image.url).toBe(`${cdnUrl}/images/${image.id}.png`);
    const created = (await createVideo(sim, {}, key)).body;
    const done = (await request(sim.app).post(`/_sim/generations/${created.id}/finish`)).body;
    expect(done.status).toBe('succeeded');
    expect(done.output).toEqual({ url: `${cdnUrl}/videos/${created.id}.mp4`, thumbnail_url: `${cdnUrl}/thumbnails/${created.id}.png` });
    // The proxy strips /shards/2: the instance serves the same files under /cdn.
    for (const url of [done.output.url, done.output.thumbnail_url, image.url]) {
      const path = new URL(url).pathname.replace('/shards/2', '');
      const res = await request(sim.app).get(path).set('Host', 'proxy.example.test:8080');
      expect(res.status, path).toBe(200);
    }
  });
});

describe('sim deploy nginx', () => {
  it('prints a configuration that splits keys over the shards in the order given and strips /shards/I/', async () => {
    const run = await runCli(['deploy', 'nginx', '--shards', 'http://127.0.0.1:8081,http://sim-1.sim:8080/', '--listen', '9090']);
    expect(run.status).toBe(0);
    expect(run.stdout).toContain('split_clients "$sim_bearer_key" $sim_bearer_shard {\n        50.00% 0;\n        * 1;\n    }');
    expect(run.stdout).toContain('upstream sim_shard_0 {\n        server 127.0.0.1:8081 max_fails=0;');
    expect(run.stdout).toContain('upstream sim_shard_1 {\n        server sim-1.sim:8080 max_fails=0;');
    expect(run.stdout).toContain('proxy_pass http://sim_shard_$sim_bearer_shard;');
    expect(run.stdout).toContain('proxy_next_upstream off;');
    expect(run.stdout).toContain('location /shards/1/ {\n            proxy_pass http://sim_shard_1/;');
  });

  it('listens on 127.0.0.1 for a port alone, and on a wider address only when it is written out', async () => {
    const listen = async (value: string) => /^\s*listen (\S+);$/m.exec((await runCli(['deploy', 'nginx', '--shards', 'http://127.0.0.1:8081', '--listen', value])).stdout)?.[1];
    expect(await listen('9090')).toBe('127.0.0.1:9090');
    expect(await listen('0.0.0.0:9090')).toBe('0.0.0.0:9090');
    expect(await listen('[::1]:9090')).toBe('[::1]:9090');
  });

  it("makes room for every connection the shards may hold: 2 x shards x max_hung_connections, and 1024 more; file descriptors twice that", async () => {
    const bounds = async (...args: string[]) => {
      const out = (await runCli(['deploy', 'nginx', '--shards', 'http://a:1,http://b:1,http://c:1', ...args])).stdout;
      return [Number(/^\s*worker_connections (\d+);$/m.exec(out)?.[1]), Number(/^worker_rlimit_nofile (\d+);$/m.exec(out)?.[1])];
    };
    expect(await bounds()).toEqual([2 * 3 * 1000 + 1024, 2 * (2 * 3 * 1000 + 1024)]);
    expect(await bounds('--max-hung-connections', '10')).toEqual([2 * 3 * 10 + 1024, 2 * (2 * 3 * 10 + 1024)]);
  });

  it('runs one nginx worker per two shards unless --workers says otherwise', async () => {
    const shards = (n: number) => Array.from({ length: n }, (_, i) => `http://sim-${i}.sim:8080`).join(',');
    const workers = async (...args: string[]) => /^worker_processes (\S+);$/m.exec((await runCli(['deploy', 'nginx', ...args])).stdout)?.[1];
    expect(await workers('--shards', shards(1))).toBe('1');
    expect(await workers('--shards', shards(2))).toBe('1');
    expect(await workers('--shards', shards(3))).toBe('2');
    expect(await workers('--shards', shards(2), '--workers', '4')).toBe('4');
    expect(await workers('--shards', shards(2), '--workers', 'auto')).toBe('auto');
  });

  it.each([
    [['--shards', 'nope'], /'nope' is not a URL/],
    [['--shards', 'https://sim-0:8080'], /is not an http:\/\/ URL/],
    [['--shards', 'http://sim-0:8080/api'], /has more than a host and a port/],
    [['--shards', 'http://sim-0:8080', '--listen', 'x'], /--listen: 'x' is not a port/],
    [['--shards', 'http://sim-0:8080', '--workers', '0'], /--workers: '0' is not a number of worker processes/],
    [['--shards', 'http://sim-0:8080', '--max-hung-connections', '-1'], /--max-hung-connections: '-1' is not a number of connections/],
    [[], /required option '--shards/],
  ])('%j exits 2 naming what is wrong', async (args, message) => {
    const run = await runCli(['deploy', 'nginx', ...args]);
    expect(run.status).toBe(2);
    expect(run.stderr).toMatch(message);
  });
});
