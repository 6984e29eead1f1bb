/**
 * A simulator as one shard of N (`--shard I/N`): what it says of itself, the values refused, and
 * its state files and transcripts, which hold one shard's accounts and record which.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import { afterAll, describe, expect, it } from 'vitest';
import { parseShard, ShardSpecError } from '../src/index.js';
import { StateRefusedError } from '../src/state/open.js';
import { createVideo, makeSim } from './helpers.js';
import { childProcesses, cleanEnv, runCli } from './processes.js';

childProcesses();
const dir = mkdtempSync(join(tmpdir(), 'sim-shard-test-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;
const file = (ext: string): string => join(dir, `f-${++files}.${ext}`);

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
    ['0/0', /'0\/0' is invalid.*shard count must be 1 or more/],
    ['x', /'x' is invalid.*expected I\/N/],
  ])('sim --shard %s exits 2 naming the value', async (value, message) => {
    const flag = await runCli(['--port', '0', '--shard', value], cleanEnv());
    expect(flag.status).toBe(2);
    expect(flag.stderr).toMatch(message);
    const env = await runCli(['--port', '0'], cleanEnv({ SIM_SHARD: value }));
    expect(env.status).toBe(2);
    expect(env.stderr).toMatch(/from env 'SIM_SHARD' is invalid/);
  });
});

describe('state files and transcripts of a shard', () => {
  it('a state file records its shard; a simulator of another shard or count is refused, one without --shard takes the file\'s', async () => {
    const path = file('jsonl');
    const first = makeSim({ state: path, shard: { index: 1, count: 3 } });
    expect((await createVideo(first)).status).toBe(200);
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
    await createVideo(first);
    await first.close();
    const refused = await runCli(['--port', '0', '--state', path, '--shard', '1/2'], cleanEnv());
    expect(refused.status).toBe(2);
    expect(refused.stderr).toContain(`${path} holds the accounts of shard 0/2, but this simulator is shard 1/2`);
  });

  it('a transcript records its shard', async () => {
    const path = file('ndjson');
    const sim = makeSim({ record: path, shard: { index: 0, count: 2 } });
    await createVideo(sim);
    await sim.close();
    expect(JSON.parse(readFileSync(path, 'utf8').split('\n')[0] as string).shard).toEqual({ index: 0, count: 2 });
  });
});
