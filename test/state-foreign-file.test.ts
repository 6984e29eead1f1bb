/**
 * `--state FILE` never destroys a file it did not write: an existing, non-empty file that does not
 * begin as a state file is refused (exit 2, naming it) and left exactly as it was, whatever it holds
 * and however big it is; only an empty file, or one that begins with a state header (a torn header
 * included), is taken over.
 */
import { closeSync, existsSync, mkdtempSync, openSync, readFileSync, readSync, rmSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import { afterAll, describe, expect, it } from 'vitest';
import { createSimulator } from '../src/index.js';
import { StateRefusedError } from '../src/persistence/open.js';
import { readStateRows } from '../src/persistence/stateLines.js';
import { createVideo, makeSim } from './helpers.js';
import { childProcesses, runCli } from './processes.js';

childProcesses();
const dir = mkdtempSync(join(tmpdir(), 'sim-state-foreign-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const foreign = (name: string): string => `${join(dir, name)} is not a state file of this simulator (one begins with {"state":...): it is left as it is. Give --state the path of a new or empty file, or remove this one to begin a state in it.`;

describe('a file that is not a state file', () => {
  const cases: [string, string][] = [
    ['config.json', '{\n  "port": 8080,\n  "debug": true\n}\n'],
    ['notes.txt', 'remember to buy milk'],
    ['compact.json', '{"state":{"user":"ada"}}'],
    ['blank.txt', '\n'],
    ['bom.jsonl', '\ufeff{"state":1,"version":"0.1.0"}\n'],
  ];
  for (const [name, text] of cases) {
    it(`is refused and left as it was: ${name}`, async () => {
      const file = join(dir, name);
      writeFileSync(file, text);
      expect(() => makeSim({ state: file })).toThrow(StateRefusedError);
      expect(() => makeSim({ state: file })).toThrow(foreign(name));
      expect(readFileSync(file, 'utf8')).toBe(text);
      expect(existsSync(`${file}.lock`)).toBe(false);
    });
  }

  it('is refused from its first bytes alone, however big: a 300 MB file is neither read nor changed', async () => {
    const file = join(dir, 'blob.bin');
    writeFileSync(file, 'BLOB');
    // Sparse: 300 MB long, a few bytes on the disk.
    truncateSync(file, 300 * 1024 * 1024);
    const before = statSync(file);
    expect(() => makeSim({ state: file })).toThrow(foreign('blob.bin'));
    const after = statSync(file);
    expect(after.size).toBe(300 * 1024 * 1024);
    expect(after.mtimeMs).toBe(before.mtimeMs);
    const head = Buffer.alloc(8);
    const fd = openSync(file, 'r');
    readSync(fd, head, 0, 8, 0);
    closeSync(fd);
    expect(head.toString('latin1')).toBe('BLOB\0\0\0\0');
    rmSync(file);
  });

  it('a transcript is refused as such', async () => {
    const file = join(dir, 'recorded.jsonl');
    writeFileSync(file, '{"transcript":1,"version":"0.1.0"}\n');
    expect(() => makeSim({ state: file })).toThrow(
      `${file}: this is a transcript (written by --record), not a state file: replay it with sim replay FILE, or give --state a file of its own. It is left as it is.`,
    );
    expect(readFileSync(file, 'utf8')).toBe('{"transcript":1,"version":"0.1.0"}\n');
  });

  it('and --record refuses a state file: recording would empty it (exit 2, naming it; the file is untouched)', async () => {
    const file = join(dir, 'kept-state.jsonl');
    const sim = makeSim({ state: file });
    await sim.listen(0);
    expect((await createVideo(sim)).status).toBe(200);
    await sim.close();
    const state = readFileSync(file, 'utf8');
    const refused = `${file}: this is a state file (written by --state), not a transcript: recording to it would empty it. Give --record a file of its own, or open the state with sim --state FILE. It is left as it is.`;
    expect(() => makeSim({ record: file })).toThrow(refused);
    expect(await runCli(['--port', '0', '--record', file])).toEqual({ status: 2, stdout: '', stderr: `sim: ${refused}\n` });
    // Checked again when the file is taken: one that became a state file since the start is left as it is.
    const late = join(dir, 'late-state.jsonl');
    const recording = makeSim({ record: late });
    writeFileSync(late, state);
    await expect(recording.listen(0)).rejects.toThrow(`${late}: this is a state file (written by --state)`);
    await recording.close();
    expect(readFileSync(file, 'utf8')).toBe(state);
    expect(readFileSync(late, 'utf8')).toBe(state);
    expect(existsSync(`${file}.lock`)).toBe(false);
    expect(existsSync(`${late}.lock`)).toBe(false);
  });

  it('that appears after the start (in-process, before the file is taken) is left as it was, and the state is not kept', async () => {
    const file = join(dir, 'late.txt');
    const sim = makeSim({ state: file });
    writeFileSync(file, 'written by someone else meanwhile');
    expect((await createVideo(sim)).status).toBe(200);
    expect(readFileSync(file, 'utf8')).toBe('written by someone else meanwhile');
    expect(sim.logs.join('\n')).toContain(foreign('late.txt'));
    expect((await request(sim.app).get('/_sim/health')).body.state).toMatchObject({ file, write_failed: 'unknown' });
    await sim.close();
    expect(existsSync(`${file}.lock`)).toBe(false);
  });

  it('on the command line: exit 2, naming it, and the file is untouched (start and sim state compact)', async () => {
    const file = join(dir, 'settings.yaml');
    writeFileSync(file, 'port: 8080\n');
    const started = await runCli(['--port', '0', '--state', file]);
    expect(started).toEqual({ status: 2, stdout: '', stderr: `sim: ${foreign('settings.yaml')}\n` });
    const compacted = await runCli(['state', 'compact', file]);
    expect(compacted).toEqual({ status: 2, stdout: '', stderr: `sim: ${foreign('settings.yaml')}\n` });
    expect(readFileSync(file, 'utf8')).toBe('port: 8080\n');
    expect(existsSync(`${file}.lock`)).toBe(false);
  });
});

describe('a file this simulator began', () => {
  it('an empty file becomes a new state', async () => {
    const file = join(dir, 'empty.jsonl');
    writeFileSync(file, '');
    const sim = makeSim({ state: file });
    await sim.listen(0);
    await createVideo(sim);
    await sim.close();
    expect([...readStateRows(readFileSync(file, 'utf8').split('\n')).entries]).toHaveLength(1);
  });

  for (const torn of ['{', '{"sta', '{"state":', '{"state":1,"version":"0.1', '{"state":1,"version":"0.1.0","scenario":{"name":"fa']) {
    it(`a torn header is taken over with a warning: ${torn}`, async () => {
      const file = join(dir, `torn-${torn.length}.jsonl`);
      writeFileSync(file, torn);
      const sim = makeSim({ state: file });
      expect(sim.logs).toEqual([`state: ${file} holds only a header cut short (the simulator was stopped while writing it): starting with a new state`]);
      await sim.listen(0);
      await createVideo(sim);
      await sim.close();
      expect([...readStateRows(readFileSync(file, 'utf8').split('\n')).entries]).toHaveLength(1);
    });
  }

  it('a state file of another format is refused by its format, not taken over', async () => {
    const file = join(dir, 'future.jsonl');
    writeFileSync(file, '{"state":2,"version":"9.0.0"}\n');
    expect(() => createSimulator({ state: file, log: () => {} })).toThrow(/state format 2 \(written by version "9.0.0" of the simulator\)/);
    expect(readFileSync(file, 'utf8')).toBe('{"state":2,"version":"9.0.0"}\n');
  });
});
