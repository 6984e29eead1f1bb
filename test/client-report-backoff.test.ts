/**
 * `retry_without_backoff` judges the trend of a client's waits over a run of retries: seeded
 * clients with full-jitter and equal-jitter exponential backoff pass, over many retries and many
 * seeds, while a fixed interval (timer noise included) and shrinking waits do not. On the core
 * (`clientReport` over journal records), and once through the simulator on the manual clock.
 */
import seedrandom from 'seedrandom';
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { BACKOFF_GROWTH, MIN_JUDGED_WAITS, clientReport, type ReportedRequest } from '../src/core/journal/clientReport.js';
import { bearer, journalRecord, makeSim, queueFault } from './helpers.js';

const KEY = 'sk_test_backoff';
/** The first cap of the backoffs below (ms); each retry doubles it. */
const BASE_MS = 200;
const SEEDS = Array.from({ length: 500 }, (_, i) => `seed-${i}`);

type Backoff = (retry: number, random: () => number) => number;

/** Each wait drawn uniformly in [0, cap], the cap doubling (AWS's "full jitter"). */
const fullJitter: Backoff = (retry, random) => random() * BASE_MS * 2 ** retry;
/** Half the cap, plus a draw in [0, cap / 2] ("equal jitter"). */
const equalJitter: Backoff = (retry, random) => {
  const cap = BASE_MS * 2 ** retry;
  return cap / 2 + (random() * cap) / 2;
};
/** One second, give or take 5% of timer noise. */
const fixedInterval: Backoff = (_retry, random) => 1000 * (0.95 + 0.1 * random());
/** Each wait 80% of the one before, give or take 5%. */
const shrinking: Backoff = (retry, random) => 1000 * 0.8 ** retry * (0.95 + 0.1 * random());
/** Shrinking overall, though every other wait is longer than the one before it. */
const zigzag: Backoff = (retry) => 1000 * 0.8 ** retry * (retry % 2 === 0 ? 1 : 0.6);

/** The journal of a list retried after `retries` 500s with `backoff`'s waits (whole ms, as the journal keeps them), then answered 200. */
function retried(backoff: Backoff, retries: number, seed: string): ReportedRequest[] {
  const random = seedrandom(seed);
  let atMs = 0;
  const records = [journalRecord({ account: KEY, atMs, status: 500, request_id: 'req_0' })];
  for (let retry = 0; retry < retries; retry++) {
    atMs += Math.round(backoff(retry, random));
    records.push(journalRecord({ account: KEY, atMs, status: retry === retries - 1 ? 200 : 500, request_id: `req_${retry + 1}` }));
  }
  return records;
}

/** The records of a list retried with these waits (ms), each attempt but the last answered 500. */
function withWaits(waits: number[]): ReportedRequest[] {
  let atMs = 0;
  return [0, ...waits].map((wait, i) => journalRecord({ account: KEY, atMs: (atMs += wait), status: i === waits.length ? 200 : 500, request_id: `req_${i}` }));
}

const flagged = (records: ReportedRequest[]): boolean => clientReport(KEY, records).findings.some((f) => f.code === 'retry_without_backoff');

/** How many of the seeds' runs of `retries` waits get the finding. */
const flaggedSeeds = (backoff: Backoff, retries: number): number => SEEDS.filter((seed) => flagged(retried(backoff, retries, seed))).length;

describe('retry_without_backoff over a run of retries', () => {
  it('passes a seeded full-jitter client over 10 retries, for every one of 500 seeds', () => {
    expect(flaggedSeeds(fullJitter, 10)).toBe(0);
  });

  it('passes a seeded equal-jitter client over 4 to 10 retries, for every one of 500 seeds', () => {
    for (let retries = MIN_JUDGED_WAITS; retries <= 10; retries++) expect(flaggedSeeds(equalJitter, retries), `${retries} retries`).toBe(0);
  });

  it('does not judge fewer than four waits: full jitter drew 0.21 s then 0.10 s', () => {
    expect(flagged(withWaits([210, 100]))).toBe(false);
    expect(flagged(withWaits([210, 100, 90]))).toBe(false);
    for (let retries = 1; retries < MIN_JUDGED_WAITS; retries++) expect(flaggedSeeds(fixedInterval, retries), `${retries} retries`).toBe(0);
  });

  it('flags full jitter by chance as rarely as docs/client-report.md says: under 1% of runs of 4 waits, under 0.1% of 5 to 9', () => {
    // 500 seeds: 1% is 5 runs, 0.1% less than one.
    expect(flaggedSeeds(fullJitter, 4)).toBeLessThan(5);
    for (let retries = 5; retries < 10; retries++) expect(flaggedSeeds(fullJitter, retries), `${retries} retries`).toBe(0);
  });

  it('flags a fixed interval with timer noise, over 4 to 10 retries, for every seed', () => {
    for (let retries = MIN_JUDGED_WAITS; retries <= 10; retries++) expect(flaggedSeeds(fixedInterval, retries), `${retries} retries`).toBe(SEEDS.length);
  });

  it('flags shrinking waits, steadily or every other wait, over 4 to 10 retries', () => {
    for (let retries = MIN_JUDGED_WAITS; retries <= 10; retries++) {
      expect(flaggedSeeds(shrinking, retries), `${retries} retries`).toBe(SEEDS.length);
      expect(flagged(retried(zigzag, retries, 'zigzag')), `${retries} retries`).toBe(true);
    }
  });

  it('takes a wait more than 1.25 times the mean of those before it as growth, and one at 1.25 times as none', () => {
    expect(BACKOFF_GROWTH).toBe(1.25);
    // Means before the last wait: 1000; 1250 is not more than 1.25 times it, 1251 is.
    expect(flagged(withWaits([1000, 1000, 1000, 1250]))).toBe(true);
    expect(flagged(withWaits([1000, 1000, 1000, 1251]))).toBe(false);
    // A capped backoff grew before it reached its cap.
    expect(flagged(withWaits([4000, 8000, 8000, 8000, 8000]))).toBe(false);
    // No wait at all is no growth.
    expect(flagged(withWaits([0, 0, 0, 0]))).toBe(true);
  });
});

describe('a full-jitter client through the simulator, on the manual clock', () => {
  /** Lists videos until answered 200, sleeping `backoff`'s waits (the account's clock moves) after each 500. */
  async function client(backoff: Backoff, seed: string) {
    const sim = makeSim();
    await queueFault(sim, { path: '/v1/videos', method: 'GET', status: 500, times: 8, api_key: KEY });
    const random = seedrandom(seed);
    for (let retry = 0; ; retry++) {
      const res = await request(sim.app).get('/v1/videos').set(bearer(KEY));
      if (res.status === 200) break;
      expect(res.status).toBe(500);
      sim.clock.advance(Math.round(backoff(retry, random)) / 1000, KEY);
    }
    return sim.report(KEY).findings.map((f) => f.code);
  }

  it('gets no finding with full jitter, and retry_without_backoff with a fixed interval', async () => {
    expect(await client(fullJitter, 'through the simulator')).toEqual([]);
    expect(await client(fixedInterval, 'through the simulator')).toEqual(['retry_without_backoff']);
  });
});
