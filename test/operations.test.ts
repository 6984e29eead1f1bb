/**
 * One home per operation: every operation of openapi.yaml has its handler, its control endpoint or
 * service endpoint, and its facts (`x-sim-operation`, read by scripts/operation-table.mjs into
 * src/generated/operations.ts). An operation added to openapi.yaml without its handler fails here
 * (and does not compile); one without its facts fails the build, which the last tests run.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { OPERATION_HANDLERS } from '../src/request-path/operations.js';
import { OPERATIONS } from '../src/request-path/router.js';
import { CONTROL_ENDPOINTS, CONTROL_ROOT, controlCall } from '../src/control-client/endpoints.js';
import { sendToEveryShard } from '../src/control-client/shards.js';
import { SERVICE_ENDPOINTS } from '../src/core/journal/clientReport.js';
import { CONTROL_OPERATION_IDS, OPERATION_FACTS, OPERATION_IDS, SERVICE_OPERATION_IDS } from '../src/generated/operations.js';

const ROOT = new URL('../', import.meta.url);
const sorted = (ids: Iterable<string>): string[] => [...ids].sort();

describe('every operation of openapi.yaml', () => {
  it('is in the build\'s operation list, the generated ids and the handler table, and nothing else is', () => {
    const built = sorted(OPERATIONS.map((o) => o.operationId));
    expect(sorted(OPERATION_IDS)).toEqual(built);
    expect(sorted(Object.keys(OPERATION_HANDLERS))).toEqual(built);
    for (const id of OPERATION_IDS) expect(typeof OPERATION_HANDLERS[id], id).toBe('function');
  });

  it('is a control endpoint or a service endpoint, by its path', () => {
    expect(sorted(Object.keys(CONTROL_ENDPOINTS))).toEqual(sorted(OPERATIONS.filter((o) => o.path.startsWith(`${CONTROL_ROOT}/`)).map((o) => o.operationId)));
    expect(sorted(Object.keys(SERVICE_ENDPOINTS))).toEqual(sorted(OPERATIONS.filter((o) => o.path.startsWith('/v1/')).map((o) => o.operationId)));
    expect(sorted([...CONTROL_OPERATION_IDS, ...SERVICE_OPERATION_IDS])).toEqual(sorted(OPERATION_IDS));
  });

  it('has the method and path of the build\'s contract in its facts; it names an account exactly when it documents the 421 of another shard', () => {
    for (const operation of OPERATIONS) {
      const facts = OPERATION_FACTS[operation.operationId];
      expect([facts.method, facts.path], operation.operationId).toEqual([operation.method, operation.path]);
      expect(facts.namesAccount, operation.operationId).toBe(operation.statuses.includes(421));
    }
  });

  it('of the control API runs over shards as its fan-out says: merged, or refused for one shard to answer', async () => {
    const answer = { now: new Date(0).toISOString(), queued: 0, faults: [], verified: true, count: 0, dropped: 0, closest: [], matched: [], timed_out: false, cursor: 0, data: [], has_more: false };
    for (const id of CONTROL_OPERATION_IDS) {
      const sent: number[] = [];
      const control = controlCall(id, { id: CONTROL_ENDPOINTS[id].path.includes('{id}') ? 'vid_1' : undefined, body: { request: {}, timeout_ms: 0 } });
      const merged = sendToEveryShard(2, control, (shard) => {
        sent.push(shard);
        return Promise.resolve(answer);
      });
      if (OPERATION_FACTS[id].shards === 'one-shard') {
        await expect(merged, id).rejects.toThrow(/is not merged across shards/);
        expect(sent, id).toEqual([]);
      } else {
        await expect(merged, id).resolves.toBeDefined();
        expect(sent.includes(0) && sent.includes(1), id).toBe(true);
      }
    }
  });
});

describe('the build (scripts/operation-table.mjs)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'operation-table-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const contract = parse(readFileSync(new URL('openapi.yaml', ROOT), 'utf8')) as { paths: Record<string, unknown> };

  /** The build's table of openapi.yaml with `paths` added: its exit status, its messages and the ids it wrote. */
  function build(paths: Record<string, unknown>): { status: number | null; stderr: string; ids: string[] } {
    const from = join(dir, 'openapi.yaml');
    const out = join(dir, 'operations.ts');
    rmSync(out, { force: true });
    writeFileSync(from, stringify({ ...contract, paths: { ...contract.paths, ...paths } }));
    const run = spawnSync(process.execPath, [new URL('scripts/operation-table.mjs', ROOT).pathname, '--from', from, '--out', out], { encoding: 'utf8' });
    let ids: string[] = [];
    try {
      const text = readFileSync(out, 'utf8');
      ids = [...(/export const OPERATION_IDS = \[([^\]]*)\]/.exec(text)?.[1] ?? '').matchAll(/"(\w+)"/g)].map((m) => m[1] as string);
    } catch {
      // nothing written
    }
    return { status: run.status, stderr: run.stderr, ids };
  }
  const ok = { '200': { description: 'OK' }, '421': { description: 'Another shard' } };
  const control = (facts?: Record<string, unknown>) => ({
    get: { operationId: 'simNew', parameters: [{ name: 'api_key', in: 'query', schema: { type: 'string' } }], responses: ok, ...(facts && { 'x-sim-operation': facts }) },
  });

  it('writes an operation with its facts into the generated ids, which the handler table then lacks (so the checks above fail)', () => {
    const built = build({ '/_sim/new': control({ shards: 'one-shard' }) });
    expect(built.status).toBe(0);
    expect(built.ids).toContain('simNew');
    expect(Object.keys(OPERATION_HANDLERS)).not.toContain('simNew');
  });

  it('refuses a control operation without its fan-out over shards, naming it', () => {
    const built = build({ '/_sim/new': control() });
    expect([built.status, built.ids]).toEqual([1, []]);
    expect(built.stderr).toMatch(/GET \/_sim\/new \(simNew\): a control operation declares its fan-out over shards/);
  });

  it('refuses an unknown fact, a value a fact does not take, and a fact of the other surface', () => {
    expect(build({ '/_sim/new': control({ shards: 'everywhere' }) }).stderr).toMatch(/shards is one of proxy, .*, not "everywhere"/);
    expect(build({ '/_sim/new': control({ shards: 'one-shard', retries: true }) }).stderr).toMatch(/has no fact 'retries'/);
    expect(build({ '/_sim/new': control({ shards: 'one-shard', creates: 'video' }) }).stderr).toMatch(/creates is for service operations only/);
    const service = { post: { operationId: 'createThing', responses: ok, 'x-sim-operation': { creates: 'image', shards: 'summed' } } };
    expect(build({ '/v1/things': service }).stderr).toMatch(/POST \/v1\/things \(createThing\): x-sim-operation's shards is for control operations only/);
  });

  it('refuses an operation that names an account without documenting the 421 of another shard, and one that documents it naming none', () => {
    const withoutKey = { get: { operationId: 'simNew', responses: ok, 'x-sim-operation': { shards: 'one-shard' } } };
    expect(build({ '/_sim/new': withoutKey }).stderr).toMatch(/documents the 421 of a key of another shard but names no account/);
    const service = { get: { operationId: 'listThings', responses: { '200': { description: 'OK' } } } };
    expect(build({ '/v1/things': service }).stderr).toMatch(/names an account but does not document the 421/);
  });
});
