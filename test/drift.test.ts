/**
 * `sim drift`: against the simulator itself every row is confirmed or not observed; against fake
 * services that each depart from a few assumptions, exactly those rows are contradicted, with
 * their evidence. The fakes are the simulator behind a small node:http proxy that alters requests
 * or answers. All traffic stays on 127.0.0.1.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { ASSUMPTIONS, SCHEMA_ROW } from '../src/drift/assumptions.js';
import { DEFAULT_PRICES } from '../src/drift/prices.js';
import { probeTable } from '../src/drift/probes.js';
import { formatReport, reportJson } from '../src/drift/report.js';
import { runDrift, type DriftReport } from '../src/drift/run.js';
import { loadScenario } from '../src/scenarios/load.js';
import { generationsOf, makeSim } from './helpers.js';
import { freePort } from './processes.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const CLI = join(ROOT, 'dist', 'cli.js');
const ALL_PAID = DEFAULT_PRICES.imageCents + 3 * DEFAULT_PRICES.videoCents;

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (closers.length > 0) await closers.pop()?.();
});
const dir = mkdtempSync(join(tmpdir(), 'sim-drift-test-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/**
 * The simulator on the default scenario and the manual clock, listening on 127.0.0.1 under that
 * address (so that the media URLs in its answers name 127.0.0.1 too).
 */
async function startSim() {
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const sim = makeSim({ scenario: 'default', clock: 'manual', baseUrl: url });
    try {
      await sim.listen(port, '127.0.0.1');
    } catch (e) {
      // Another process took the port in between: take another.
      if ((e as NodeJS.ErrnoException).code === 'EADDRINUSE' && attempt < 5) continue;
      throw e;
    }
    closers.push(() => sim.close());
    return { sim, url };
  }
}

/** A port nothing listens on (just closed). */
const ids = (report: DriftReport, result: string) => report.rows.filter((r) => r.result === result).map((r) => r.id).sort();

/** Rows never observable against a fresh account, whatever the spend limit. */
const NEVER_OBSERVED = [
  'pipeline-stages',
  'auth-keys-by-scenario',
  'auth-revoked-key-code',
  'idempotency-retention',
  'retry-after-429',
  'status-stage-mapping',
  'pipeline-stage-names',
  'video-field-fill-order',
  'keyframe-ref-ready',
  'compliance-verified-iff-block',
  'compliance-flag-shape',
  'output-media',
  'compliance-stage-values',
  'cost-pricing',
  'claim-linking-per-request',
];
/** Rows only the paid probes observe (on a fresh account). */
const PAID_ONLY = [
  'list-order-ascending',
  'cancel-not-cancelable',
  'image-ready-sync',
  'idempotency-scope',
  'idempotency-replay-header',
  'idempotency-key-reused-400',
  'image-status-ready',
  'image-model-name',
  'negative-prompt-as-submitted',
];

describe('sim drift against the simulator itself', () => {
  it('confirms every free probe and leaves the rest not observed, with no spend limit', async () => {
    const { sim, url } = await startSim();
    const report = await runDrift({ target: url, apiKey: 'sk_test_drift' });
    expect(report.exitCode).toBe(0);
    expect(report.aborted).toBeUndefined();
    expect(report.rows.map((r) => r.id)).toEqual([...ASSUMPTIONS.map((a) => a.id), SCHEMA_ROW]);
    expect(ids(report, 'contradicted')).toEqual([]);
    expect(ids(report, 'not_observed')).toEqual([...NEVER_OBSERVED, ...PAID_ONLY].sort());
    for (const row of report.rows.filter((r) => r.result === 'not_observed')) expect(row.reason).toMatch(/\w/);
    expect(report.rows.find((r) => r.id === 'image-ready-sync')?.reason).toBe('the paid image probe (2 cents) was skipped for the spend limit');
    expect(report.spend).toEqual({
      limitCents: 0,
      countedCents: 0,
      items: [],
      skipped: [
        { probe: 'image', cents: 2 },
        { probe: 'video', cents: 22 },
        { probe: 'idempotent create and replay', cents: 44 },
      ],
    });
    expect(report.cancels).toEqual([]);
    expect(await generationsOf(sim, 'sk_test_drift')).toEqual([]);
    expect(sim.logs).toEqual([]);
    const text = formatReport(report);
    expect(text).toContain('skipped for the spend limit: image (2 cents), video (22 cents), idempotent create and replay (44 cents)');
    expect(text.trimEnd().split('\n').at(-1)).toBe('spend counted: 0 cents (limit 0 cents; each request that may create counted at its full list price)');
  });

  it('runs every paid probe within a limit that covers them, and every video it made ends canceled', async () => {
    const { sim, url } = await startSim();
    const report = await runDrift({ target: url, apiKey: 'sk_test_drift', spendLimitCents: ALL_PAID });
    expect(report.exitCode).toBe(0);
    expect(ids(report, 'contradicted')).toEqual([]);
    expect(ids(report, 'not_observed')).toEqual([...NEVER_OBSERVED].sort());
    expect(report.spend.countedCents).toBe(68);
    expect(report.spend.skipped).toEqual([]);
    expect(report.spend.items.map((i) => [i.what, i.cents, i.unexpected])).toEqual([
      ['the image probe', 2, false],
      ['the video probe', 22, false],
      ['the idempotent create', 22, false],
      ['the replay of the idempotent create', 22, false],
    ]);
    const generations = await generationsOf(sim, 'sk_test_drift');
    expect(generations.map((g) => g.status)).toEqual(['canceled', 'canceled']);
    expect(report.cancels).toEqual(generations.map((g) => ({ id: g.id, ok: true, status: 200, detail: 'canceled' })));
    expect(sim.logs).toEqual([]);
  });

  it('runs the paid probes in order while they fit, and says which were skipped', async () => {
    const { sim, url } = await startSim();
    const report = await runDrift({ target: url, apiKey: 'sk_test_drift', spendLimitCents: 30 });
    expect(report.exitCode).toBe(0);
    expect(report.spend.countedCents).toBe(24);
    expect(report.spend.skipped).toEqual([{ probe: 'idempotent create and replay', cents: 44 }]);
    expect(ids(report, 'not_observed')).toEqual(
      [...NEVER_OBSERVED, 'list-order-ascending', 'idempotency-scope', 'idempotency-replay-header', 'idempotency-key-reused-400'].sort(),
    );
    expect((await generationsOf(sim, 'sk_test_drift')).map((g) => g.status)).toEqual(['canceled']);
  });

  it('observes keyframes, compliance and media on an account whose generations have succeeded', async () => {
    const { sim, url } = await startSim();
    for (let i = 0; i < 3; i++) {
      const res = await fetch(`${url}/v1/videos`, {
        method: 'POST',
        headers: { Authorization: 'Bearer sk_test_busy', 'Content-Type': 'application/json' },
        body: JSON.stringify({ model: 'video-3.2', prompt: `A paper boat on a gutter stream, take ${i}.` }),
      });
      expect(res.status).toBe(200);
      sim.clock.advance(5, 'sk_test_busy');
    }
    sim.clock.advance(700, 'sk_test_busy');
    const report = await runDrift({ target: url, apiKey: 'sk_test_busy' });
    expect(report.exitCode).toBe(0);
    const row = (id: string) => report.rows.find((r) => r.id === id);
    // Three listed videos with keyframes (the default scenario makes most keyframe-first) and compliance.
    expect(row('compliance-verified-iff-block')).toMatchObject({ result: 'confirmed', checks: 3 });
    expect(row('output-media')).toMatchObject({ result: 'confirmed', checks: 2 });
    expect(row('list-order-ascending')).toMatchObject({ result: 'confirmed', checks: 1 });
    expect(row('keyframe-ref-ready')?.result).toBe('confirmed');
    expect(row('compliance-flag-shape')).toMatchObject({ result: 'not_observed', reason: 'no video seen carried a compliance flag' });
  });
});

// ---- fakes: the simulator behind a proxy that departs from a few assumptions ----

interface FakeRequest {
  method: string;
  pathname: string;
  query: URLSearchParams;
  headers: Record<string, string>;
  /** The body parsed as JSON (undefined when it is not JSON); re-sent as JSON when set. */
  json: unknown;
  raw: string;
}
interface FakeAnswer {
  status: number;
  headers: Record<string, string>;
  /** The answer parsed as JSON; sent as JSON. */
  json: unknown;
}
interface Departures {
  request?(req: FakeRequest): void;
  answer?(req: FakeRequest, answer: FakeAnswer): void;
}

const HOP = new Set(['content-length', 'connection', 'keep-alive', 'transfer-encoding', 'date']);

async function fakeService(departures: Departures): Promise<string> {
  const { url: upstream } = await startSim();
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      void (async () => {
        const raw = Buffer.concat(chunks).toString('utf8');
        const url = new URL(req.url ?? '/', 'http://fake');
        const request: FakeRequest = { method: req.method ?? 'GET', pathname: url.pathname, query: url.searchParams, headers: {}, json: undefined, raw };
        for (const name of ['authorization', 'content-type', 'idempotency-key']) {
          const value = req.headers[name];
          if (typeof value === 'string') request.headers[name] = value;
        }
        try {
          request.json = JSON.parse(raw);
        } catch {
          request.json = undefined;
        }
        departures.request?.(request);
        const query = request.query.toString();
        const hasBody = request.method !== 'GET' && request.method !== 'HEAD' && (raw !== '' || request.method === 'POST');
        const upstreamRes = await fetch(`${upstream}${request.pathname}${query ? `?${query}` : ''}`, {
          method: request.method,
          headers: request.headers,
          body: hasBody ? (request.json !== undefined ? JSON.stringify(request.json) : raw) : undefined,
        });
        const text = await upstreamRes.text();
        const answer: FakeAnswer = { status: upstreamRes.status, headers: {}, json: text === '' ? undefined : JSON.parse(text) };
        upstreamRes.headers.forEach((value, name) => {
          if (!HOP.has(name)) answer.headers[name] = value;
        });
        departures.answer?.(request, answer);
        res.writeHead(answer.status, answer.headers);
        res.end(answer.json === undefined ? '' : JSON.stringify(answer.json));
      })().catch((e: unknown) => {
        res.writeHead(599);
        res.end(String(e));
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  closers.push(() => new Promise((resolve) => server.close(() => resolve())));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

type Json = Record<string, unknown>;
const errorIn = (answer: FakeAnswer): Json | undefined => (answer.json as { error?: Json } | undefined)?.error;
const isVideo = (v: unknown): v is Json => v !== null && typeof v === 'object' && (v as Json).object === 'video' && 'prompt' in (v as Json);
const ROUTES = [/^\/v1\/videos$/, /^\/v1\/images$/, /^\/v1\/videos\/[^/]+$/];

const FAKES: { name: string; departures: Departures; spendLimitCents: number; contradicted: string[] }[] = [
  {
    name: 'answers 201 on create and lists newest first',
    spendLimitCents: ALL_PAID,
    departures: {
      answer(req, answer) {
        if (req.method === 'POST' && req.pathname === '/v1/videos' && answer.status === 200) answer.status = 201;
        if (req.method === 'GET' && req.pathname === '/v1/videos' && answer.status === 200) (answer.json as { data: unknown[] }).data.reverse();
      },
    },
    // A 201 is also a status openapi.yaml does not document.
    contradicted: ['success-200', 'list-order-ascending', SCHEMA_ROW],
  },
  {
    name: 'answers 422 to invalid values and leaves their param out',
    spendLimitCents: 0,
    departures: {
      answer(_req, answer) {
        const error = errorIn(answer);
        if (error?.code === 'invalid_parameter') {
          answer.status = 422;
          delete error.param;
        }
      },
    },
    contradicted: ['video-prompt-bounds', 'image-prompt-bounds', 'list-limit-range-400', 'list-limit-decimal', 'list-after-unknown-400', 'error-param-present', SCHEMA_ROW],
  },
  {
    name: 'accepts unknown parameters and pattern-checks ids',
    spendLimitCents: 0,
    departures: {
      request(req) {
        req.query.delete('drift_probe_unknown');
        if (req.json !== null && typeof req.json === 'object' && !Array.isArray(req.json)) delete (req.json as Json).drift_probe_unknown;
      },
      answer(req, answer) {
        const id = /^\/v1\/videos\/([^/]+)$/.exec(req.pathname)?.[1];
        if (id !== undefined && !/^vid_[A-Za-z0-9]{24}$/.test(id)) {
          answer.status = 400;
          answer.json = { error: { type: 'invalid_request_error', code: 'invalid_parameter', message: 'Malformed id.', param: 'id' } };
        }
      },
    },
    contradicted: ['unknown-parameter-400', 'cancel-body', 'ids-not-pattern-checked'],
  },
  {
    name: 'leaves out the X-RateLimit headers and adds a field to the video object',
    spendLimitCents: ALL_PAID,
    departures: {
      answer(_req, answer) {
        for (const name of Object.keys(answer.headers)) if (name.startsWith('x-ratelimit-')) delete answer.headers[name];
        const body = answer.json as Json | undefined;
        if (isVideo(body)) body.seed = 7;
        if (body?.object === 'list') for (const v of body.data as unknown[]) if (isVideo(v)) v.seed = 7;
      },
    },
    contradicted: ['ratelimit-limit-header', 'ratelimit-remaining-header', 'ratelimit-reset-header', SCHEMA_ROW],
  },
  {
    name: 'judges the route before the key and answers 405 to a method a route does not have',
    spendLimitCents: 0,
    departures: {
      answer(req, answer) {
        const known = ROUTES.some((r) => r.test(req.pathname));
        if (!known && answer.status === 401) {
          answer.status = 404;
          answer.json = { error: { type: 'invalid_request_error', code: 'unknown_route', message: 'No such route.', param: null } };
        }
        if (known && errorIn(answer)?.code === 'unknown_route') {
          answer.status = 405;
          answer.json = { error: { type: 'invalid_request_error', code: 'method_not_allowed', message: 'Method not allowed.', param: null } };
        }
      },
    },
    // method_not_allowed is no code of the catalogue, and 405 no status of openapi.yaml.
    contradicted: ['check-order', 'unknown-route-404', 'error-code-catalogue', SCHEMA_ROW],
  },
  {
    name: 'replays without Idempotent-Replayed, answers 409 to a reused key, and sends no X-Request-Id with a 401',
    spendLimitCents: ALL_PAID,
    departures: {
      answer(_req, answer) {
        delete answer.headers['idempotent-replayed'];
        if (errorIn(answer)?.code === 'idempotency_key_reused') answer.status = 409;
        if (answer.status === 401) delete answer.headers['x-request-id'];
      },
    },
    contradicted: ['idempotency-replay-header', 'idempotency-key-reused-400', 'request-id-header', SCHEMA_ROW],
  },
  {
    name: 'clamps limit, ignores an unknown after, and names its keyframe model otherwise',
    spendLimitCents: DEFAULT_PRICES.imageCents,
    departures: {
      answer(req, answer) {
        const error = errorIn(answer);
        const clamped = error?.param === 'limit' && /^-?\d+$/.test(req.query.get('limit') ?? '');
        if (error?.param === 'after' || clamped) {
          answer.status = 200;
          answer.json = { object: 'list', data: [], has_more: false };
        }
        const body = answer.json as Json | undefined;
        if (req.pathname === '/v1/images' && answer.status === 200 && body) body.model = 'keyframe-2';
      },
    },
    contradicted: ['list-limit-range-400', 'list-after-unknown-400', 'image-model-name'],
  },
];

describe('sim drift against services that depart from the simulator', () => {
  for (const fake of FAKES) {
    it(`a service that ${fake.name}: exactly those rows are contradicted, with evidence`, async () => {
      const target = await fakeService(fake.departures);
      const report = await runDrift({ target, apiKey: 'sk_test_drift', spendLimitCents: fake.spendLimitCents });
      expect(report.aborted).toBeUndefined();
      expect(ids(report, 'contradicted')).toEqual([...fake.contradicted].sort());
      expect(report.exitCode).toBe(1);
      for (const row of report.rows.filter((r) => r.result === 'contradicted')) {
        expect(row.evidence.length).toBeGreaterThan(0);
        for (const e of row.evidence) {
          expect(e.request).toMatch(/\S/);
          expect(e.expected).toMatch(/\S/);
          expect(e.observed).toMatch(/\S/);
        }
      }
      expect(report.cancels.every((c) => c.ok)).toBe(true);
    });
  }

  it('shows a departure as its request, what was expected and what was observed', async () => {
    const fake = FAKES[0]!;
    const target = await fakeService(fake.departures);
    const report = await runDrift({ target, apiKey: 'sk_test_drift', spendLimitCents: ALL_PAID });
    const success = report.rows.find((r) => r.id === 'success-200');
    expect(success?.evidence[0]).toEqual({
      request: expect.stringMatching(/^POST \/v1\/videos Idempotency-Key: drift-\w+-video \{"model":"video-3.2",/),
      expected: '200',
      observed: expect.stringMatching(/^201 \{"id":"vid_/),
    });
    const order = report.rows.find((r) => r.id === 'list-order-ascending');
    expect(order?.evidence).toEqual([
      {
        request: 'GET /v1/videos?limit=100',
        expected: expect.stringMatching(/^vid_\w+ \(created first\) before vid_\w+$/),
        observed: expect.stringMatching(/^vid_\w+ at 0, vid_\w+ at 1$/),
      },
    ]);
    const text = formatReport(report);
    expect(text).toMatch(/^contradicted {2}success-200 +\d+ departures?/m);
    expect(text).toMatch(/^ {6}request: {2}GET \/v1\/videos\?limit=100$/m);
  });

  it('cancels at once, and counts, a video that a probe meant to be refused created', async () => {
    // A service that knows no model is unknown: the probes that name one create a video.
    const target = await fakeService({
      request(req) {
        const body = req.json as Json | undefined;
        if (req.method === 'POST' && req.pathname === '/v1/videos' && body?.model === 'video-0.0-drift-probe' && Object.keys(body).sort().join() === 'duration_seconds,model,prompt,resolution') {
          body.model = 'video-3.2';
        }
      },
    });
    const report = await runDrift({ target, apiKey: 'sk_test_drift' });
    expect(ids(report, 'contradicted')).toEqual(['model-not-found-400']);
    expect(report.cancels).toEqual([{ id: expect.stringMatching(/^vid_/), ok: true, status: 200, detail: 'canceled' }]);
    expect(report.spend.items).toEqual([{ what: expect.stringMatching(/^the video vid_\w+ made by POST \/v1\/videos /), cents: 22, unexpected: true }]);
    expect(report.spend.countedCents).toBe(22);
    expect(formatReport(report)).toMatch(/^unexpected: the video vid_\w+ made by .* \(counted at 22 cents\)$/m);
  });
});

describe('the assumptions in openapi.yaml', () => {
  const document = parse(readFileSync(join(ROOT, 'openapi.yaml'), 'utf8')) as unknown;
  const found: { at: string; ids: string[] }[] = [];
  const unmarked: string[] = [];
  (function walk(node: unknown, at: string): void {
    if (Array.isArray(node)) return node.forEach((v, i) => walk(v, `${at}/${i}`));
    if (node === null || typeof node !== 'object') return;
    const object = node as Record<string, unknown>;
    const marked = object['x-sim-assumption'];
    if (typeof object.description === 'string' && object.description.includes('Simulator assumption:') && marked === undefined) unmarked.push(at);
    if (marked !== undefined) found.push({ at, ids: ([] as unknown[]).concat(marked).map(String) });
    for (const [key, value] of Object.entries(object)) walk(value, `${at}/${key}`);
  })(document, '#');
  const all = found.flatMap((f) => f.ids);

  it('gives every Simulator assumption an x-sim-assumption id', () => {
    expect(unmarked).toEqual([]);
    expect(found.length).toBeGreaterThan(20);
  });

  it('uses unique kebab-case ids', () => {
    for (const id of all) expect(id).toMatch(/^[a-z0-9]+(-[a-z0-9]+)*$/);
    expect(new Set(all).size).toBe(all.length);
  });

  it('has every id probed by the drift check or listed as not observed with a reason, in the order of openapi.yaml', () => {
    expect(ASSUMPTIONS.map((a) => a.id)).toEqual(all);
    for (const entry of probeTable()) {
      if (entry.notObserved === undefined) expect(entry.observedBy, entry.id).not.toEqual([]);
      else {
        expect(entry.notObserved, entry.id).toMatch(/\w{3}/);
        expect(entry.observedBy, entry.id).toEqual([]);
      }
    }
  });

  it('counts the paid probes at the bundled default scenario list prices', () => {
    const { pricing } = loadScenario('default');
    expect(DEFAULT_PRICES).toEqual({ videoCents: 4 * pricing.per_second_cents['720p'] + pricing.keyframe_cents, imageCents: pricing.keyframe_cents });
  });
});

// ---- the command ----

function cleanEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const name of Object.keys(env)) if (name === 'PORT' || name.startsWith('SIM_')) delete env[name];
  return env;
}

/** Runs `sim drift ...` as a process (asynchronously: the target may live in this process). */
function drift(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [CLI, 'drift', ...args], { cwd: ROOT, env: cleanEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, stdout, stderr })));
}

describe('sim drift (the command)', () => {
  it('exits 0 against the simulator, prints the rows and writes them as JSON', async () => {
    const { url } = await startSim();
    const file = join(dir, 'drift.json');
    const { code, stdout } = await drift(['--target', url, '--api-key', 'sk_test_cli', '--json', file]);
    expect(code).toBe(0);
    expect(stdout).toMatch(/^confirmed +check-order +7 checks held$/m);
    expect(stdout.trimEnd().split('\n').at(-1)).toMatch(/^spend counted: 0 cents \(limit 0 cents/);
    const json = JSON.parse(readFileSync(file, 'utf8')) as { exit_code: number; rows: { id: string; result: string }[]; spend: { counted_cents: number } };
    expect(json.exit_code).toBe(0);
    expect(json.rows.map((r) => r.id)).toEqual([...ASSUMPTIONS.map((a) => a.id), SCHEMA_ROW]);
    expect(json.spend.counted_cents).toBe(0);
  });

  it('exits 1 when something is contradicted', async () => {
    const target = await fakeService(FAKES[2]!.departures);
    const { code, stdout } = await drift(['--target', target, '--api-key', 'sk_test_cli']);
    expect(code).toBe(1);
    expect(stdout).toMatch(/^contradicted {2}unknown-parameter-400 /m);
  });

  it('exits 2 when the target cannot be reached', async () => {
    const port = await freePort();
    const { code, stderr } = await drift(['--target', `http://127.0.0.1:${port}`, '--api-key', 'sk_test_cli']);
    expect(code).toBe(2);
    expect(stderr).toMatch(/stopped: cannot reach the target: GET http:\/\/127\.0\.0\.1:\d+\/v1\/videos\?limit=100: ECONNREFUSED/);
  });

  it('exits 2 when the target refuses the key', async () => {
    const { url } = await startSim();
    const { code, stderr } = await drift(['--target', url, '--api-key', 'not_a_test_key']);
    expect(code).toBe(2);
    expect(stderr).toMatch(/stopped: the key was refused: GET \/v1\/videos\?limit=100 answered 401 .*invalid_api_key/);
  });

  it('exits 2 on a usage error', async () => {
    expect((await drift(['--api-key', 'sk_test_cli'])).code).toBe(2);
    const bad = await drift(['--target', 'http://127.0.0.1:1', '--api-key', 'k', '--spend-limit-cents', '-5']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--spend-limit-cents must be a whole number of cents');
  });

  it('states the spend rules and the prices in its help', async () => {
    const { code, stdout } = await drift(['--help']);
    expect(code).toBe(0);
    expect(stdout).toContain('a probe video, 4 s at 720p: 22 cents with its keyframe');
    expect(stdout).toContain('all of them run from --spend-limit-cents 68');
  });
});

describe('the JSON report', () => {
  it('holds the evidence of contradicted rows and the reason of rows not observed', () => {
    const report: DriftReport = {
      target: 'http://127.0.0.1:1',
      requests: 2,
      rows: [
        { id: 'success-200', result: 'contradicted', checks: 1, evidence: [{ request: 'POST /v1/videos', expected: '200', observed: '201 {}' }] },
        { id: 'cost-pricing', result: 'not_observed', checks: 0, evidence: [], reason: 'why' },
      ],
      cancels: [],
      spend: { limitCents: 0, countedCents: 0, items: [], skipped: [] },
      exitCode: 1,
    };
    expect(JSON.parse(reportJson(report))).toEqual({
      target: 'http://127.0.0.1:1',
      requests: 2,
      exit_code: 1,
      rows: [
        { id: 'success-200', result: 'contradicted', checks: 1, evidence: [{ request: 'POST /v1/videos', expected: '200', observed: '201 {}' }] },
        { id: 'cost-pricing', result: 'not_observed', checks: 0, reason: 'why' },
      ],
      cancels: [],
      spend: { limit_cents: 0, counted_cents: 0, items: [], skipped: [] },
    });
  });
});
