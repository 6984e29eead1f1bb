/**
 * Transcripts and replay: `--record FILE` writes every request the simulator handles as a JSON line
 * (after a header naming the scenario, seed, clock and addresses); `GET /_sim/transcript` answers
 * the most recent lines; a replay on a fresh simulator gives the same status and body for every one,
 * even for a realtime run with latency, faults and concurrent clients.
 */
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import request from 'supertest';
import { beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { handleRequest, type RequestPathDeps, type Exchange } from '../src/request-path/handleRequest.js';
import { Simulator } from '../src/core/simulator/simulator.js';
import { createSimulator, type SimulatorHandle } from '../src/index.js';
import { loadScenario } from '../src/scenarios/load.js';
import { formatReport } from '../src/transcript/compare.js';
import type { TranscriptLine } from '../src/transcript/lineFormat.js';
import { parseTranscript, type Transcript } from './transcripts.js';
import { replayTranscript } from '../src/transcript/replay.js';
import { replayAgainstTarget } from '../src/transcript/replayTarget.js';
import { PROMPT, call, expectError, makeSim } from './helpers.js';
import { CLI, runCli } from './processes.js';
import { tempFiles } from './tempFiles.js';

const VERSION = (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }).version;
const { dir, file: tmpFile } = tempFiles('sim-transcript-test-', 'transcript');

function readTranscript(file: string): Transcript {
  return parseTranscript(readFileSync(file, 'utf8'));
}

function replay(transcript: Transcript) {
  return replayTranscript(transcript, { loadScenario: (name) => loadScenario(name) });
}

describe('a request in realtime mode', () => {
  it('is handled at one instant: every time it shows is the time it was handled at, however long it takes', () => {
    let wall = 1_000;
    const fast = loadScenario('fast');
    const sim = new Simulator({
      scenario: { ...fast, clock: { ...fast.clock, start: '2026-01-01T00:00:00.000Z' } },
      clockMode: 'realtime',
      speed: 20,
      // Each reading of the wall clock is 7 ms later (140 ms of virtual time at speed 20).
      wallClock: () => (wall += 7),
      cdnUrl: 'http://localhost/cdn',
    });
    const exchanges: Exchange[] = [];
    const deps: RequestPathDeps = { sim, app: { transcript: () => undefined, recording: () => undefined, scenarios: () => [] }, log: () => {}, responseFailures: [], onExchange: (e) => exchanges.push(e) };
    const post = (path: string, body: unknown, key?: string) =>
      handleRequest(deps, {
        method: 'POST',
        path,
        query: '',
        headers: { 'content-type': 'application/json', ...(key && { authorization: `Bearer ${key}` }) },
        body: Buffer.from(JSON.stringify(body)),
      });
    const video = JSON.parse(post('/v1/videos', { model: 'video-3.2', prompt: PROMPT }, 'sk_test_x').body) as { created_at: string };
    const [created] = exchanges as [Exchange];
    expect(video.created_at).toBe(new Date(created.nowMs).toISOString());
    expect(created.atMs).toBe(created.nowMs);
    // A reset makes a new clock within the request: it starts at the scenario's start exactly.
    const health = JSON.parse(post('/_sim/reset', {}).body) as { clock: { now: string } };
    expect(health.clock.now).toBe('2026-01-01T00:00:00.000Z');
  });
});

describe('recording (--record FILE)', () => {
  let sim: SimulatorHandle;
  let url: string;
  let file: string;
  let transcript: Transcript;
  const fetched: { status: number; text: string }[] = [];

  beforeAll(async () => {
    file = tmpFile();
    sim = makeSim({ scenario: 'fast', clock: 'manual', record: file });
    url = await sim.listen(0);
    const keep = async (p: Promise<{ status: number; text: string }>) => {
      const res = await p;
      fetched.push(res);
      return res;
    };
    const create = { model: 'video-3.2', prompt: PROMPT };
    await keep(call(url, 'POST', '/v1/videos', { key: 'sk_test_rec', body: create, idempotencyKey: 'k-1' }));
    await keep(call(url, 'POST', '/v1/videos', { key: 'sk_test_rec', body: create, idempotencyKey: 'k-1' }));
    await call(url, 'GET', '/_sim/health'); // reads nothing into the transcript
    await keep(call(url, 'POST', '/_sim/clock/advance', { body: { seconds: 5 } }));
    await keep(call(url, 'POST', '/_sim/clock/advance', { body: { seconds: 2.5, api_key: 'sk_test_rec' } }));
    await keep(call(url, 'POST', '/_sim/faults', { body: { path: '/v1/videos', method: 'GET', status: 429, api_key: 'sk_test_rec' } }));
    await keep(call(url, 'GET', '/v1/videos?limit=2', { key: 'sk_test_rec' }));
    await keep(call(url, 'GET', '/v1/videos'));
    await call(url, 'POST', '/_sim/reset', { body: { seed: 'x' } }); // a 400 changes nothing: not recorded
    await keep(call(url, 'DELETE', '/_sim/faults'));
    await sim.close();
    transcript = readTranscript(file);
  });

  it('starts with a header: format 1, version, the resolved scenario, seed, clock and addresses', () => {
    const header = JSON.parse(readFileSync(file, 'utf8').split('\n')[0] as string) as Record<string, unknown>;
    expect(Object.keys(header)).toEqual(['transcript', 'version', 'scenario', 'seed', 'clock', 'base_url', 'cdn_url', 'shard']);
    expect(header).toEqual({
      transcript: 1,
      version: VERSION,
      scenario: loadScenario('fast'),
      seed: loadScenario('fast').seed,
      clock: { mode: 'manual', speed: 1, start: '2026-01-01T00:00:00.000Z' },
      base_url: url,
      cdn_url: `${url}/cdn`,
      shard: null,
    });
  });

  it('writes one line per /v1 request and per state-changing control request, in the order handled', () => {
    expect(transcript.lines.map((l) => `${l.seq} ${l.method} ${l.path} ${l.status}`)).toEqual([
      '1 POST /v1/videos 200',
      '2 POST /v1/videos 200',
      '3 POST /_sim/clock/advance 200',
      '4 POST /_sim/clock/advance 200',
      '5 POST /_sim/faults 200',
      '6 GET /v1/videos?limit=2 429',
      '7 GET /v1/videos 401',
      '8 DELETE /_sim/faults 200',
    ]);
    // Each line's response is the body as the client received it.
    expect(transcript.lines.map((l) => l.response)).toEqual(fetched.map((f) => f.text));
  });

  it('gives each line the request (its headers that matter, its body) and the answer, with the times', () => {
    const [first, replayed] = transcript.lines as [TranscriptLine, TranscriptLine];
    expect(Object.keys(first)).toEqual(['seq', 'now', 'at', 'method', 'path', 'headers', 'body', 'status', 'response_headers', 'response']);
    expect(first).toEqual({
      seq: 1,
      now: '2026-01-01T00:00:00.000Z',
      at: '2026-01-01T00:00:00.000Z',
      method: 'POST',
      path: '/v1/videos',
      // `host`: the answer's addresses followed the Host it was reached under (no --base-url).
      headers: { authorization: 'Bearer sk_test_rec', 'idempotency-key': 'k-1', 'content-type': 'application/json', host: new URL(url).host },
      body: JSON.stringify({ model: 'video-3.2', prompt: PROMPT }),
      status: 200,
      response_headers: {},
      response: fetched[0]?.text,
    });
    expect(replayed.response_headers).toEqual({ 'idempotent-replayed': 'true' });
    expect(replayed.response).toBe(first.response);
  });

  it("stamps a clock advance with the time before it moved, and a request with its account's time", () => {
    const byPath = (seq: number) => transcript.lines[seq - 1] as TranscriptLine;
    expect([byPath(3).now, byPath(3).at, byPath(3).body]).toEqual(['2026-01-01T00:00:00.000Z', null, '{"seconds":5}']);
    expect([byPath(4).now, byPath(4).at]).toEqual(['2026-01-01T00:00:05.000Z', null]);
    expect([byPath(6).now, byPath(6).at]).toEqual(['2026-01-01T00:00:05.000Z', '2026-01-01T00:00:07.500Z']);
    expect(byPath(6).response_headers).toEqual({ 'retry-after': '1' });
    // No account: `at` is null, and only the headers that were sent are kept.
    expect([byPath(7).at, byPath(7).headers, byPath(7).body]).toEqual([null, { host: new URL(url).host }, null]);
  });

  it('replays identically', () => {
    const report = replay(transcript);
    expect(report.differences).toEqual([]);
    expect(formatReport(report)).toBe('replayed 8 requests: 8 identical\n');
  });
});

describe('GET /_sim/transcript', () => {
  it('answers the whole transcript so far, the same bytes as the file, whatever the journal keeps', async () => {
    const scenario = loadScenario('fast');
    scenario.limits.journal_size = 3;
    const file = tmpFile();
    const sim = makeSim({ scenario, record: file });
    for (let i = 0; i < 5; i++) await request(sim.app).get('/v1/videos').set('Authorization', 'Bearer sk_test_t');
    const res = await request(sim.app).get('/_sim/transcript');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/x-ndjson/);
    const rows = res.text.split('\n');
    expect(rows.pop()).toBe('');
    expect(JSON.parse(rows[0] as string)).toMatchObject({ transcript: 1, base_url: null, cdn_url: 'http://localhost/cdn' });
    expect(rows.slice(1).map((r) => (JSON.parse(r) as TranscriptLine).seq)).toEqual([1, 2, 3, 4, 5]);
    expect(res.text).toBe(readFileSync(file, 'utf8'));
    await sim.close();
  });

  it('is 404 unknown_route when recording is off', async () => {
    const sim = makeSim();
    expectError(await request(sim.app).get('/_sim/transcript'), 404, 'invalid_request_error', 'unknown_route', null);
  });
});

describe('replay', () => {
  it('replays a reset that names another scenario, and the requests after it on that scenario', async () => {
    const file = tmpFile();
    const sim = makeSim({ scenario: 'fast', clock: 'manual', record: file });
    onTestFinished(() => sim.close()); // which releases its transcript's lock
    const create = (key: string) =>
      request(sim.app).post('/v1/videos').set('Authorization', `Bearer ${key}`).send({ model: 'video-3.2', prompt: PROMPT });
    await create('sk_test_a');
    await request(sim.app).post('/_sim/clock/advance').send({ seconds: 3 });
    expect((await request(sim.app).post('/_sim/reset').send({ scenario: 'compliance', seed: 9 })).status).toBe(200);
    for (const key of ['sk_test_a', 'sk_test_b', 'sk_test_a']) await create(key);
    await request(sim.app).post('/_sim/clock/advance').send({ seconds: 30, api_key: 'sk_test_b' });
    await request(sim.app).get('/v1/videos').set('Authorization', 'Bearer sk_test_b');
    await request(sim.app).post('/_sim/reset').send({});
    await create('sk_test_a');
    const transcript = readTranscript(file);
    expect(transcript.header.scenario.name).toBe('fast');
    expect(transcript.lines).toHaveLength(10);
    expect(replay(transcript).differences).toEqual([]);
  });

  it("records the in-process API's clock advances and resets as the control requests they stand for", async () => {
    const file = tmpFile();
    const sim = makeSim({ scenario: 'fast', clock: 'manual', record: file });
    onTestFinished(() => sim.close()); // which releases its transcript's lock
    const create = () => request(sim.app).post('/v1/videos').set('Authorization', 'Bearer sk_test_p').send({ model: 'video-3.2', prompt: PROMPT });
    const { body: video } = await create();
    sim.clock.advance(4, 'sk_test_p');
    sim.clock.advance(1.5);
    await request(sim.app).get(`/v1/videos/${video.id}`).set('Authorization', 'Bearer sk_test_p');
    sim.reset({ apiKey: 'sk_test_p' });
    expect(() => sim.reset({ apiKey: 'sk_test_p', seed: 3 })).toThrow(); // refused: nothing changed, nothing recorded
    sim.reset({ seed: 5 });
    await create();
    const transcript = readTranscript(file);
    expect(transcript.lines.map((l) => `${l.now} ${l.method} ${l.path} ${l.body}`)).toEqual([
      '2026-01-01T00:00:00.000Z POST /v1/videos {"model":"video-3.2","prompt":"A slow dolly shot across a rain-soaked neon street at night."}',
      '2026-01-01T00:00:00.000Z POST /_sim/clock/advance?api_key=sk_test_p {"seconds":4}',
      '2026-01-01T00:00:00.000Z POST /_sim/clock/advance {"seconds":1.5}',
      '2026-01-01T00:00:01.500Z GET /v1/videos/' + video.id + ' null',
      '2026-01-01T00:00:01.500Z POST /_sim/reset?api_key=sk_test_p {}',
      '2026-01-01T00:00:01.500Z POST /_sim/reset {"seed":5}',
      '2026-01-01T00:00:00.000Z POST /v1/videos {"model":"video-3.2","prompt":"A slow dolly shot across a rain-soaked neon street at night."}',
    ]);
    expect(replay(transcript).differences).toEqual([]);
  });

  describe('a realtime run (flaky, speed 20) with latency, concurrent clients, retries, cancels and control requests', () => {
    let transcript: Transcript;
    let file: string;
    const KEYS = ['sk_test_w1', 'sk_test_w2', 'sk_test_w3', 'sk_test_w4'];
    const SPEED = 20;

    beforeAll(async () => {
      file = tmpFile();
      // The host time the simulator reads (`now`), moved by the clients' waits: a wait takes no real time.
      let hostMs = Date.now();
      const sim = createSimulator({ scenario: 'flaky', clock: 'realtime', speed: SPEED, record: file, now: () => hostMs });
      const url = await sim.listen(0);
      const wait = (virtualSeconds: number): Promise<void> => {
        hostMs += (virtualSeconds * 1000) / SPEED;
        return Promise.resolve();
      };

      /** Retries 429s (after Retry-After) and 500s (backing off) like a good client. */
      async function withRetry(send: () => ReturnType<typeof call>) {
        let res = await send();
        for (let attempt = 0; attempt < 6 && (res.status === 429 || res.status === 500); attempt++) {
          await wait(res.status === 429 ? Number(res.headers.get('retry-after') ?? 1) : 2 ** attempt);
          res = await send();
        }
        return res;
      }

      async function client(key: string, n: number): Promise<void> {
        const image = await withRetry(() => call(url, 'POST', '/v1/images', { key, body: { prompt: `Still ${n}: a lighthouse at dawn` }, idempotencyKey: `img-${n}` }));
        const body = { model: 'video-3.2', prompt: `Take ${n}: ${PROMPT}`, keyframe_id: image.status === 200 ? image.json.id : null };
        const first = await withRetry(() => call(url, 'POST', '/v1/videos', { key, body, idempotencyKey: `video-${n}` }));
        // The same create again, with its key: answered from the first (or run anew if that failed).
        await withRetry(() => call(url, 'POST', '/v1/videos', { key, body, idempotencyKey: `video-${n}` }));
        const second = await withRetry(() => call(url, 'POST', '/v1/videos', { key, body: { model: 'video-3.1', prompt: `Other ${n}` } }));
        if (second.status === 200) await withRetry(() => call(url, 'DELETE', `/v1/videos/${second.json.id}`, { key }));
        await call(url, 'POST', '/v1/videos', { key, raw: '{"model":' });
        await call(url, 'GET', '/v1/videos/vid_nope', { key });
        await call(url, 'POST', '/_sim/clock/advance', { body: { seconds: 20 + n, api_key: key } });
        for (let poll = 0; poll < 3 && first.status === 200; poll++) {
          await wait(2);
          await call(url, 'GET', `/v1/videos/${first.json.id}`, { key });
        }
        await withRetry(() => call(url, 'GET', '/v1/videos?limit=5', { key }));
      }

      async function operator(): Promise<void> {
        await call(url, 'GET', '/_sim/scenario'); // realtime at speed 20, as the run was started
        await wait(4);
        await call(url, 'POST', '/_sim/faults', { body: { path: '/v1/videos/*', method: 'GET', status: 500, times: 2 } });
        await call(url, 'GET', '/v1/videos');
        await wait(4);
        await call(url, 'POST', '/_sim/clock/advance', { body: { seconds: 10 } });
        await call(url, 'POST', '/_sim/faults', { body: { path: '/v1/images', status: 429, api_key: KEYS[3] } });
        await call(url, 'DELETE', `/_sim/faults?api_key=${KEYS[3]}`);
      }

      await Promise.all([...KEYS.map((key, n) => client(key, n)), operator()]);
      // One account starts over, and carries on.
      await call(url, 'POST', '/_sim/reset', { body: { api_key: KEYS[0] } });
      await withRetry(() => call(url, 'POST', '/v1/videos', { key: KEYS[0], body: { model: 'video-3.2', prompt: PROMPT } }));
      await sim.close();
      expect(sim.app.responseFailures).toEqual([]);
      transcript = readTranscript(file);
    }, 30_000);

    it('records every request in the order handled: seq rises by one, now never goes back', () => {
      const { lines } = transcript;
      expect(lines.length).toBeGreaterThan(45);
      expect(lines.map((l) => l.seq)).toEqual(lines.map((_, i) => i + 1));
      for (let i = 1; i < lines.length; i++) {
        expect(Date.parse((lines[i] as TranscriptLine).now)).toBeGreaterThanOrEqual(Date.parse((lines[i - 1] as TranscriptLine).now));
      }
      // The realtime clock started at the wall-clock time of start, before the first request.
      expect(transcript.header.clock).toEqual({ mode: 'realtime', speed: SPEED, start: expect.stringMatching(/^\d{4}-\d\d-\d\dT[\d:.]+Z$/) });
      expect(Date.parse(transcript.header.clock.start)).toBeLessThanOrEqual(Date.parse((lines[0] as TranscriptLine).now));
      // What the run was meant to exercise did happen.
      const accounts = new Set(lines.map((l) => l.headers.authorization).filter(Boolean));
      expect(accounts.size).toBe(KEYS.length);
      expect(lines.some((l) => l.status === 500)).toBe(true);
      expect(lines.some((l) => l.response_headers['idempotent-replayed'] === 'true')).toBe(true);
      expect(lines.some((l) => l.method === 'DELETE' && l.path.startsWith('/v1/videos/'))).toBe(true);
    });

    it('replays every request identically', () => {
      const report = replay(transcript);
      expect(report.differences).toEqual([]);
      expect(report.replayed).toBe(transcript.lines.length);
      expect(formatReport(report)).toBe(`replayed ${transcript.lines.length} requests: ${transcript.lines.length} identical\n`);
    });

    it('reports a tampered response with its seq, the statuses and the first differing byte', () => {
      const index = transcript.lines.findIndex((l) => l.method === 'POST' && l.path === '/v1/videos' && l.status === 200);
      const line = transcript.lines[index] as TranscriptLine;
      const at = line.response.indexOf('"status":"') + '"status":"'.length;
      const tampered: Transcript = {
        header: transcript.header,
        lines: transcript.lines.map((l, i) => (i === index ? { ...l, response: `${l.response.slice(0, at)}X${l.response.slice(at + 1)}` } : l)),
      };
      const report = replay(tampered);
      expect(report.differences).toEqual([
        expect.objectContaining({ seq: line.seq, method: 'POST', path: '/v1/videos', recordedStatus: 200, replayedStatus: 200, position: at }),
      ]);
      expect(formatReport(report)).toContain(`seq ${line.seq} POST /v1/videos: status 200; bodies differ from byte ${at}\n`);
      expect(formatReport(report)).toMatch(/replayed \d+ requests: \d+ identical, 1 different\n$/);
    });

    it('replays identically against a running simulator on the manual clock with the same addresses (--target)', async () => {
      const target = createSimulator({ scenario: 'flaky', clock: 'manual', baseUrl: transcript.header.base_url as string, log: () => {} });
      await target.listen(0);
      try {
        const report = await replayAgainstTarget(transcript, `http://127.0.0.1:${target.port}`, { bundledScenario: (name) => loadScenario(name) });
        expect(report.notes).toEqual([]);
        expect(report.differences).toEqual([]);
        expect(report.replayed).toBe(transcript.lines.length);
      } finally {
        await target.close();
      }
    });
  });
});

describe('sim replay FILE (command line)', () => {
  let file: string;
  let lines: string[];

  const sim = runCli;

  function withLines(rows: string[], text = `${rows.join('\n')}\n`): string {
    const out = tmpFile();
    writeFileSync(out, text);
    return out;
  }

  beforeAll(async () => {
    file = tmpFile();
    const recorded = makeSim({ scenario: 'flaky', clock: 'manual', record: file });
    for (const key of ['sk_test_c1', 'sk_test_c2']) {
      await request(recorded.app).post('/v1/videos').set('Authorization', `Bearer ${key}`).send({ model: 'video-3.2', prompt: PROMPT });
      await request(recorded.app).post('/_sim/clock/advance').send({ seconds: 40, api_key: key });
      await request(recorded.app).get('/v1/videos').set('Authorization', `Bearer ${key}`);
    }
    await recorded.close();
    lines = readFileSync(file, 'utf8').trimEnd().split('\n');
    expect(lines).toHaveLength(7);
  });

  it('prints "replayed N requests: N identical" and exits 0 when every answer is the same', async () => {
    expect(await sim(['replay', file])).toEqual({ status: 0, stdout: 'replayed 6 requests: 6 identical\n', stderr: '' });
  });

  it('prints each differing request with its seq, statuses and first differing byte, and exits 1', async () => {
    const line = JSON.parse(lines[3] as string) as TranscriptLine;
    const tampered = withLines(lines.map((row, i) => (i === 3 ? JSON.stringify({ ...line, status: 500, response: `${line.response}.` }) : row)));
    const run = await sim(['replay', tampered]);
    expect(run.status).toBe(1);
    expect(run.stdout.split('\n')[0]).toBe(`seq ${line.seq} GET /v1/videos: status 500 recorded, 200 replayed; bodies differ from byte ${Buffer.byteLength(line.response)}`);
    expect(run.stdout).toMatch(/\nreplayed 6 requests: 5 identical, 1 different\n$/);
  });

  it('exits 2 naming the line when a line cannot be read', async () => {
    const broken = withLines(lines.map((row, i) => (i === 2 ? row.slice(0, 40) : row)));
    const wrong = withLines(lines.map((row, i) => (i === 4 ? JSON.stringify({ ...JSON.parse(row), seq: 'five' }) : row)));
    const badScenario = withLines(lines.map((row, i) => (i === 0 ? JSON.stringify({ ...JSON.parse(row), scenario: { seed: 'x' } }) : row)));
    const [brokenRun, wrongRun, scenarioRun] = await Promise.all([broken, wrong, badScenario].map((f) => sim(['replay', f])));
    expect([brokenRun?.status, brokenRun?.stdout]).toEqual([2, '']);
    expect(brokenRun?.stderr).toMatch(new RegExp(`^sim replay: ${broken}: line 3: not valid JSON`));
    expect(wrongRun).toEqual({ status: 2, stdout: '', stderr: `sim replay: ${wrong}: line 5: seq: expected an integer, got "five"\n` });
    expect([scenarioRun?.status, scenarioRun?.stderr]).toEqual([2, expect.stringContaining(`${badScenario} line 1 (the header's scenario)`)]);
  });

  it('exits 2 when the file cannot be read', async () => {
    const missing = join(dir, 'missing.jsonl');
    expect(await sim(['replay', missing])).toEqual({ status: 2, stdout: '', stderr: `sim replay: ${missing}: cannot read it (ENOENT)\n` });
  });

  it('leaves out a last line cut short (the recording was killed while writing it), saying the transcript was cut', async () => {
    const cut = withLines([], `${lines.join('\n')}\n${(lines[1] as string).slice(0, 50)}`);
    const run = await sim(['replay', cut]);
    expect(run).toEqual({
      status: 0,
      stdout: 'replayed 6 requests: 6 identical\n',
      stderr: `sim replay: ${cut}: the transcript was cut: its last line was cut short (the recording stopped while writing it); it is left out\n`,
    });
  });

  it('sim --record (SIM_RECORD) has written each line by the time its answer arrives, so a killed process keeps them', async () => {
    const recordFile = tmpFile();
    const child = spawn(process.execPath, [CLI, '--port', '0', '--scenario', 'fast', '--clock', 'manual'], {
      env: { ...process.env, SIM_RECORD: recordFile },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    try {
      const firstLine = await new Promise<string>((resolve) => child.stdout.once('data', (chunk: Buffer) => resolve(chunk.toString())));
      const port = Number(/:(\d+) /.exec(firstLine)?.[1]);
      const url = `http://127.0.0.1:${port}`;
      await call(url, 'POST', '/v1/videos', { key: 'sk_test_k', body: { model: 'video-3.2', prompt: PROMPT } });
      await call(url, 'POST', '/_sim/clock/advance', { body: { seconds: 1 } });
    } finally {
      child.kill('SIGKILL');
    }
    const transcript = readTranscript(recordFile);
    expect(transcript.header.base_url).toMatch(/^http:\/\/localhost:\d+$/);
    expect(transcript.lines.map((l) => `${l.method} ${l.path}`)).toEqual(['POST /v1/videos', 'POST /_sim/clock/advance']);
    expect(await sim(['replay', recordFile])).toEqual({ status: 0, stdout: 'replayed 2 requests: 2 identical\n', stderr: '' });
  });
});
