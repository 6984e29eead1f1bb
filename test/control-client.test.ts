/**
 * The typed control client (README, "Produce every state"): `SimulatorControl` over HTTP and the
 * in-process handle's control methods run the same script and give the same answers.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import { afterEach, describe, expect, it } from 'vitest';
import { OPERATIONS } from '../src/request-path/router.js';
import { CONTROL_ENDPOINTS, CONTROL_ROOT, controlPath } from '../src/control-client/endpoints.js';
import { DASHBOARD_NETWORK_FAULTS } from '../src/http/dashboard.js';
import { SimulatorControl, SimulatorControlError, type SimulatorControlApi } from '../src/index.js';
import { createMany, createVideo, expectNoInternalErrors, makeSim } from './helpers.js';

const KEY = 'sk_test_client';
const BASE = 'http://sim.test';

type Sim = ReturnType<typeof makeSim>;
const started: Sim[] = [];
afterEach(async () => {
  for (const sim of started.splice(0)) {
    expectNoInternalErrors(sim);
    await sim.close();
  }
});

/** A fresh simulator (addresses fixed, so that both kinds answer the same bytes) and its control methods. */
async function setUp(kind: 'http' | 'in-process', options: Parameters<typeof makeSim>[0] = {}): Promise<{ sim: Sim; control: SimulatorControlApi }> {
  const sim = makeSim({ baseUrl: BASE, ...options });
  started.push(sim);
  if (kind === 'in-process') return { sim, control: sim };
  await sim.listen(0);
  return { sim, control: new SimulatorControl({ baseUrl: `http://127.0.0.1:${sim.port}` }) };
}

/** What a call threw, as `[status, code]`. */
async function refusal(call: () => unknown): Promise<[number, string | undefined]> {
  try {
    await call();
  } catch (e) {
    if (!(e instanceof SimulatorControlError)) throw e;
    expect(e.body?.error.message).toEqual(expect.any(String));
    return [e.status, e.code];
  }
  throw new Error('expected the call to be refused');
}

/** One script through every control method; answers what each call answered (or threw). */
async function script(kind: 'http' | 'in-process'): Promise<unknown[]> {
  const { sim, control } = await setUp(kind);
  const seen: unknown[] = [];
  seen.push(await control.health());
  const [first, second, third] = (await createMany(sim, 3, {}, KEY)) as [string, string, string];
  seen.push(await control.generations.list({ apiKey: KEY, limit: 2 }));
  seen.push(await control.generations.advance(first));
  seen.push(await refusal(() => control.generations.fail(first, 'output_rejected')));
  seen.push(await control.generations.fail(first, 'internal_error'));
  seen.push(await refusal(() => control.generations.cancel(first)));
  seen.push(await control.generations.finish(second));
  seen.push(await control.generations.cancel(third));
  seen.push(await refusal(() => control.generations.get('vid_missing')));
  seen.push(await control.generations.get(second));
  seen.push(await control.clock.advance(2.5, KEY));
  seen.push(await control.clock.get(KEY));
  seen.push(await control.clock.advance(1));
  seen.push(await control.clock.get());
  seen.push(await control.faults.queue({ path: '/v1/videos', method: 'POST', status: 429, api_key: KEY }));
  seen.push(await control.faults.list());
  const faulted = await createVideo(sim, {}, KEY);
  seen.push(faulted.status);
  seen.push(await control.faults.queue({ path: '/v1/videos', status: 500, times: 2 }));
  seen.push(await control.faults.clear(KEY));
  seen.push(await control.faults.clear());
  seen.push(await control.report(KEY));
  seen.push(await refusal(() => control.reset({ scenario: 'no-such-scenario' })));
  seen.push(await refusal(() => control.transcript()));
  seen.push(await control.reset({ apiKey: KEY }));
  seen.push(await control.generations.list({ apiKey: KEY }));
  seen.push(await control.reset({ seed: 99 }));
  return seen;
}

describe('SimulatorControl and the in-process control methods', () => {
  it('give the same answers to the same script, refusals included', async () => {
    const overHttp = await script('http');
    const inProcess = await script('in-process');
    expect(overHttp).toEqual(inProcess);
    // The script exercised what it meant to.
    expect(inProcess[3]).toEqual([400, 'invalid_parameter']);
    expect((inProcess[4] as { status: string }).status).toBe('failed');
    expect(inProcess[5]).toEqual([400, 'generation_resolved']);
    expect((inProcess[6] as { status: string }).status).toBe('succeeded');
    expect((inProcess[7] as { status: string }).status).toBe('canceled');
    expect(inProcess[8]).toEqual([404, 'resource_not_found']);
    expect((inProcess[10] as { now: string }).now).toBe('2026-01-01T00:00:02.500Z');
    expect(inProcess[16]).toBe(429);
    expect(inProcess[18]).toEqual({ queued: 2 });
    expect(inProcess[19]).toEqual({ queued: 0 });
    expect((inProcess[20] as { requests: number }).requests).toBe(4);
    expect(inProcess[21]).toEqual([400, 'invalid_parameter']);
    expect(inProcess[22]).toEqual([404, 'unknown_route']);
    expect((inProcess[24] as { data: unknown[] }).data).toEqual([]);
    expect((inProcess[25] as { seed: number }).seed).toBe(99);
  });

  it.each(['http', 'in-process'] as const)('(%s) record their state-changing calls in the transcript, which transcript() answers', async (kind) => {
    const dir = mkdtempSync(join(tmpdir(), 'sim-client-'));
    try {
      const { sim, control } = await setUp(kind, { record: join(dir, 'run.jsonl') });
      const [id] = (await createMany(sim, 1, {}, KEY)) as [string];
      await control.clock.advance(0.5);
      await control.generations.finish(id);
      const lines = (await control.transcript()).trim().split('\n').map((l) => JSON.parse(l) as { method?: string; path?: string });
      expect(lines.slice(1).map((l) => `${l.method} ${l.path}`)).toEqual(['POST /v1/videos', 'POST /_sim/clock/advance', `POST /_sim/generations/${id}/finish`]);
      await sim.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('SimulatorControl', () => {
  it('sends Authorization: Bearer <token> when given one, and no Authorization otherwise', async () => {
    const sim = makeSim();
    started.push(sim);
    const url = await sim.listen(0);
    const sent: (string | null)[] = [];
    const recording: typeof fetch = (input, init) => {
      sent.push(new Headers(init?.headers).get('authorization'));
      return fetch(input, init);
    };
    await new SimulatorControl({ baseUrl: `${url}/`, token: 's3cret', fetch: recording }).clock.advance(1);
    await new SimulatorControl({ baseUrl: url, fetch: recording }).health();
    expect(sent).toEqual(['Bearer s3cret', null]);
  });

  it('throws a SimulatorControlError with the status and the error body', async () => {
    const { control } = await setUp('http');
    const error = await Promise.resolve(control.generations.advance('vid_nope')).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SimulatorControlError);
    const e = error as SimulatorControlError;
    expect([e.status, e.code, e.body]).toEqual([
      404,
      'resource_not_found',
      { error: { type: 'invalid_request_error', code: 'resource_not_found', param: 'id', message: "No generation 'vid_nope' is stored in the simulator." } },
    ]);
    expect(e.message).toBe("POST /_sim/generations/vid_nope/advance answered 404 resource_not_found: No generation 'vid_nope' is stored in the simulator.");
  });

  it('keeps a body that is not in the error shape as text', async () => {
    const answer: typeof fetch = async () => new Response('<html>Bad gateway</html>', { status: 502 });
    const error = await new SimulatorControl({ baseUrl: 'http://127.0.0.1:9', fetch: answer })
      .health()
      .then(() => undefined, (e: unknown) => e as SimulatorControlError);
    expect(error).toBeInstanceOf(SimulatorControlError);
    if (!error) return;
    expect([error.status, error.body, error.text, error.code]).toEqual([502, null, '<html>Bad gateway</html>', undefined]);
  });

  it('refuses a baseUrl that is not an http(s) address', () => {
    expect(() => new SimulatorControl({ baseUrl: 'localhost:8080' })).toThrow(/needs a baseUrl such as 'http:\/\/localhost:8080'/);
  });
});

describe('The control endpoints of src/control-client/endpoints.ts', () => {
  it('are every control operation of openapi.yaml, each with its method and path', () => {
    const documented = OPERATIONS.filter((o) => o.path.startsWith(`${CONTROL_ROOT}/`)).map((o) => [o.operationId, o.method.toUpperCase(), o.path]);
    const written = Object.entries(CONTROL_ENDPOINTS).map(([id, e]) => [id, e.method, `${CONTROL_ROOT}/${e.path}`]);
    const byId = (a: string[], b: string[]) => ((a[0] as string) < (b[0] as string) ? -1 : 1);
    expect(written.sort(byId)).toEqual(documented.sort(byId));
  });

  it('are what the dashboard is served as ui/addresses.js, with the forms of media files and the kinds of network fault', async () => {
    const sim = makeSim({ controlToken: 'dashboard-token-0123456789' });
    started.push(sim);
    const res = await request(sim.app).get('/_sim/ui/addresses.js');
    expect([res.status, res.headers['content-type']]).toEqual([200, 'text/javascript; charset=utf-8']);
    const served: Record<string, unknown> = {};
    // The served module, run as the dashboard runs it (its exports collected instead of exported).
    // oxlint-disable-next-line typescript/no-implied-eval
    new Function('served', res.text.replaceAll(/^export const (\w+) =/gm, 'served.$1 ='))(served);
    expect(served).toEqual({
      CONTROL_ENDPOINTS,
      MEDIA_ROOT: '/cdn',
      MEDIA_FORMS: { video: 'videos/{id}.mp4', thumbnail: 'thumbnails/{id}.png', image: 'images/{id}.png' },
      CONTROL_ROOT: '/_sim',
      SHARD_PREFIX: '/shards/{i}',
      NETWORK_FAULTS: DASHBOARD_NETWORK_FAULTS,
    });
  });

  it('percent-encode a generation id into the path', () => {
    expect(controlPath('simAdvanceGeneration', 'vid/1 ?')).toBe('/_sim/generations/vid%2F1%20%3F/advance');
    expect(() => controlPath('simGeneration')).toThrow(TypeError);
  });
});
