/**
 * The core units, used directly (no HTTP): scheduler, virtual clock, token buckets, idempotency
 * store, journal, random streams, fate drawing, distributions and scenario merging.
 */
import { describe, expect, it } from 'vitest';

import { VirtualClock, isoTime, secondsToMs } from '../src/core/time/clock.js';
import { IdempotencyLedger, IdempotencyStore, requestFingerprint } from '../src/core/requests/idempotency.js';
import { Journal, type JournalEntry, type SettledRecord } from '../src/core/journal/journal.js';
import { journalRecord } from './helpers.js';
import { drawFate, type FateRequest } from '../src/core/generations/fate.js';
import { createStream } from '../src/core/random.js';
import { TokenBucket } from '../src/core/accounts/rateLimit.js';
import { sample, type Distribution } from '../src/core/scenario/distribution.js';
import { BASE_SCENARIO, PROCESSING_STAGES, mergeScenario, type Scenario, type TimedStage } from '../src/core/scenario/scenario.js';
import { Scheduler } from '../src/core/time/scheduler.js';
import { loadScenario } from '../src/scenarios/load.js';

const START = Date.parse('2026-01-01T00:00:00.000Z');

// ---------------------------------------------------------------------------------------------

describe('Scheduler', () => {
  it('runs due entries in due order and leaves later ones scheduled', () => {
    const s = new Scheduler<string>();
    s.schedule(30, 'c');
    s.schedule(10, 'a');
    s.schedule(50, 'late');
    s.schedule(20, 'b');
    const ran: [string, number][] = [];
    const count = s.runUntil(30, (p, due) => ran.push([p, due]));
    expect(ran).toEqual([
      ['a', 10],
      ['b', 20],
      ['c', 30],
    ]);
    expect(count).toBe(3);
    expect(s.size).toBe(1);
    expect(s.peekDue()).toBe(50);
  });

  it('breaks ties of equal due times by insertion order', () => {
    const s = new Scheduler<number>();
    for (let i = 0; i < 50; i++) s.schedule(i % 2 === 0 ? 100 : 5, i);
    const ran: number[] = [];
    s.runUntil(100, (p) => ran.push(p));
    const odd = Array.from({ length: 25 }, (_, k) => 2 * k + 1);
    const even = Array.from({ length: 25 }, (_, k) => 2 * k);
    expect(ran).toEqual([...odd, ...even]);
  });

  it('also runs entries scheduled during a run when they fall due within it, in due order', () => {
    const s = new Scheduler<string>();
    s.schedule(10, 'first');
    s.schedule(40, 'fourth');
    const ran: [string, number][] = [];
    s.runUntil(50, (p, due) => {
      ran.push([p, due]);
      if (p === 'first') {
        s.schedule(due + 10, 'second'); // 20: before 'fourth'
        s.schedule(due + 500, 'beyond'); // 510: after the run's end
      }
      if (p === 'second') s.schedule(due + 10, 'third'); // 30
    });
    expect(ran).toEqual([
      ['first', 10],
      ['second', 20],
      ['third', 30],
      ['fourth', 40],
    ]);
    expect(s.size).toBe(1);
    expect(s.peekDue()).toBe(510);
  });

  it('skips cancelled entries and counts only live ones in size', () => {
    const s = new Scheduler<string>();
    const a = s.schedule(10, 'a');
    s.schedule(20, 'b');
    const c = s.schedule(5, 'c');
    expect(s.size).toBe(3);
    s.cancel(a);
    s.cancel(a); // twice: still one fewer
    s.cancel(c);
    expect(s.size).toBe(1);
    expect(s.peekDue()).toBe(20);
    const ran: string[] = [];
    expect(s.runUntil(100, (p) => ran.push(p))).toBe(1);
    expect(ran).toEqual(['b']);
    expect(s.size).toBe(0);
  });

  it('ignores a cancel of an entry that has already run', () => {
    const s = new Scheduler<string>();
    const a = s.schedule(1, 'a');
    s.schedule(2, 'b');
    s.runUntil(1, () => undefined);
    expect(s.size).toBe(1);
    s.cancel(a);
    expect(s.size).toBe(1);
  });

  it('lets a run cancel an entry that is due later in the same run', () => {
    const s = new Scheduler<string>();
    s.schedule(1, 'canceller');
    const victim = s.schedule(2, 'victim');
    const ran: string[] = [];
    s.runUntil(10, (p) => {
      ran.push(p);
      if (p === 'canceller') s.cancel(victim);
    });
    expect(ran).toEqual(['canceller']);
    expect(s.size).toBe(0);
  });

  it('fails loudly when an entry keeps rescheduling itself past its chain limit', () => {
    const s = new Scheduler<string>(3);
    s.schedule(1, 'loop');
    let runs = 0;
    expect(() =>
      s.runUntil(10, (p, due) => {
        runs++;
        s.schedule(due, p);
      }),
    ).toThrow(/keeps rescheduling itself/);
    expect(runs).toBe(7); // (1 live + 1) x 3 allowed, the 7th is refused
  });

  it('peekDue answers undefined when nothing is scheduled, and runUntil then runs nothing', () => {
    const s = new Scheduler<string>();
    expect(s.peekDue()).toBeUndefined();
    expect(s.runUntil(1e12, () => undefined)).toBe(0);
    const e = s.schedule(7, 'x');
    expect(s.peekDue()).toBe(7);
    s.cancel(e);
    expect(s.peekDue()).toBeUndefined();
  });

  it('keeps due order over many random entries', () => {
    const s = new Scheduler<number>();
    const rng = createStream(3, 'scheduler-order');
    const dues: number[] = [];
    for (let i = 0; i < 2000; i++) {
      const due = rng.int(500);
      dues.push(due);
      s.schedule(due, i);
    }
    const seen: { due: number; i: number }[] = [];
    s.runUntil(10_000, (i, due) => seen.push({ due, i }));
    expect(seen).toHaveLength(2000);
    for (let k = 1; k < seen.length; k++) {
      const prev = seen[k - 1]!;
      const cur = seen[k]!;
      expect(prev.due < cur.due || (prev.due === cur.due && prev.i < cur.i)).toBe(true);
    }
  });
});

// ---------------------------------------------------------------------------------------------

describe('VirtualClock', () => {
  it('in manual mode moves only through advance, whatever the wall clock does', () => {
    let wall = 1_000_000;
    const clock = new VirtualClock('manual', 10, START, () => wall);
    expect(clock.now()).toBe(START);
    wall += 60_000;
    expect(clock.now()).toBe(START);
    clock.advance(1500);
    expect(clock.now()).toBe(START + 1500);
    expect(clock.state()).toEqual({ mode: 'manual', now: '2026-01-01T00:00:01.500Z', speed: 10 });
  });

  it('in realtime mode follows the injected wall clock times the speed, and advance jumps ahead', () => {
    let wall = 5_000;
    const clock = new VirtualClock('realtime', 10, START, () => wall);
    expect(clock.now()).toBe(START);
    wall += 250; // 250 ms of wall time at speed 10
    expect(clock.now()).toBe(START + 2500);
    clock.advance(60_000);
    expect(clock.now()).toBe(START + 62_500);
    wall += 1000;
    expect(clock.now()).toBe(START + 72_500);
    expect(clock.state().now).toBe('2026-01-01T00:01:12.500Z');
  });

  it('reports whole milliseconds in realtime mode', () => {
    let wall = 0;
    const clock = new VirtualClock('realtime', 10, START, () => wall);
    wall = 0.05; // 0.5 virtual ms
    expect(Number.isInteger(clock.now())).toBe(true);
    expect(clock.now()).toBe(START);
    wall = 0.15; // 1.5 virtual ms
    expect(clock.now()).toBe(START + 1);
  });

  it('state applies an account offset and writes ISO 8601 with milliseconds', () => {
    const clock = new VirtualClock('manual', 1, START, () => 0);
    expect(clock.state(30_000).now).toBe('2026-01-01T00:00:30.000Z');
    expect(clock.state().now).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(isoTime(START + 7)).toBe('2026-01-01T00:00:00.007Z');
  });

  it('secondsToMs keeps millisecond precision', () => {
    expect(secondsToMs(1.5)).toBe(1500);
    expect(secondsToMs(0.001)).toBe(1);
    expect(secondsToMs(0.1 + 0.2)).toBe(300);
    expect(secondsToMs(0)).toBe(0);
  });
});

// ---------------------------------------------------------------------------------------------

describe('TokenBucket', () => {
  it('starts full, spends one token per take and refuses when empty', () => {
    const bucket = new TokenBucket(3, 0.5, 0);
    const results = [bucket.take(0), bucket.take(0), bucket.take(0), bucket.take(0)];
    expect(results.map((r) => r.allowed)).toEqual([true, true, true, false]);
    expect(results.map((r) => r.remaining)).toEqual([2, 1, 0, 0]);
    expect(results.map((r) => r.limit)).toEqual([3, 3, 3, 3]);
    // Reset: seconds until full again at 0.5 tokens/s.
    expect(results.map((r) => r.resetSeconds)).toEqual([2, 4, 6, 6]);
    expect(results.slice(0, 3).every((r) => r.retryAfterSeconds === null)).toBe(true);
    // Retry-After: one whole token at 0.5/s takes 2 s.
    expect(results[3]!.retryAfterSeconds).toBe(2);
  });

  it('refills continuously on the given clock and floors the remaining tokens', () => {
    const bucket = new TokenBucket(10, 0.5, 0);
    for (let i = 0; i < 10; i++) bucket.take(0);
    // 1 s later: half a token, still refused; retry after ceil(0.5 / 0.5) = 1 s.
    const half = bucket.take(1000);
    expect(half).toMatchObject({ allowed: false, remaining: 0, retryAfterSeconds: 1, resetSeconds: 19 });
    // 2 s after that: 1.5 tokens; one is spent, 0.5 left.
    const ok = bucket.take(3000);
    expect(ok).toMatchObject({ allowed: true, remaining: 0, retryAfterSeconds: null, resetSeconds: 19 });
  });

  it('never refills above capacity', () => {
    const bucket = new TokenBucket(5, 100, 0);
    bucket.take(0);
    const later = bucket.take(1e9);
    expect(later.remaining).toBe(4);
    expect(later.resetSeconds).toBe(1);
  });

  it('gives a Retry-After of at least 1 s even with a fast refill', () => {
    const bucket = new TokenBucket(1, 1000, 0);
    bucket.take(0);
    const refused = bucket.take(0);
    expect(refused.allowed).toBe(false);
    expect(refused.retryAfterSeconds).toBe(1);
  });

  it('does not refill when time does not move forward', () => {
    const bucket = new TokenBucket(2, 1, 10_000);
    bucket.take(10_000);
    bucket.take(10_000);
    expect(bucket.take(5_000).allowed).toBe(false);
  });
});

// ---------------------------------------------------------------------------------------------

describe('IdempotencyStore', () => {
  it('misses an unknown key, replays a stored one with the same fingerprint, conflicts on another', () => {
    const store = new IdempotencyStore(1000, new IdempotencyLedger(100));
    expect(store.lookup('/v1/videos', 'k1', 'fp', 0)).toEqual({ kind: 'miss' });
    store.store('/v1/videos', 'k1', 'fp', 200, '{"id":"vid_1"}', 0);
    expect(store.lookup('/v1/videos', 'k1', 'fp', 500)).toEqual({ kind: 'replay', status: 200, text: '{"id":"vid_1"}' });
    expect(store.lookup('/v1/videos', 'k1', 'other', 500)).toEqual({ kind: 'conflict' });
  });

  it('scopes keys by endpoint', () => {
    const store = new IdempotencyStore(1000, new IdempotencyLedger(100));
    store.store('/v1/videos', 'k', 'fp', 200, '{}', 0);
    expect(store.lookup('/v1/images', 'k', 'fp', 0)).toEqual({ kind: 'miss' });
  });

  it('forgets an entry once its retention has passed', () => {
    const store = new IdempotencyStore(1000, new IdempotencyLedger(100));
    store.store('/v1/videos', 'k', 'fp', 200, '{"n":1}', 0);
    expect(store.lookup('/v1/videos', 'k', 'fp', 999).kind).toBe('replay');
    expect(store.lookup('/v1/videos', 'k', 'fp', 1000)).toEqual({ kind: 'miss' });
    // After expiry the key is free: a different request no longer conflicts.
    expect(store.lookup('/v1/videos', 'k', 'other', 1001)).toEqual({ kind: 'miss' });
  });

  it('expires entries one by one, in the order they were stored', () => {
    const store = new IdempotencyStore(1000, new IdempotencyLedger(100));
    store.store('/v1/videos', 'a', 'fp', 200, 'A', 0);
    store.store('/v1/videos', 'b', 'fp', 200, 'B', 600);
    expect(store.lookup('/v1/videos', 'a', 'fp', 1200)).toEqual({ kind: 'miss' });
    expect(store.lookup('/v1/videos', 'b', 'fp', 1200)).toEqual({ kind: 'replay', status: 200, text: 'B' });
  });
});

describe('IdempotencyStore and IdempotencyLedger', () => {
  it('matches an answer stored by an earlier version, which kept the request itself instead of its digest', () => {
    const store = new IdempotencyStore(1000, new IdempotencyLedger(100));
    store.fromState([{ key: '/v1/videos k', fingerprint: '{"model":"m"}', status: 200, text: 'T', expires_at: 1000 }]);
    expect(store.lookup('/v1/videos', 'k', 'digest-of-m', 0, '{"model":"m"}')).toEqual({ kind: 'replay', status: 200, text: 'T' });
    expect(store.lookup('/v1/videos', 'k', 'digest-of-n', 0, '{"model":"n"}')).toEqual({ kind: 'conflict' });
  });

  it('drops the oldest answer of all stores past its limit, and restores that order from ranks (answers without one first)', () => {
    const ledger = new IdempotencyLedger(3);
    const a = new IdempotencyStore(1000, ledger);
    const b = new IdempotencyStore(1000, ledger);
    a.store('/v1/videos', 'a1', 'fp', 200, 'A1', 0);
    b.store('/v1/videos', 'b1', 'fp', 200, 'B1', 0);
    a.store('/v1/videos', 'a2', 'fp', 200, 'A2', 0);
    b.store('/v1/videos', 'b2', 'fp', 200, 'B2', 0);
    expect(a.lookup('/v1/videos', 'a1', 'fp', 0)).toEqual({ kind: 'miss' });
    expect(ledger.size).toBe(3);

    const ranks = ledger.ranks();
    const restored = new IdempotencyLedger(2);
    const a2 = new IdempotencyStore(1000, restored);
    const b2 = new IdempotencyStore(1000, restored);
    a2.fromState(a.toState(ranks));
    b2.fromState([...b.toState(ranks), { key: '/v1/videos old', fingerprint: 'fp', status: 200, text: 'OLD', expires_at: 1000 }]);
    restored.restore([a2, b2]);
    // Order: old (no rank), b1, a2, b2; a limit of 2 keeps a2 and b2.
    expect(restored.size).toBe(2);
    expect(b2.lookup('/v1/videos', 'old', 'fp', 0)).toEqual({ kind: 'miss' });
    expect(b2.lookup('/v1/videos', 'b1', 'fp', 0)).toEqual({ kind: 'miss' });
    expect(a2.lookup('/v1/videos', 'a2', 'fp', 0).kind).toBe('replay');
    expect(b2.lookup('/v1/videos', 'b2', 'fp', 0).kind).toBe('replay');
  });
});

describe('requestFingerprint', () => {
  it('ignores key order, at every depth', () => {
    expect(requestFingerprint({ model: 'm', prompt: 'p', extra: { x: 1, y: [1, 2] } })).toBe(
      requestFingerprint({ extra: { y: [1, 2], x: 1 }, prompt: 'p', model: 'm' }),
    );
  });

  it('drops top-level fields that are null', () => {
    expect(requestFingerprint({ model: 'm', prompt: 'p', negative_prompt: null })).toBe(
      requestFingerprint({ model: 'm', prompt: 'p' }),
    );
  });

  it('tells different values apart', () => {
    const base = requestFingerprint({ model: 'm', prompt: 'p' });
    expect(requestFingerprint({ model: 'm', prompt: 'q' })).not.toBe(base);
    expect(requestFingerprint({ model: 'm', prompt: 'p', duration_seconds: 8 })).not.toBe(base);
    expect(requestFingerprint({ a: [1, 2] })).not.toBe(requestFingerprint({ a: [2, 1] }));
    expect(requestFingerprint({ a: '1' })).not.toBe(requestFingerprint({ a: 1 }));
  });
});

// ---------------------------------------------------------------------------------------------

function record(n: number, account: string | null, extra: Partial<SettledRecord> = {}): SettledRecord {
  return journalRecord({ path: `/v1/videos?n=${n}`, account, atMs: START + n, request_id: `req_${n}`, ...extra });
}

function entry(n: number, account: string | null): JournalEntry {
  return { seq: n, method: 'GET', path: `/v1/videos?n=${n}`, status: 200, account, at: isoTime(START + n), request_id: `req_${n}` };
}

describe('Journal', () => {
  it('keeps only the most recent entries up to its capacity, oldest first', () => {
    const journal = new Journal(3);
    for (let n = 1; n <= 5; n++) journal.record(record(n, 'sk_test_a'));
    const { data, has_more } = journal.recent(100);
    expect(data.map((e) => e.request_id)).toEqual(['req_3', 'req_4', 'req_5']);
    expect(has_more).toBe(false);
  });

  it('stays bounded over many records', () => {
    const journal = new Journal(10);
    for (let n = 1; n <= 5000; n++) journal.record(record(n, 'sk_test_a'));
    const { data } = journal.recent(100_000);
    expect(data).toHaveLength(10);
    expect(data[0]!.request_id).toBe('req_4991');
    expect(data[9]!.request_id).toBe('req_5000');
  });

  it('answers the most recent N with has_more, and filters by account', () => {
    const journal = new Journal(100);
    for (let n = 1; n <= 6; n++) journal.record(record(n, n % 2 === 0 ? 'sk_test_even' : 'sk_test_odd'));
    expect(journal.recent(2)).toEqual({ data: [entry(5, 'sk_test_odd'), entry(6, 'sk_test_even')], has_more: true });
    expect(journal.recent(10, 'sk_test_even').data.map((e) => e.request_id)).toEqual(['req_2', 'req_4', 'req_6']);
    expect(journal.recent(3, 'sk_test_even').has_more).toBe(false);
  });

  it('reads a record as the API entry: ISO time, optional fields only when set', () => {
    const journal = new Journal(10);
    journal.record(record(1, 'sk_test_a', { negative_prompt_effective: null, fault: 'queued fault: 500 internal_error' }));
    journal.record(record(2, 'sk_test_a'));
    expect(JSON.stringify(journal.recent(10).data)).toBe(
      JSON.stringify([
        { ...entry(1, 'sk_test_a'), negative_prompt_effective: null, fault: 'queued fault: 500 internal_error' },
        entry(2, 'sk_test_a'),
      ]),
    );
  });

  it('forgets one account and keeps the others in order', () => {
    const journal = new Journal(100);
    journal.record(record(1, 'sk_test_a'));
    journal.record(record(2, 'sk_test_b'));
    journal.record(record(3, null));
    journal.record(record(4, 'sk_test_a'));
    journal.forget('sk_test_a');
    expect(journal.recent(100).data.map((e) => e.request_id)).toEqual(['req_2', 'req_3']);
    journal.record(record(5, 'sk_test_a'));
    expect(journal.recent(100).data.map((e) => e.request_id)).toEqual(['req_2', 'req_3', 'req_5']);
  });
});

// ---------------------------------------------------------------------------------------------

function draws(seed: number, purpose: (string | number)[], n = 32): number[] {
  const s = createStream(seed, ...purpose);
  return Array.from({ length: n }, () => s.next());
}

describe('createStream', () => {
  it('gives the same sequence for the same seed and purpose', () => {
    expect(draws(42, ['sk_test_a', 'video', 0])).toEqual(draws(42, ['sk_test_a', 'video', 0]));
  });

  it('gives a different sequence for a different purpose or seed', () => {
    const base = draws(42, ['sk_test_a', 'video', 0]);
    expect(draws(42, ['sk_test_a', 'video', 1])).not.toEqual(base);
    expect(draws(42, ['sk_test_b', 'video', 0])).not.toEqual(base);
    expect(draws(42, ['sk_test_a', 'image', 0])).not.toEqual(base);
    expect(draws(43, ['sk_test_a', 'video', 0])).not.toEqual(base);
  });

  it('draws inside the documented ranges', () => {
    const s = createStream(1, 'ranges');
    for (let i = 0; i < 1000; i++) {
      const x = s.next();
      expect(x >= 0 && x < 1).toBe(true);
      const k = s.int(7);
      expect(Number.isInteger(k) && k >= 0 && k < 7).toBe(true);
    }
    expect(s.token(24)).toMatch(/^[0-9A-Za-z]{24}$/);
    expect(s.token(24, 'vid_')).toMatch(/^vid_[0-9A-Za-z]{24}$/);
    expect(Array.from({ length: 100 }, () => s.chance(0)).some(Boolean)).toBe(false);
    expect(Array.from({ length: 100 }, () => s.chance(1)).every(Boolean)).toBe(true);
  });
});

// ---------------------------------------------------------------------------------------------

const FATE_REQUEST: FateRequest = { model: 'video-3.2', resolution: '1080p', durationSeconds: 8, keyframeId: null };

/** [min, max] of a distribution in seconds (max Infinity when unbounded above). */
function bounds(d: Distribution): [number, number] {
  switch (d.type) {
    case 'fixed':
      return [d.value, d.value];
    case 'uniform':
      return [d.min, d.max];
    case 'lognormal':
      return [d.min ?? 0, d.max ?? Infinity];
  }
}

describe('drawFate', () => {
  it('draws the same fate from the same stream', () => {
    const fast = loadScenario('fast');
    const a = drawFate(fast, FATE_REQUEST, createStream(42, 'sk_test_a', 'video', 3));
    const b = drawFate(fast, FATE_REQUEST, createStream(42, 'sk_test_a', 'video', 3));
    expect(a).toEqual(b);
    expect(a.id).toMatch(/^vid_[0-9A-Za-z]{24}$/);
    const c = drawFate(fast, FATE_REQUEST, createStream(42, 'sk_test_a', 'video', 4));
    expect(c.id).not.toBe(a.id);
  });

  for (const name of ['fast', 'default']) {
    it(`keeps every stage duration of '${name}' inside the scenario's distribution bounds`, () => {
      const scenario = loadScenario(name);
      for (let i = 0; i < 400; i++) {
        const durationSeconds = 4 + (i % 13);
        const fate = drawFate(scenario, { ...FATE_REQUEST, durationSeconds }, createStream(7, 'bounds', name, i));
        const stages = fate.stageNames.slice(0, fate.durationsMs.length);
        expect(stages[0]).toBe('queue');
        expect(stages.at(-1)).toBe('output_verification');
        expect(stages.includes('keyframe')).toBe(fate.keyframeMode === 'generated');
        for (const [index, stage] of stages.entries()) {
          const durationMs = fate.durationsMs[index] as number;
          const spec = scenario.stages[stage];
          const scale = spec.per_output_second ? durationSeconds : 1;
          const [lo, hi] = bounds(spec.duration);
          // Durations are rounded to whole milliseconds.
          expect(durationMs, `${stage} of generation ${i}`).toBeGreaterThanOrEqual(Math.round(lo * scale * 1000));
          expect(durationMs, `${stage} of generation ${i}`).toBeLessThanOrEqual(Math.round(hi * scale * 1000));
        }
      }
    });
  }

  it('passes the keyframe stage at once when the request reuses a keyframe', () => {
    const fast = loadScenario('fast');
    for (let i = 0; i < 20; i++) {
      const fate = drawFate(fast, { ...FATE_REQUEST, keyframeId: 'img_x' }, createStream(1, 'reuse', i));
      expect(fate.keyframeMode).toBe('reused');
      expect(fate.keyframeImageId).toBe('img_x');
      expect(fate.durationsMs[fate.stageNames.indexOf('keyframe')]).toBe(0);
    }
  });

  it('makes no failure and no flags in the happy-path scenarios', () => {
    for (const name of ['fast', 'default']) {
      const scenario = loadScenario(name);
      for (let i = 0; i < 200; i++) {
        const fate = drawFate(scenario, FATE_REQUEST, createStream(9, 'happy', name, i));
        expect(fate.failure).toBeNull();
        expect(fate.compliance).toEqual({ verified: true, flags: [] });
      }
    }
  });
});

// ---------------------------------------------------------------------------------------------

function quantile(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] as number;
}

describe('sample', () => {
  it('draws a lognormal whose median and p95 match the configured ones within 5% over 20,000 draws', () => {
    const dist: Distribution = { type: 'lognormal', median: 15, p95: 45 };
    const rng = createStream(2026, 'lognormal-check');
    const values = Array.from({ length: 20_000 }, () => sample(dist, rng)).sort((a, b) => a - b);
    const median = quantile(values, 0.5);
    const p95 = quantile(values, 0.95);
    expect(Math.abs(median - 15) / 15).toBeLessThan(0.05);
    expect(Math.abs(p95 - 45) / 45).toBeLessThan(0.05);
  });

  it('clamps a lognormal to its min and max', () => {
    const dist: Distribution = { type: 'lognormal', median: 10, p95: 100, min: 5, max: 20 };
    const rng = createStream(1, 'clamp');
    const values = Array.from({ length: 2000 }, () => sample(dist, rng));
    expect(Math.min(...values)).toBe(5);
    expect(Math.max(...values)).toBe(20);
  });

  it('draws a uniform inside [min, max] and a fixed value exactly', () => {
    const rng = createStream(1, 'uniform');
    for (let i = 0; i < 1000; i++) {
      const x = sample({ type: 'uniform', min: 2, max: 5 }, rng);
      expect(x >= 2 && x <= 5).toBe(true);
    }
    expect(sample({ type: 'fixed', value: 0.5 }, rng)).toBe(0.5);
  });
});

// ---------------------------------------------------------------------------------------------

describe('mergeScenario', () => {
  it("changes one stage's duration and keeps the other stages and fields", () => {
    const base = loadScenario('default');
    const merged = mergeScenario(base, { stages: { queue: { duration: { type: 'fixed', value: 2 } } } });
    expect(merged.stages.queue.duration).toEqual({ type: 'fixed', value: 2 });
    for (const stage of PROCESSING_STAGES.filter((s): s is Exclude<TimedStage, 'queue'> => s !== 'queue')) {
      expect(merged.stages[stage]).toEqual(base.stages[stage]);
    }
    expect(merged.models).toEqual(base.models);
    expect(merged.rate_limits).toEqual(base.rate_limits);
  });

  it('replaces a distribution whole instead of mixing its fields', () => {
    const base = loadScenario('default'); // render: lognormal with min/max, per_output_second
    const merged = mergeScenario(base, { stages: { render: { duration: { type: 'uniform', min: 1, max: 2 } } } });
    expect(merged.stages.render.duration).toEqual({ type: 'uniform', min: 1, max: 2 });
    expect(merged.stages.render.per_output_second).toBe(true);
  });

  it('replaces arrays instead of merging them', () => {
    const base = loadScenario('default');
    const merged = mergeScenario(base, {
      models: { video: ['only-model'] },
      routing: [{ targets: [{ model: 'r' }] }],
    });
    expect(merged.models.video).toEqual(['only-model']);
    expect(merged.models.keyframe).toBe(base.models.keyframe);
    expect(merged.routing).toEqual([{ targets: [{ model: 'r' }] }]);
  });

  it('does not modify the base', () => {
    const base = loadScenario('default');
    const before = JSON.stringify(base);
    mergeScenario(base, { seed: 5, stages: { queue: { duration: { type: 'fixed', value: 1 } } }, models: { video: ['x'] } });
    expect(JSON.stringify(base)).toBe(before);
  });

  it('ignores __proto__ keys and leaves Object.prototype untouched', () => {
    const base: Scenario = structuredClone(BASE_SCENARIO);
    const override = JSON.parse(
      '{"seed": 5, "__proto__": {"polluted": "yes"}, "stages": {"__proto__": {"polluted2": "yes"}}, "constructor": {"prototype": {"polluted3": "yes"}}}',
    ) as unknown;
    const merged = mergeScenario(base, override) as Scenario & Record<string, unknown>;
    expect(merged.seed).toBe(5);
    expect(Object.getPrototypeOf(merged)).toBe(Object.prototype);
    expect(Object.getPrototypeOf(merged.stages)).toBe(Object.prototype);
    expect(Object.prototype.hasOwnProperty.call(merged, 'polluted')).toBe(false);
    expect(merged.polluted).toBeUndefined();
    expect((merged.stages as unknown as Record<string, unknown>).polluted2).toBeUndefined();
    const probe = {} as Record<string, unknown>;
    expect(probe.polluted).toBeUndefined();
    expect(probe.polluted2).toBeUndefined();
    expect(probe.polluted3).toBeUndefined();
    expect(merged.stages).toEqual(BASE_SCENARIO.stages);
  });
});
