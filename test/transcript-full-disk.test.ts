/**
 * A transcript cut by a full disk stays replayable: no hole of NUL bytes, whole lines up to an end
 * line that says the recording stopped (cutting off the last lines when the end line finds no room
 * after them), and `sim replay` replays up to it and says it was cut.
 *
 * On a real full disk: a 64 KiB tmpfs, mounted for the test (this needs root, or CAP_SYS_ADMIN;
 * without it the file test records to /dev/full instead). The recorder's part is also checked on a
 * simulated disk, byte for byte, everywhere.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, rmdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runReplay } from '../src/commands/replay.js';
import type { Exchange } from '../src/request-path/handleRequest.js';
import type { RecordingStatus } from '../src/transcript/recorder.js';
import { LINES_GIVEN_UP, TranscriptRecorder } from '../src/transcript/recorder.js';
import { formatEnd, formatExchange, formatHeader, type TranscriptHeader } from '../src/transcript/lineFormat.js';
import { VALID_VIDEO, makeSim } from './helpers.js';

const KEY = 'sk_test_fulldisk';
const roomy = mkdtempSync(join(tmpdir(), 'sim-full-disk-'));
/** The small disk, or null when it cannot be mounted here. */
let small: string | null = null;

beforeAll(() => {
  const dir = mkdtempSync(join(tmpdir(), 'sim-tmpfs-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=64k', 'tmpfs', dir], { stdio: 'ignore' });
    small = dir;
  } catch {
    rmdirSync(dir);
  }
});

afterAll(() => {
  if (small !== null) {
    // Lazily: a file a failed test left open must not keep the mount.
    execFileSync('umount', ['-l', small]);
    rmdirSync(small);
  }
  rmSync(roomy, { recursive: true, force: true });
});

/** Records `count` creates with prompts of `promptChars` into `file`, then closes: the recording's health. */
async function recordCreates(file: string, promptChars: number, count: number): Promise<RecordingStatus | undefined> {
  const sim = makeSim({ record: file });
  try {
    for (let i = 0; i < count; i++) {
      const res = await request(sim.app)
        .post('/v1/videos')
        .set('Authorization', `Bearer ${KEY}`)
        .send({ ...VALID_VIDEO, prompt: `${i} ${'x'.repeat(promptChars)}` });
      expect(res.status).toBe(200);
    }
    return (await request(sim.app).get('/_sim/health')).body.recording as RecordingStatus | undefined;
  } finally {
    await sim.close();
  }
}

async function replay(file: string): Promise<{ status: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const status = await runReplay(file, {}, { out: (t) => (out += t), err: (t) => (err += t) });
  return { status, out, err };
}

describe('a transcript on a disk that fills up', () => {
  // Line sizes on either side of the tmpfs page (4 KiB): the disk fills within a line, or at its end.
  for (const promptChars of [500, 1_000, 2_500, 3_900]) {
    it(`ends with whole lines and an end line, and replays up to it saying it was cut (prompts of ${promptChars} characters)`, async () => {
      const count = Math.ceil((96 * 1024) / (2 * promptChars + 1_000));
      if (small === null) {
        // No tmpfs here: /dev/full, where every write fails. Nothing can be read back from it.
        const recording = await recordCreates('/dev/full', promptChars, count);
        expect(recording).toMatchObject({ state: 'stopped', reason: 'write_failed', error: 'ENOSPC' });
        return;
      }
      const file = join(small, `transcript-${promptChars}.jsonl`);
      const recording = await recordCreates(file, promptChars, count);
      expect(recording).toMatchObject({ state: 'stopped', reason: 'write_failed', error: 'ENOSPC' });
      const bytes = readFileSync(file);
      // Replayed from a copy: the small disk is emptied for the next test.
      const kept = join(roomy, `kept-${promptChars}.jsonl`);
      writeFileSync(kept, bytes);
      rmSync(file);
      expect(bytes.includes(0)).toBe(false);
      const text = bytes.toString('utf8');
      expect(text.endsWith('\n')).toBe(true);
      const lines = text.slice(0, -1).split('\n');
      const recorded = lines.length - 2;
      expect(recorded).toBeGreaterThan(0);
      expect(lines.at(-1)).toBe(formatEnd({ reason: 'write_failed', error: 'ENOSPC', maxBytes: 2 ** 30, nextSeq: recorded + 1 }));
      expect(recording?.bytes).toBe(bytes.length);

      // What precedes the end line is, byte for byte, the start of the same recording on a roomy disk.
      const whole = join(roomy, `transcript-${promptChars}.jsonl`);
      await recordCreates(whole, promptChars, count);
      const wholeLines = readFileSync(whole, 'utf8').split('\n');
      expect(wholeLines.length - 2).toBe(count);
      expect(lines.slice(0, -1)).toEqual(wholeLines.slice(0, recorded + 1));

      expect(await replay(kept)).toEqual({
        status: 0,
        out: `replayed ${recorded} requests: ${recorded} identical\n`,
        err:
          `sim replay: ${kept}: the transcript was cut: recording stopped because a write to the file failed (ENOSPC); ` +
          `requests from seq ${recorded + 1} on were not recorded, the ones before are replayed\n`,
      });
    });
  }
});

describe('the recorder on a disk of a few bytes', () => {
  const header: TranscriptHeader = {
    transcript: 1,
    version: '0',
    scenario: {} as never,
    seed: 1,
    clock: { mode: 'manual', speed: 1, start: '2026-01-01T00:00:00.000Z' },
    base_url: null,
    cdn_url: 'http://x/cdn',
  };
  const exchange = (i: number): Exchange => ({
    nowMs: Date.parse('2026-01-01T00:00:00.000Z'),
    atMs: null,
    method: 'GET',
    path: `/v1/videos/vid_${i}`,
    headers: {},
    body: null,
    answer: { status: 404, headers: {}, body: '{}', contentType: 'application/json', delayMs: 0 },
  } as unknown as Exchange);

  /** A disk of `capacity` bytes: a write that does not fit writes what fits, then fails with ENOSPC. */
  function disk(capacity: number) {
    let bytes = '';
    return {
      contents: () => bytes,
      write(line: string) {
        const room = capacity - bytes.length;
        if (line.length > room) {
          bytes += line.slice(0, room);
          throw Object.assign(new Error('no space left on device'), { code: 'ENOSPC' });
        }
        bytes += line;
      },
      truncate(length: number) {
        bytes = bytes.slice(0, length);
        return true;
      },
    };
  }

  const headerLine = `${formatHeader(header)}\n`;
  const line = (seq: number): string => `${formatExchange(seq, exchange(seq))}\n`;
  const endLine = (nextSeq: number): string => `${formatEnd({ reason: 'write_failed', error: 'ENOSPC', maxBytes: 1_000_000, nextSeq })}\n`;

  function recordUntilFull(capacity: number): { contents: string; status: RecordingStatus } {
    const sink = disk(capacity);
    const recorder = new TranscriptRecorder({ header: () => header, write: sink.write, truncate: sink.truncate, maxBytes: 1_000_000, onStop: () => {} });
    for (let i = 1; i <= 40; i++) recorder.record(exchange(i));
    return { contents: sink.contents(), status: recorder.status() };
  }

  it('writes the end line where the whole lines end when it fits there', () => {
    const full = headerLine + line(1) + line(2) + line(3);
    const { contents, status } = recordUntilFull(full.length + endLine(4).length + 5);
    expect(contents).toBe(full + endLine(4));
    expect(status).toMatchObject({ state: 'stopped', bytes: contents.length });
  });

  it('cuts off the last line to make room for the end line when it does not fit after it', () => {
    // Room for the header, three lines and 20 bytes: the fourth line is cut, and the end line has no room.
    const full = headerLine + line(1) + line(2) + line(3);
    const { contents, status } = recordUntilFull(full.length + 20);
    expect(contents).toBe(headerLine + line(1) + line(2) + endLine(3));
    expect(status).toEqual({ state: 'stopped', reason: 'write_failed', error: 'ENOSPC', bytes: contents.length, max_bytes: 1_000_000 });
  });

  it('gives up after a bounded number of lines, leaving whole lines', () => {
    const sink = disk(Infinity);
    let fail = false;
    const recorder = new TranscriptRecorder({
      header: () => header,
      write: (text) => {
        if (fail) throw Object.assign(new Error('no space'), { code: 'ENOSPC' });
        sink.write(text);
      },
      truncate: sink.truncate,
      maxBytes: 1_000_000,
      onStop: () => {},
    });
    for (let i = 1; i <= LINES_GIVEN_UP + 4; i++) recorder.record(exchange(i));
    fail = true;
    recorder.record(exchange(LINES_GIVEN_UP + 5));
    let expected = headerLine;
    for (let i = 1; i <= 4; i++) expected += line(i);
    expect(sink.contents()).toBe(expected);
  });
});
