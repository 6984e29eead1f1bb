/**
 * The fault queue (src/core/faults/faults.ts) files faults by what they match on, so that a request looks
 * only at those that could match it. The match order must stay the queue's: a request takes a shot
 * of the first queued fault that matches it. Held here against the plain scan of the queue the
 * index replaced, over random queues and requests (fast-check), with snapshots, account resets and
 * media downloads in between.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FaultQueue, type FaultRequest, type QueuedFault } from '../src/core/faults/faults.js';
import { matchesPath } from '../src/core/pathPattern.js';

/** The queue as it was: one array in queue order, scanned from the start. */
class ScannedQueue {
  faults: QueuedFault[] = [];

  take(method: string, path: string, apiKey: string | null, documented: readonly number[]): QueuedFault | undefined {
    return this.takeWhere(
      (f) => (f.method === null || f.method === method) && (f.apiKey === null || f.apiKey === apiKey) && matchesPath(f.path, path) && (f.error === null || documented.includes(f.error.status)),
    );
  }

  takeMedia(method: string, path: string): QueuedFault | undefined {
    const asMethod = method === 'HEAD' ? 'GET' : method;
    return this.takeWhere((f) => f.path.startsWith('/cdn/') && (f.method === null || f.method === asMethod || f.method === method) && matchesPath(f.path, path));
  }

  private takeWhere(matches: (f: QueuedFault) => boolean): QueuedFault | undefined {
    const index = this.faults.findIndex(matches);
    if (index < 0) return undefined;
    const fault = this.faults[index] as QueuedFault;
    if (--fault.remaining <= 0) this.faults.splice(index, 1);
    return fault;
  }
}

const SERVICE_PATHS = ['/v1/videos', '/v1/videos/vid_a', '/v1/videos/vid_b', '/v1/images'];
const MEDIA_PATHS = ['/cdn/videos/vid_a.mp4', '/cdn/videos/vid_b.mp4', '/cdn/images/img_a.png'];
const PATTERNS = [...SERVICE_PATHS, '/v1/videos/*', '/v1/videos/vid_*', '/v1/*', '/v1*', '/v*', '/*', '/v1/images*'];
const MEDIA_PATTERNS = [...MEDIA_PATHS, '/cdn/*', '/cdn/videos/*', '/cdn/videos/vid_a*'];
const KEYS = ['sk_test_a', 'sk_test_b', 'sk_test_c'];
const DOCUMENTED: Record<string, readonly number[]> = { GET: [200, 400, 401, 403, 404, 429, 500], POST: [200, 400, 401, 402, 403, 404, 422, 429, 500], DELETE: [200, 400, 401, 403, 404, 429, 500] };

type Step =
  | { kind: 'add'; fault: Omit<FaultRequest, 'latency_ms'> }
  | { kind: 'take'; method: string; path: string; apiKey: string }
  | { kind: 'media'; method: string; path: string }
  | { kind: 'forget'; apiKey: string }
  | { kind: 'snapshot' }
  | { kind: 'clear' };

const serviceFault = fc.record({
  path: fc.constantFrom(...PATTERNS),
  method: fc.constantFrom(null, 'GET', 'POST', 'DELETE'),
  status: fc.constantFrom(null, 402, 404, 429, 500),
  times: fc.integer({ min: 1, max: 3 }),
  api_key: fc.constantFrom(null, ...KEYS),
});
const mediaFault = fc.record({
  path: fc.constantFrom(...MEDIA_PATTERNS),
  method: fc.constantFrom(null, 'GET', 'POST'),
  network: fc.constant('reset' as const),
  times: fc.integer({ min: 1, max: 3 }),
});
const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 6, arbitrary: serviceFault.map((fault): Step => ({ kind: 'add', fault })) },
  { weight: 2, arbitrary: mediaFault.map((fault): Step => ({ kind: 'add', fault })) },
  { weight: 8, arbitrary: fc.record({ kind: fc.constant('take' as const), method: fc.constantFrom('GET', 'POST', 'DELETE'), path: fc.constantFrom(...SERVICE_PATHS), apiKey: fc.constantFrom(...KEYS) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('media' as const), method: fc.constantFrom('GET', 'HEAD', 'POST'), path: fc.constantFrom(...MEDIA_PATHS) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('forget' as const), apiKey: fc.constantFrom(...KEYS) }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'snapshot' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'clear' as const }) },
);

/** Each fault carries its own latency, its name: what a take answers tells which fault it was. */
const nameOf = (f: QueuedFault | undefined): number | null => (f === undefined ? null : f.latencyMs);

describe('FaultQueue', () => {
  it('takes the first queued fault that matches, as a scan of the queue did (fuzzed)', () => {
    fc.assert(
      fc.property(fc.array(step, { minLength: 1, maxLength: 120 }), (steps) => {
        let queue = new FaultQueue(10_000);
        const scanned = new ScannedQueue();
        let named = 0;
        for (const s of steps) {
          if (s.kind === 'add') {
            named++;
            queue.add({ ...s.fault, latency_ms: named });
            // The queue's own copy, as it queued it.
            scanned.faults.push(structuredClone(queue.toState().at(-1) as QueuedFault));
          } else if (s.kind === 'take') {
            expect(nameOf(queue.take(s.method, s.path, s.apiKey, DOCUMENTED[s.method] as number[]))).toBe(nameOf(scanned.take(s.method, s.path, s.apiKey, DOCUMENTED[s.method] as number[])));
          } else if (s.kind === 'media') {
            expect(nameOf(queue.takeMedia(s.method, s.path))).toBe(nameOf(scanned.takeMedia(s.method, s.path)));
          } else if (s.kind === 'forget') {
            queue.forget(s.apiKey);
            scanned.faults = scanned.faults.filter((f) => f.apiKey !== s.apiKey);
          } else if (s.kind === 'snapshot') {
            const restored = new FaultQueue(10_000);
            restored.fromState(queue.toState());
            queue = restored;
          } else {
            queue.clear();
            scanned.faults = [];
          }
          expect(queue.toState()).toEqual(scanned.faults);
          expect(queue.waiting()).toBe(scanned.faults.reduce((n, f) => n + f.remaining, 0));
        }
      }),
      { numRuns: 300, seed: 20_260_107 },
    );
  });

  it('takes in queue order across patterns, methods, accounts and statuses', () => {
    const queue = new FaultQueue(100);
    const add = (fault: Partial<FaultRequest>, name: number) => queue.add({ path: '/v1/videos', latency_ms: name, ...fault });
    add({ path: '/v1/*', api_key: 'sk_test_b' }, 1);
    add({ path: '/v1/videos', status: 402 }, 2); // never a GET's: 402 is not documented for it
    add({ path: '/v1/videos*', method: 'POST' }, 3);
    add({ path: '/*', status: 500, times: 2 }, 4);
    add({ path: '/v1/videos', api_key: 'sk_test_a' }, 5);
    const get = () => nameOf(queue.take('GET', '/v1/videos', 'sk_test_a', DOCUMENTED.GET as number[]));
    const post = () => nameOf(queue.take('POST', '/v1/videos', 'sk_test_a', DOCUMENTED.POST as number[]));
    expect([get(), get(), get(), get()]).toEqual([4, 4, 5, null]);
    expect([post(), post(), post()]).toEqual([2, 3, null]);
    expect(nameOf(queue.take('GET', '/v1/images', 'sk_test_b', DOCUMENTED.GET as number[]))).toBe(1);
    expect(queue.waiting()).toBe(0);
  });

  it('a request of an account looks past every fault of other accounts (10,000 of them) to its own', () => {
    const queue = new FaultQueue(20_000);
    for (let i = 0; i < 10_000; i++) queue.add({ path: '/v1/videos', method: 'GET', status: 500, api_key: `sk_test_other_${i}` });
    queue.add({ path: '/v1/*', status: 429, api_key: 'sk_test_me' });
    expect(queue.take('GET', '/v1/videos', 'sk_test_me', DOCUMENTED.GET as number[])?.error?.status).toBe(429);
    expect(queue.take('GET', '/v1/videos', 'sk_test_me', DOCUMENTED.GET as number[])).toBeUndefined();
    queue.forget('sk_test_other_9999');
    expect(queue.waiting()).toBe(9_999);
  });
});
