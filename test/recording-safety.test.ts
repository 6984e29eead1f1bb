/**
 * Recording cannot take the server down or lose data: the transcript has a size bound; a write that
 * fails stops the recording, never the request; the file is taken only once the port is bound and
 * is refused while another running simulator holds it; a cut transcript replays what is there and
 * says so; a file holding two recordings is refused; `GET /_sim/transcript` is streamed.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { Readable } from 'node:stream';
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { handleRequest } from '../src/request-path/handleRequest.js';
import { FileLockedError, selfHolder } from '../src/lockHolder.js';
import { createSimulator, type SimulatorHandle } from '../src/index.js';
import { END_LINE_RESERVE, TranscriptError } from '../src/transcript/lineFormat.js';
import { parseTranscript } from './transcripts.js';
import { TranscriptRecorder, type RecordingStatus } from '../src/transcript/recorder.js';
import { PROMPT, VALID_VIDEO, makeSim } from './helpers.js';
import { CLI, runCli } from './processes.js';
import { tempFiles } from './tempFiles.js';

const { file: tmpFile } = tempFiles('sim-recording-test-', 'transcript');

const KEY = 'sk_test_rec';
const listVideos = (sim: SimulatorHandle) => request(sim.app).get('/v1/videos').set('Authorization', `Bearer ${KEY}`);
const health = async (sim: SimulatorHandle) => (await request(sim.app).get('/_sim/health')).body as { recording?: RecordingStatus };

/** The size of the header line a `fast`, manual-clock simulator writes (for choosing bounds). */
async function headerBytes(): Promise<number> {
  const file = tmpFile();
  const sim = makeSim({ record: file });
  await sim.listen(0);
  await sim.close();
  return statSync(file).size;
}

describe('--record-max-bytes (recordMaxBytes)', () => {
  it('stops recording before the file passes the bound, warns once, keeps answering, and shows it in health', async () => {
    const file = tmpFile();
    const lineBytes = Buffer.byteLength((await (async () => {
      const probe = tmpFile();
      const sim = makeSim({ record: probe });
      await listVideos(sim);
      await sim.close();
      return readFileSync(probe, 'utf8').split('\n')[1] as string;
    })()) + '\n');
    const maxBytes = (await headerBytes()) + 3 * lineBytes + END_LINE_RESERVE;
    const sim = makeSim({ record: file, recordMaxBytes: maxBytes });
    for (let i = 0; i < 3; i++) expect((await listVideos(sim)).status).toBe(200);
    expect((await health(sim)).recording).toEqual({ state: 'on', bytes: statSync(file).size, max_bytes: maxBytes });

    for (let i = 0; i < 4; i++) expect((await listVideos(sim)).status).toBe(200);
    expect((await health(sim)).recording).toEqual({ state: 'stopped', reason: 'size_limit', bytes: statSync(file).size, max_bytes: maxBytes });
    expect(statSync(file).size).toBeLessThanOrEqual(maxBytes);
    expect(sim.logs.filter((l) => l.startsWith('recording stopped'))).toEqual([
      `recording stopped: the transcript ${file} reached its size limit (${maxBytes} bytes, --record-max-bytes); requests are still answered but no longer recorded`,
    ]);

    // Whole lines, then the end line naming the first request left out.
    const parsed = parseTranscript(readFileSync(file, 'utf8'));
    expect(parsed.lines.map((l) => l.seq)).toEqual([1, 2, 3]);
    expect(parsed.end).toEqual({ stopped: 'size_limit', max_bytes: maxBytes, next_seq: 4 });
    expect(parsed.truncated).toBe(0);
    await sim.close();
  });

  it('is 1 GiB unless given, and shows no recording in health when recording is off', async () => {
    const sim = makeSim({ record: tmpFile() });
    expect((await health(sim)).recording).toMatchObject({ state: 'on', max_bytes: 2 ** 30 });
    await sim.close();
    expect((await health(makeSim())).recording).toBeUndefined();
  });

  it('refuses a bound that is not a whole number of bytes above 0', () => {
    expect(() => createSimulator({ record: tmpFile(), recordMaxBytes: 0 })).toThrow(/recordMaxBytes must be a whole number of bytes above 0, got 0/);
    expect(() => createSimulator({ record: tmpFile(), recordMaxBytes: 1.5 })).toThrow(RangeError);
  });
});

describe('a transcript write that fails', () => {
  it('stops the recording with write_failed and the error code; every request is still answered (/dev/full)', async () => {
    const sim = makeSim({ record: '/dev/full' });
    const created = await request(sim.app).post('/v1/videos').set('Authorization', `Bearer ${KEY}`).send(VALID_VIDEO);
    expect(created.status).toBe(200);
    expect((await listVideos(sim)).status).toBe(200);
    expect((await request(sim.app).post('/_sim/clock/advance').send({ seconds: 5 })).status).toBe(200);
    expect((await health(sim)).recording).toEqual({ state: 'stopped', reason: 'write_failed', error: 'ENOSPC', bytes: 0, max_bytes: 2 ** 30 });
    expect(sim.logs.filter((l) => l.startsWith('recording stopped'))).toEqual([
      'recording stopped: cannot write the transcript /dev/full (ENOSPC); requests are still answered but no longer recorded',
    ]);
    await sim.close();
  });

  it('cuts a line written in part back to the whole lines, and records nothing after it', () => {
    let file = '';
    let failAfter = 3;
    const stops: RecordingStatus[] = [];
    const recorder = new TranscriptRecorder({
      header: () => ({ transcript: 1, version: '0', scenario: {} as never, seed: 1, clock: { mode: 'manual', speed: 1, start: '2026-01-01T00:00:00.000Z' }, base_url: null, cdn_url: 'http://x/cdn' }),
      write(line) {
        if (failAfter-- <= 0) {
          file += line.slice(0, 10); // a part of the line reached the disk
          throw Object.assign(new Error('i/o error'), { code: 'EIO' });
        }
        file += line;
      },
      truncate(length) {
        file = file.slice(0, length);
        return true;
      },
      maxBytes: 1_000_000,
      onStop: (s) => stops.push(s),
    });
    const exchange = {
      nowMs: Date.parse('2026-01-01T00:00:00.000Z'),
      atMs: null,
      method: 'GET',
      path: '/v1/videos',
      headers: {},
      body: null,
      answer: { status: 200, headers: {}, body: '{}', stream: undefined, contentType: 'application/json', delayMs: 0 },
    };
    for (let i = 0; i < 5; i++) recorder.record(exchange);
    // The header and two lines were written; the third failed part-way and was cut off; the end
    // line failed too (the disk still fails) and was cut off as well.
    expect(file.split('\n').slice(0, -1).map((l) => (JSON.parse(l) as { seq?: number }).seq)).toEqual([undefined, 1, 2]);
    expect(file.endsWith('\n')).toBe(true);
    expect(recorder.status()).toEqual({ state: 'stopped', reason: 'write_failed', error: 'EIO', bytes: Buffer.byteLength(file), max_bytes: 1_000_000 });
    expect(stops).toHaveLength(1);
  });
});

describe('GET /_sim/transcript', () => {
  it('is answered by the request path as a stream for the adapter to send, not a string', () => {
    const sim = makeSim();
    let opened = 0;
    const stream = { length: 3, open: () => (opened++, Readable.from(['a\nb'])), text: () => 'a\nb' };
    const answer = handleRequest(
      { sim: sim.core, app: { transcript: () => stream, recording: () => undefined, scenarios: () => [] }, log: () => {}, responseFailures: [] },
      { method: 'GET', path: '/_sim/transcript', query: '', headers: {}, body: null },
    );
    expect([answer.status, answer.contentType, answer.body, answer.stream, opened]).toEqual([200, 'application/x-ndjson', '', stream, 0]);
  });

  it('sends the header and the recorded lines from the file, with their exact length', async () => {
    const file = tmpFile();
    const sim = makeSim({ record: file });
    await request(sim.app).post('/v1/videos').set('Authorization', `Bearer ${KEY}`).send({ ...VALID_VIDEO, prompt: `${PROMPT} ${'x'.repeat(50_000)}` });
    await listVideos(sim);
    const res = await request(sim.app).get('/_sim/transcript');
    expect(res.status).toBe(200);
    expect(res.headers['content-length']).toBe(String(statSync(file).size));
    expect(res.text).toBe(readFileSync(file, 'utf8'));
    await sim.close();
  });

  it('ends with the end line once recording has stopped', async () => {
    const file = tmpFile();
    const maxBytes = (await headerBytes()) + END_LINE_RESERVE + 10;
    const sim = makeSim({ record: file, recordMaxBytes: maxBytes });
    await listVideos(sim);
    const res = await request(sim.app).get('/_sim/transcript');
    expect(res.text).toBe(readFileSync(file, 'utf8'));
    expect(parseTranscript(res.text).end).toEqual({ stopped: 'size_limit', max_bytes: maxBytes, next_seq: 1 });
    await sim.close();
  });
});

describe('taking the transcript file', () => {
  it('touches nothing when the port cannot be bound', async () => {
    const busy = await occupyPort();
    const file = tmpFile();
    writeFileSync(file, 'an earlier transcript\n');
    const sim = createSimulator({ scenario: 'fast', record: file, log: () => {} });
    await expect(sim.listen(busy.port)).rejects.toMatchObject({ code: 'EADDRINUSE' });
    expect(readFileSync(file, 'utf8')).toBe('an earlier transcript\n');
    expect(existsSync(`${file}.lock`)).toBe(false);
    busy.server.close();
  });

  it('is refused while another simulator of this process holds it, and free again once that one closes', async () => {
    const file = tmpFile();
    const first = makeSim({ record: file });
    await first.listen(0);
    expect(JSON.parse(readFileSync(`${file}.lock`, 'utf8'))).toEqual(selfHolder());
    expect(() => createSimulator({ record: file })).toThrow(FileLockedError);
    expect(() => createSimulator({ record: file })).toThrow(`already held by this process (pid ${process.pid})`);
    await first.close();
    expect(existsSync(`${file}.lock`)).toBe(false);
    const second = makeSim({ record: file });
    await second.listen(0);
    await second.close();
  });

  it('takes over a lock whose process is no longer running', async () => {
    const file = tmpFile();
    const dead = await deadPid();
    writeFileSync(`${file}.lock`, `${dead}\n`);
    const sim = makeSim({ record: file });
    await sim.listen(0);
    expect(JSON.parse(readFileSync(`${file}.lock`, 'utf8'))).toEqual(selfHolder());
    expect(parseTranscript(readFileSync(file, 'utf8')).lines).toEqual([]);
    await sim.close();
  });

  it('takes over a lock naming this process that this process never took (a pid reused, as a restarted container\'s 1)', async () => {
    const file = tmpFile();
    writeFileSync(`${file}.lock`, `${process.pid}\n`);
    const sim = makeSim({ record: file });
    await sim.listen(0);
    await sim.close();
    expect(existsSync(`${file}.lock`)).toBe(false);
  });
});

describe('a cut transcript', () => {
  it('parses a file with two headers as an error naming the second one', () => {
    const header = JSON.stringify({ transcript: 1, version: '0', scenario: {}, seed: 1, clock: { mode: 'manual', speed: 1, start: '2026-01-01T00:00:00.000Z' }, base_url: null, cdn_url: 'http://x/cdn' });
    expect(() => parseTranscript(`${header}\n${header}\n`)).toThrow(TranscriptError);
    expect(() => parseTranscript(`${header}\n${header}\n`)).toThrow(/^line 2: a second header: this file holds two recordings/);
  });
});

describe('the command line (process tests)', () => {
  it('--record /dev/full: every request is answered, health shows write_failed (ENOSPC), the process stays up', async () => {
    const sim = await startCli(['--record', '/dev/full']);
    try {
      for (let i = 0; i < 5; i++) {
        const res = await fetch(`${sim.url}/v1/videos`, { method: 'POST', headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' }, body: JSON.stringify(VALID_VIDEO) });
        expect(res.status).toBe(200);
      }
      const h = (await (await fetch(`${sim.url}/_sim/health`)).json()) as { recording: RecordingStatus };
      expect(h.recording).toMatchObject({ state: 'stopped', reason: 'write_failed', error: 'ENOSPC' });
      expect(sim.child.exitCode).toBeNull();
      expect(sim.stderr()).toContain('recording stopped: cannot write the transcript /dev/full (ENOSPC)');
    } finally {
      await sim.stop();
    }
  });

  it('a second sim on a busy port with the same --record file exits 1 and leaves the first one\'s transcript intact', async () => {
    const file = tmpFile();
    const first = await startCli(['--record', file]);
    try {
      await fetch(`${first.url}/v1/videos`, { headers: { authorization: `Bearer ${KEY}` } });
      const before = readFileSync(file, 'utf8');
      const second = await runCli(['--port', String(first.port), '--record', file]);
      expect(second.status).toBe(1);
      expect(readFileSync(file, 'utf8')).toBe(before);
      // The first one records on.
      await fetch(`${first.url}/v1/videos`, { headers: { authorization: `Bearer ${KEY}` } });
      expect(parseTranscript(readFileSync(file, 'utf8')).lines.map((l) => l.seq)).toEqual([1, 2]);
    } finally {
      await first.stop();
    }
  });

  it('a second sim on a busy port with another --record file exits 1 and leaves that file as it was', async () => {
    const first = await startCli([]);
    const file = tmpFile();
    writeFileSync(file, 'an earlier transcript\n');
    try {
      const second = await runCli(['--port', String(first.port), '--record', file]);
      expect(second.status).toBe(1);
      expect(second.stderr).toContain('EADDRINUSE');
      expect(readFileSync(file, 'utf8')).toBe('an earlier transcript\n');
      expect(existsSync(`${file}.lock`)).toBe(false);
    } finally {
      await first.stop();
    }
  });

  it('a second sim on a free port with the same --record file exits 1 naming the first one\'s pid; the lock goes when the first stops', async () => {
    const file = tmpFile();
    const first = await startCli(['--record', file]);
    try {
      const second = await runCli(['--port', '0', '--record', file]);
      expect(second.status).toBe(1);
      expect(second.stderr).toBe(`sim: cannot record: ${file} is held by another running simulator (pid ${first.child.pid}, lock file ${file}.lock); stop it, or choose another file\n`);
    } finally {
      await first.stop();
    }
    expect(existsSync(`${file}.lock`)).toBe(false);
  });

  it('SIM_RECORD_MAX_BYTES bounds the file; sim replay replays what is there and says the transcript was cut', async () => {
    const file = tmpFile();
    const maxBytes = (await headerBytes()) + 1500;
    const sim = await startCli([], { SIM_RECORD: file, SIM_RECORD_MAX_BYTES: String(maxBytes) });
    try {
      for (let i = 0; i < 10; i++) await fetch(`${sim.url}/v1/videos`, { headers: { authorization: `Bearer ${KEY}` } });
      const h = (await (await fetch(`${sim.url}/_sim/health`)).json()) as { recording: RecordingStatus };
      expect(h.recording).toMatchObject({ state: 'stopped', reason: 'size_limit', max_bytes: maxBytes });
    } finally {
      await sim.stop();
    }
    expect(statSync(file).size).toBeLessThanOrEqual(maxBytes);
    const { lines, end } = parseTranscript(readFileSync(file, 'utf8'));
    expect(lines.length).toBeGreaterThan(0);
    expect(lines.length).toBeLessThan(10);
    const replay = await runCli(['replay', file]);
    expect(replay).toEqual({
      status: 0,
      stdout: `replayed ${lines.length} requests: ${lines.length} identical\n`,
      stderr: `sim replay: ${file}: the transcript was cut: recording stopped because the file reached its size limit (${maxBytes} bytes, --record-max-bytes); requests from seq ${end?.next_seq} on were not recorded, the ones before are replayed\n`,
    });
  });

  it('sim replay refuses a file holding two recordings (exit 2), naming the line of the second header', async () => {
    const a = tmpFile();
    const recorder = makeSim({ record: a });
    await listVideos(recorder);
    await recorder.close();
    const joined = tmpFile();
    const text = readFileSync(a, 'utf8');
    writeFileSync(joined, text + text);
    const run = await runCli(['replay', joined]);
    expect(run).toEqual({
      status: 2,
      stdout: '',
      stderr: `sim replay: ${joined}: line 3: a second header: this file holds two recordings (two simulators writing one file, or files joined together); replay each recording from a file of its own\n`,
    });
  });
});

/** A port held by another server. */
function occupyPort(): Promise<{ server: Server; port: number }> {
  return new Promise((resolve) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => resolve({ server, port: (server.address() as { port: number }).port }));
  });
}

/** The pid of a process that has exited. */
function deadPid(): Promise<number> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['-e', '']);
    child.on('exit', () => resolve(child.pid as number));
  });
}

/** `sim --port 0 --scenario fast --clock manual ...args`, once it listens. */
async function startCli(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ child: ChildProcessWithoutNullStreams; url: string; port: number; stderr: () => string; stop: () => Promise<void> }> {
  const child = spawn(process.execPath, [CLI, '--port', '0', '--scenario', 'fast', '--clock', 'manual', ...args], {
    env: { ...process.env, ...env },
  });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const firstLine = await new Promise<string>((resolve, reject) => {
    child.stdout.once('data', (chunk: Buffer) => resolve(chunk.toString()));
    child.once('exit', (code) => reject(new Error(`sim exited ${code}: ${stderr}`)));
  });
  const port = Number(/:(\d+) /.exec(firstLine)?.[1]);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    child,
    port,
    url: `http://127.0.0.1:${port}`,
    stderr: () => stderr,
    stop: () => {
      child.kill('SIGTERM');
      return exited;
    },
  };
}
