/**
 * Reading a transcript for `sim replay`: row by row from the file (never the whole file in
 * memory), each line checked as it is replayed, the rows exactly as splitting the text on newlines
 * gives them, and a line longer than any the simulator writes refused by its number.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { fileRows, RowTooLongError } from '../src/fileRows.js';
import { readTranscript } from '../src/transcript/lineFormat.js';
import { makeSim, PROMPT } from './helpers.js';
import { runCli } from './processes.js';
import { tempFiles } from './tempFiles.js';

const { dir, file: tmpFile } = tempFiles('sim-transcript-reading-');
function fileWith(content: string | Buffer): string {
  const file = tmpFile();
  writeFileSync(file, content);
  return file;
}

const MiB = 1024 * 1024;

/** A transcript of `creates` creates on the fast scenario: its seed and its rows. */
async function recordCreates(creates: number): Promise<{ seed: number; rows: string[] }> {
  const file = tmpFile('recorded');
  const sim = makeSim({ scenario: 'fast', clock: 'manual', record: file });
  const url = await sim.listen(0);
  for (let i = 0; i < creates; i++) {
    await fetch(`${url}/v1/videos`, {
      method: 'POST',
      headers: { Authorization: 'Bearer sk_test_alice', 'Content-Type': 'application/json' },
      body: JSON.stringify({ model: 'video-3.2', prompt: PROMPT }),
    });
  }
  await sim.close();
  return { seed: sim.core.seed, rows: [...fileRows(file, MiB)] };
}

describe('fileRows', () => {
  it.each([
    ['empty', ''],
    ['one row without a newline', 'abc'],
    ['rows and a final newline', 'a\nb\n'],
    ['blank rows and a tail', '\n\na\n\ntail'],
    // Chunks are 1 MiB: a row, a newline and a two-byte character each across the boundary.
    ['a row across the chunk boundary', `${'a'.repeat(MiB - 3)}bcdef\nnext\n`],
    ['a newline on the boundary', `${'a'.repeat(MiB - 1)}\nnext`],
    ['a two-byte character across the boundary', `${'a'.repeat(MiB - 1)}é\n${'ü'.repeat(MiB)}\nend`],
  ])('gives the rows of %s as splitting the text on newlines does', (_label, text) => {
    expect([...fileRows(fileWith(text), 4 * MiB)]).toEqual(text.split('\n'));
  });

  it('refuses a row longer than the bound, by its number, before reading it whole', () => {
    const file = fileWith(`short\n${'x'.repeat(3 * MiB)}\nafter\n`);
    const rows = fileRows(file, MiB);
    expect(rows.next().value).toBe('short');
    expect(() => rows.next()).toThrow(RowTooLongError);
    expect(() => [...fileRows(file, MiB)]).toThrow(/^line 2: longer than 1048576 characters/);
  });

  it('refuses a last row without a newline that is longer than the bound', () => {
    expect(() => [...fileRows(fileWith(`ok\n${'x'.repeat(2 * MiB)}`), MiB)]).toThrow(/^line 2: longer than/);
  });

  it('reads a row of many chunks whole, and says how many bytes the rows given so far take', () => {
    const long = 'é'.repeat(3 * MiB);
    const text = `a\n${long}\nb`;
    const progress = { bytes: 0 };
    const rows = fileRows(fileWith(text), 4 * MiB, { progress });
    expect(rows.next().value).toBe('a');
    expect(progress.bytes).toBe(2);
    expect(rows.next().value).toBe(long);
    expect(progress.bytes).toBe(2 + 6 * MiB + 1);
    expect(rows.next().value).toBe('b');
    expect(progress.bytes).toBe(Buffer.byteLength(text));
    expect(rows.next().done).toBe(true);
  });

  it('reads up to `end` only, and bounds each row by its own bound when given one per row', () => {
    const file = fileWith('ab\ncdefgh\nij\n');
    expect([...fileRows(file, MiB, { end: 5 })]).toEqual(['ab', 'cd']);
    expect([...fileRows(file, (row) => (row === 2 ? 6 : 2))]).toEqual(['ab', 'cdefgh', 'ij', '']);
    expect(() => [...fileRows(file, 2)]).toThrow(/^line 2: longer than 2 characters/);
  });
});

describe('readTranscript', () => {
  it('reads the header at once and each line only as the lines are read', async () => {
    const { seed, rows: recorded } = await recordCreates(3);
    const rows: string[] = [];
    function* counted(): Generator<string> {
      for (const row of recorded) {
        rows.push(row);
        yield row;
      }
    }
    const reading = readTranscript(counted());
    expect(reading.header.seed).toBe(seed);
    expect(rows).toHaveLength(1);
    const lines = reading.lines[Symbol.iterator]();
    expect(lines.next().value?.seq).toBe(1);
    // The line and one row of lookahead (to tell the last row, which may be cut short).
    expect(rows).toHaveLength(3);
    expect([...{ [Symbol.iterator]: () => lines }].map((l) => l.seq)).toEqual([2, 3]);
    expect(reading.ending).toEqual({ truncated: 0 });
  });
});

describe('sim replay on a damaged or hostile file', () => {
  const recorded = async (): Promise<string[]> => (await recordCreates(4)).rows.filter((row) => row !== '');

  it('exits 2 naming a damaged line that follows good ones, and prints no report', async () => {
    const rows = await recorded();
    rows[3] = '{"seq":3,"now":';
    const r = await runCli(['replay', fileWith(`${rows.join('\n')}\n`)]);
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/^sim replay: .*file-\d+\.jsonl: line 4: not valid JSON/);
    expect(r.stdout).toBe('');
  });

  it('exits 2 on a line longer than any the simulator writes (16 MiB), naming it', async () => {
    const rows = await recorded();
    const long = JSON.stringify({ ...JSON.parse(rows[2] as string), response: 'x'.repeat(17 * MiB) });
    const r = await runCli(['replay', fileWith(`${rows[0]}\n${rows[1]}\n${long}\n`)]);
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/line 3: longer than 16777216 characters, more than any line the simulator writes\n$/);
  });

  it('exits 2 for a file that does not exist, with the error code', async () => {
    const r = await runCli(['replay', join(dir, 'nope.jsonl')]);
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/nope\.jsonl: cannot read it \(ENOENT\)\n$/);
  });

  it('replays what was recorded before a last line cut short, and says so after the replay', async () => {
    const rows = await recorded();
    const r = await runCli(['replay', fileWith(`${rows.join('\n')}\n{"seq":5,"no`)]);
    expect(r.status).toBe(0);
    expect(r.stdout).toBe('replayed 4 requests: 4 identical\n');
    expect(r.stderr).toMatch(/the transcript was cut: its last line was cut short/);
  });
});
