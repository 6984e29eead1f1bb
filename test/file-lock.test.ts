/**
 * The lock beside a transcript or a state file holds across containers: its record names more than
 * a pid (host name, boot id, pid namespace, process start time), so two simulators that are each
 * PID 1 of their own container on a shared volume are told apart; a holder this process cannot see
 * holds while it keeps its lock fresh; a zombie's lock is stale. The decision (`judgeLock`) is
 * checked case by case, then the lock files themselves (the two-container case with Docker is in
 * test/docker/docker.test.ts).
 */
import { spawn } from 'node:child_process';
import { closeSync, existsSync, linkSync, lstatSync, mkdirSync, openSync, readFileSync, rmSync, statSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { REFRESH_MS, acquireFileLock, heldLockCount, refuseIfHeld } from '../src/fileLock.js';
import { lockFileOf } from '../src/fileNames.js';
import { FileLockedError, STALE_MS, judgeLock, parseHolder, parseStat, selfHolder, type LockContext, type LockHolder, type ProcessSeen } from '../src/lockHolder.js';
import { StateRefusedError } from '../src/persistence/open.js';
import { createSimulator } from '../src/index.js';
import { VALID_VIDEO, makeSim } from './helpers.js';
import { tempFiles } from './tempFiles.js';

const { dir, file: tmpFile } = tempFiles('sim-lock-test-');

const BOOT = '0b5e1f2a-1111-4222-8333-944455556666';
/** This process, as a container's PID 1. */
const ME: LockHolder = { pid: 1, host: 'c0ffee000001', boot: BOOT, pidns: 'pid:[4026532001]', start: 5_000 };

function context(over: Partial<LockContext> & { running?: Record<number, ProcessSeen> } = {}): LockContext {
  const running = over.running ?? {};
  return { self: ME, heldHere: false, ageMs: 0, processOf: (pid) => running[pid] ?? null, ...over };
}

describe('judgeLock: whether a lock holds', () => {
  it('another container on the same machine and volume, also PID 1: held while its lock is fresh, stale once it is not', () => {
    const other: LockHolder = { pid: 1, host: 'beef00000002', boot: BOOT, pidns: 'pid:[4026532002]', start: 7_000 };
    expect(judgeLock(other, context({ ageMs: 1_500 }))).toEqual({ held: true, because: 'refreshed' });
    expect(judgeLock(other, context({ ageMs: STALE_MS - 1 }))).toEqual({ held: true, because: 'refreshed' });
    expect(judgeLock(other, context({ ageMs: STALE_MS }))).toEqual({ held: false, because: 'not refreshed' });
  });

  it('the same container restarted (same host name, a new pid namespace): its old lock holds while fresh, as another container\'s would', () => {
    const before: LockHolder = { ...ME, pidns: 'pid:[4026531999]', start: 100 };
    expect(judgeLock(before, context({ ageMs: 2_000 }))).toEqual({ held: true, because: 'refreshed' });
    expect(judgeLock(before, context({ ageMs: STALE_MS + 1 }))).toEqual({ held: false, because: 'not refreshed' });
  });

  it('another machine on a shared volume: held while fresh; a machine of the same host name that booted since is stale at once', () => {
    const remote: LockHolder = { pid: 4242, host: 'build-07', boot: 'another-boot', pidns: 'pid:[4026531836]', start: 9 };
    expect(judgeLock(remote, context({ ageMs: 0 }))).toEqual({ held: true, because: 'refreshed' });
    expect(judgeLock(remote, context({ ageMs: STALE_MS * 10 }))).toEqual({ held: false, because: 'not refreshed' });
    const beforeReboot: LockHolder = { ...ME, boot: 'the-boot-before' };
    expect(judgeLock(beforeReboot, context({ ageMs: 0 }))).toEqual({ held: false, because: 'rebooted' });
  });

  it('a holder in this pid namespace is checked directly, whatever the lock\'s age', () => {
    const neighbour: LockHolder = { ...ME, pid: 77, start: 6_000 };
    const old = STALE_MS * 100;
    expect(judgeLock(neighbour, context({ ageMs: old, running: { 77: { start: 6_000, zombie: false } } }))).toEqual({ held: true, because: 'running' });
    expect(judgeLock(neighbour, context({ ageMs: 0 }))).toEqual({ held: false, because: 'not running' });
    expect(judgeLock(neighbour, context({ ageMs: 0, running: { 77: { start: 6_000, zombie: true } } }))).toEqual({ held: false, because: 'zombie' });
    expect(judgeLock(neighbour, context({ ageMs: 0, running: { 77: { start: 6_001, zombie: false } } }))).toEqual({ held: false, because: 'pid reused' });
    // Where the start time cannot be read, a running pid holds.
    expect(judgeLock(neighbour, context({ ageMs: 0, running: { 77: { start: null, zombie: false } } }))).toEqual({ held: true, because: 'running' });
  });

  it('a lock naming this process: held when this process took it, else its pid was reused', () => {
    expect(judgeLock(ME, context({ heldHere: true }))).toEqual({ held: true, because: 'this process' });
    expect(judgeLock(ME, context({ heldHere: false }))).toEqual({ held: false, because: 'released' });
    expect(judgeLock({ ...ME, start: 4_000 }, context({ heldHere: true }))).toEqual({ held: false, because: 'pid reused' });
  });

  it('a bare pid (an earlier version\'s lock) is judged in this pid namespace; an unreadable lock holds while fresh', () => {
    const legacy = parseHolder('77\n');
    expect(legacy).toEqual({ pid: 77, host: null, boot: null, pidns: null, start: null });
    expect(judgeLock(legacy, context({ ageMs: 0, running: { 77: { start: 1, zombie: false } } }))).toEqual({ held: true, because: 'running' });
    expect(judgeLock(legacy, context({ ageMs: 0 }))).toEqual({ held: false, because: 'not running' });
    expect(judgeLock(parseHolder('1\n'), context())).toEqual({ held: false, because: 'released' });
    expect(parseHolder('')).toBeNull();
    expect(parseHolder('{"pid":"1"}')).toBeNull();
    expect(judgeLock(null, context({ ageMs: 0 }))).toEqual({ held: true, because: 'refreshed' });
    expect(judgeLock(null, context({ ageMs: STALE_MS }))).toEqual({ held: false, because: 'not refreshed' });
  });

  it('a system without /proc (no boot id, no namespace) compares host names', () => {
    const bare: LockHolder = { pid: 10, host: 'laptop', boot: null, pidns: null, start: null };
    const self: LockHolder = { pid: 11, host: 'laptop', boot: null, pidns: null, start: null };
    expect(judgeLock(bare, { ...context({ ageMs: STALE_MS * 2, running: { 10: { start: null, zombie: false } } }), self })).toEqual({ held: true, because: 'running' });
    expect(judgeLock({ ...bare, host: 'desktop' }, { ...context({ ageMs: 0 }), self })).toEqual({ held: true, because: 'refreshed' });
  });
});

describe('parseStat', () => {
  it('reads the state and the start time after the last parenthesis, whatever the command name holds', () => {
    const fields = ['Z', '1', ...Array.from({ length: 17 }, (_, i) => String(i + 10)), '123456', '0'];
    expect(parseStat(`42 (a (weird) name) ${fields.join(' ')}`)).toEqual({ start: 123456, zombie: true });
    expect(parseStat(`42 (node) S ${fields.slice(1).join(' ')}`)).toEqual({ start: 123456, zombie: false });
  });

  it("reads this process's own line", () => {
    const own = parseStat(readFileSync('/proc/self/stat', 'utf8'));
    expect(own.zombie).toBe(false);
    expect(own.start).toBe(selfHolder().start);
  });
});

/** Writes `file`'s lock as `holder` would have, last touched `ageMs` ago. */
function writeLock(file: string, holder: LockHolder, ageMs = 0): void {
  writeFileSync(`${file}.lock`, `${JSON.stringify(holder)}\n`);
  const at = new Date(Date.now() - ageMs);
  utimesSync(`${file}.lock`, at, at);
}

describe('the lock files', () => {
  afterEach(() => {
    vi.useRealTimers();
  });
  /** Another container of this machine: same boot, another pid namespace, PID 1. */
  const otherContainer = (): LockHolder => ({ pid: 1, host: 'beef00000002', boot: selfHolder().boot, pidns: 'pid:[1]', start: 1 });

  it("records this process's identity, not only its pid", () => {
    const file = tmpFile();
    const lock = acquireFileLock(file, () => {});
    const record = JSON.parse(readFileSync(`${file}.lock`, 'utf8')) as LockHolder;
    expect(record).toEqual(selfHolder());
    expect(record.pid).toBe(process.pid);
    expect(record.boot).toMatch(/^[0-9a-f-]{36}$/);
    expect(record.pidns).toMatch(/^pid:\[\d+\]$/);
    expect(record.start).toBeGreaterThan(0);
    lock.release();
    expect(existsSync(`${file}.lock`)).toBe(false);
  });

  it("refuses a file another container holds (each PID 1, one volume), naming its host; takes it over once the lock is stale", async () => {
    // The wall clock stands still, so that the lock's age is what the test made it.
    vi.useFakeTimers({ now: new Date('2031-02-03T04:05:06.000Z'), toFake: ['Date'] });
    const file = tmpFile();
    writeLock(file, otherContainer(), 1_000);
    const message =
      `${file} is held by another simulator, in another container or on another machine (pid 1 on host beef00000002, lock file ${file}.lock, refreshed 1 s ago); stop it, or choose another file. ` +
      `A lock not refreshed for ${STALE_MS / 1000} s is stale: if that simulator is gone, start again then, or remove the lock file`;
    expect(() => refuseIfHeld(file)).toThrow(message);
    expect(() => makeSim({ record: file })).toThrow(FileLockedError);
    expect(() => makeSim({ state: file })).toThrow(message);
    expect(() => acquireFileLock(file, () => {})).toThrow(message);

    writeLock(file, otherContainer(), STALE_MS + 1_000);
    const taken = makeSim({ record: file });
    await taken.listen(0);
    expect(JSON.parse(readFileSync(`${file}.lock`, 'utf8'))).toEqual(selfHolder());
    await taken.close();
    expect(existsSync(`${file}.lock`)).toBe(false);
  });

  it("takes over a zombie's lock (a process exited, not yet reaped by its parent)", async () => {
    // The shell starts a child, then becomes `sleep 30` (exec), which never reaps a child. The child
    // is killed only once the exec is done (the shell itself would reap it): it stays a zombie.
    const parent = spawn('sh', ['-c', 'sleep 31 & echo $!; exec sleep 30'], { stdio: ['ignore', 'pipe', 'ignore'] });
    try {
      const zombie = Number((await new Promise<Buffer>((resolve) => parent.stdout.once('data', resolve))).toString().trim());
      const until = async (done: () => boolean): Promise<void> => {
        for (let tries = 0; tries < 1000 && !done(); tries++) await new Promise((resolve) => setTimeout(resolve, 10));
      };
      await until(() => readFileSync(`/proc/${parent.pid}/cmdline`, 'utf8') === 'sleep\x0030\x00');
      process.kill(zombie, 'SIGKILL');
      let stat = '';
      await until(() => /\) Z /.test((stat = readFileSync(`/proc/${zombie}/stat`, 'utf8'))));
      expect(stat).toMatch(/\) Z /);
      // It still answers a signal 0, as a running process would.
      expect(() => process.kill(zombie, 0)).not.toThrow();
      const file = tmpFile();
      writeLock(file, { ...selfHolder(), pid: zombie, start: parseStat(stat).start });
      const sim = makeSim({ record: file });
      await sim.listen(0);
      expect(JSON.parse(readFileSync(`${file}.lock`, 'utf8')).pid).toBe(process.pid);
      await sim.close();
    } finally {
      parent.kill('SIGKILL');
    }
  });

  it('refuses a file held by a running process of this machine, whatever its lock\'s age; takes it over once that pid is reused', async () => {
    const file = tmpFile();
    const running = spawn('sleep', ['30'], { stdio: 'ignore' });
    try {
      const start = parseStat(readFileSync(`/proc/${running.pid}/stat`, 'utf8')).start as number;
      writeLock(file, { ...selfHolder(), pid: running.pid as number, start }, STALE_MS * 100);
      expect(() => makeSim({ state: file })).toThrow(`${file} is held by another running simulator (pid ${running.pid}, lock file ${file}.lock); stop it, or choose another file`);
      writeLock(file, { ...selfHolder(), pid: running.pid as number, start: start - 1 });
      expect(() => refuseIfHeld(file)).not.toThrow();
    } finally {
      running.kill('SIGKILL');
    }
  });

  it('refuses a file of another container before reading it (its lock comes first), and leaves both files alone', () => {
    const file = tmpFile();
    writeFileSync(file, 'not a state file');
    writeLock(file, otherContainer());
    const lock = readFileSync(`${file}.lock`, 'utf8');
    expect(() => createSimulator({ state: file, log: () => {} })).toThrow(FileLockedError);
    expect(readFileSync(file, 'utf8')).toBe('not a state file');
    expect(readFileSync(`${file}.lock`, 'utf8')).toBe(lock);
    rmSync(`${file}.lock`);
    expect(() => createSimulator({ state: file, log: () => {} })).toThrow(StateRefusedError);
  });
});

describe('keeping a lock fresh', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('touches every lock it holds every REFRESH_MS, and warns once when one is no longer its own', () => {
    // The refresh timer starts with the first lock held: none may be held yet for the fake one to be it.
    expect(heldLockCount()).toBe(0);
    vi.useFakeTimers({ now: new Date('2031-02-03T04:05:06.000Z'), toFake: ['setInterval', 'clearInterval', 'Date'] });
    const kept = tmpFile();
    const lost = tmpFile();
    const warnings: string[] = [];
    const keptLock = acquireFileLock(kept, (line) => warnings.push(line));
    const lostLock = acquireFileLock(lost, (line) => warnings.push(line));
    for (const file of [kept, lost]) utimesSync(`${file}.lock`, new Date(0), new Date(0));

    vi.advanceTimersByTime(REFRESH_MS);
    const touched = new Date('2031-02-03T04:05:06.000Z').getTime() + REFRESH_MS;
    expect(statSync(`${kept}.lock`).mtimeMs).toBe(touched);
    expect(statSync(`${lost}.lock`).mtimeMs).toBe(touched);
    expect(warnings).toEqual([]);

    // Another simulator took the second lock over (this process had stalled past STALE_MS).
    writeLock(lost, { pid: 1, host: 'beef00000002', boot: 'b', pidns: 'pid:[1]', start: 1 });
    vi.advanceTimersByTime(REFRESH_MS * 3);
    expect(warnings).toEqual([`the lock ${lost}.lock is no longer this simulator's (now pid 1 on host beef00000002): another simulator may write to ${lost}`]);
    expect(statSync(`${kept}.lock`).mtimeMs).toBe(touched + 3 * REFRESH_MS);
    // Releasing leaves the other holder's lock where it is.
    lostLock.release();
    keptLock.release();
    expect(existsSync(`${kept}.lock`)).toBe(false);
    expect(JSON.parse(readFileSync(`${lost}.lock`, 'utf8')).host).toBe('beef00000002');
  });
});

describe('the file, not the name: a symbolic link or a hard link to a held file', () => {
  /** A state file held by a simulator of this process, and the links made to it. */
  async function heldState(): Promise<{ file: string; close: () => Promise<void> }> {
    const file = tmpFile();
    const sim = makeSim({ state: file });
    await sim.listen(0);
    return { file, close: () => sim.close() };
  }

  it('a symbolic link to a held state file is refused as the file itself is, naming the file it leads to', async () => {
    const { file, close } = await heldState();
    const link = tmpFile('symlink');
    symlinkSync(file, link);
    const before = readFileSync(file, 'utf8');
    const message = `${link} (the same file as ${file}) is already held by this process (pid ${process.pid}): another simulator in it writes to it`;
    expect(() => createSimulator({ state: link, log: () => {} })).toThrow(message);
    expect(() => refuseIfHeld(link)).toThrow(message);
    expect(() => acquireFileLock(link, () => {})).toThrow(FileLockedError);
    // A relative link, through a directory that is itself a link, leads to the same lock.
    const linkedDir = tmpFile('dir-link', '');
    symlinkSync(dir, linkedDir);
    expect(lockFileOf(join(linkedDir, basename(link)))).toBe(`${file}.lock`);
    expect(readFileSync(file, 'utf8')).toBe(before);
    expect(existsSync(`${link}.lock`)).toBe(false);
    await close();
  });

  it('a hard link to a held state file is refused, naming the name it is held under', async () => {
    const { file, close } = await heldState();
    const link = tmpFile('hardlink');
    linkSync(file, link);
    const before = readFileSync(file, 'utf8');
    const message = `${link} (the same file as ${file}) is already held by this process (pid ${process.pid}): another simulator in it writes to it`;
    expect(() => createSimulator({ state: link, log: () => {} })).toThrow(message);
    expect(() => acquireFileLock(link, () => {})).toThrow(message);
    expect(readFileSync(file, 'utf8')).toBe(before);
    // Refused without a trace: no lock left beside the link.
    expect(existsSync(`${link}.lock`)).toBe(false);
    expect(heldLockCount()).toBe(1);
    await close();
    // Once the file is released, either name takes it.
    const sim = makeSim({ state: link });
    await sim.listen(0);
    await sim.close();
  });

  it('a hard link to a file another process holds is refused, naming that process', async () => {
    const file = tmpFile();
    writeFileSync(file, '');
    // A process that has the file open (as a simulator writing it has), with the lock naming it.
    const fd = openSync(file, 'r');
    const holder = spawn('sleep', ['30'], { stdio: [fd, 'ignore', 'ignore'] });
    closeSync(fd);
    try {
      const start = parseStat(readFileSync(`/proc/${holder.pid}/stat`, 'utf8')).start as number;
      writeLock(file, { ...selfHolder(), pid: holder.pid as number, start });
      const link = tmpFile('hardlink');
      linkSync(file, link);
      const message = `${link} (the same file as ${file}) is held by another running simulator (pid ${holder.pid}, lock file ${file}.lock); stop it, or choose another file`;
      expect(() => refuseIfHeld(link)).toThrow(message);
      expect(() => makeSim({ record: link })).toThrow(message);
      expect(() => acquireFileLock(link, () => {})).toThrow(message);
      expect(existsSync(`${link}.lock`)).toBe(false);
    } finally {
      holder.kill('SIGKILL');
    }
  });

  it('a transcript recorded under one name is refused under a symbolic link to it', async () => {
    const file = tmpFile();
    const first = makeSim({ record: file });
    await first.listen(0);
    const link = tmpFile('symlink');
    symlinkSync(file, link);
    expect(() => createSimulator({ record: link, log: () => {} })).toThrow(`${link} (the same file as ${file}) is already held by this process`);
    await first.close();
  });

  it('a symbolic link to a file not made yet is locked beside the file it will make', () => {
    const later = tmpFile('later', '');
    const target = join(later, 'state.jsonl');
    const link = tmpFile('dangling');
    symlinkSync(target, link);
    mkdirSync(later);
    expect(lockFileOf(link)).toBe(`${target}.lock`);
    const lock = acquireFileLock(link, () => {});
    expect(existsSync(`${target}.lock`)).toBe(true);
    expect(() => acquireFileLock(target, () => {})).toThrow(FileLockedError);
    lock.release();
  });

  it('a state file kept through a symbolic link stays behind it when the file is replaced (a global reset)', async () => {
    const file = tmpFile();
    const link = tmpFile('symlink');
    symlinkSync(file, link);
    const sim = makeSim({ state: link });
    await sim.listen(0);
    const created = await fetch(`${sim.url}/v1/videos`, {
      method: 'POST',
      headers: { authorization: 'Bearer sk_test_link', 'content-type': 'application/json' },
      body: JSON.stringify(VALID_VIDEO),
    });
    expect(created.status).toBe(200);
    expect((await fetch(`${sim.url}/_sim/reset`, { method: 'POST' })).status).toBe(200);
    // Replaced where the link leads: the link is still a link, so its lock (beside the file) still covers it.
    expect(lstatSync(link).isSymbolicLink()).toBe(true);
    expect(readFileSync(file, 'utf8').split('\n').filter(Boolean)).toHaveLength(1);
    expect(() => createSimulator({ state: file, log: () => {} })).toThrow(FileLockedError);
    await sim.close();
  });
});
