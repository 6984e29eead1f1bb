/**
 * The client report's rules at their edges, on the core (`clientReport` over journal records): what
 * counts as the same request, answers the client never got, Retry-After waited out, the examples
 * given. Scripted clients through the simulator: clientReport.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { bodyFingerprint } from '../src/request-path/body.js';
import { clientReport, type ClientReport, type ReportedRequest } from '../src/core/journal/clientReport.js';
import { journalRecord, PROMPT } from './helpers.js';

const KEY = 'sk_test_client';
const VIDEO = { model: 'video-3.2', prompt: PROMPT };

const codes = (report: ClientReport): string[] => report.findings.map((f) => f.code);

let n = 0;
function req(partial: Partial<ReportedRequest> & { atMs: number }): ReportedRequest {
  n++;
  return journalRecord({ request_id: `req_${n}`, ...partial });
}

const create = (atMs: number, extra: Partial<ReportedRequest> = {}): ReportedRequest =>
  req({ method: 'POST', path: '/v1/videos', operation: 'createVideo', bodyFingerprint: bodyFingerprint(Buffer.from(JSON.stringify(VIDEO))), atMs, ...extra });

describe('clientReport', () => {
  it('does not count a request sent again after a 400 once it has changed (body, path or query)', () => {
    const report = clientReport(KEY, [
      create(0, { status: 400, bodyFingerprint: bodyFingerprint(Buffer.from('{"model":"video-3.2"}')) }),
      create(1000, { status: 200 }),
      req({ atMs: 2000, path: '/v1/videos?limit=500', status: 400 }),
      req({ atMs: 3000, path: '/v1/videos?limit=100' }),
    ]);
    expect(report.findings).toEqual([]);
  });

  it('takes another Idempotency-Key as a change after a 400 about the key, but not after any other 400', () => {
    const afterKeyError = clientReport(KEY, [
      create(0, { status: 400, idempotencyKey: 'used-before', errorParam: 'Idempotency-Key' }),
      create(1000, { idempotencyKey: 'fresh' }),
    ]);
    expect(afterKeyError.findings).toEqual([]);
    const attempts = [
      create(0, { status: 422, idempotencyKey: 'a' }),
      create(1000, { status: 422, idempotencyKey: 'b' }),
      create(2000, { status: 422, idempotencyKey: 'c' }),
    ];
    const afterBodyError = clientReport(KEY, attempts);
    expect(afterBodyError.findings.map((f) => [f.code, f.count, f.examples])).toEqual([
      ['retry_not_retryable', 2, [attempts[1]?.request_id, attempts[2]?.request_id]],
    ]);
  });

  it('does not judge how a client reacted to an answer it never got', () => {
    const report = clientReport(KEY, [
      create(0, { status: 400, idempotencyKey: 'k', undelivered: true }),
      create(0, { status: 400, idempotencyKey: 'k' }),
      req({ atMs: 0, status: 429, retryAfter: 5, undelivered: true }),
      req({ atMs: 10 }),
    ]);
    expect(report.findings).toEqual([]);
  });

  it('takes a retry that waited out every Retry-After as backing off, and a fixed wait after 500s as not', () => {
    const honoured = clientReport(KEY, [
      req({ atMs: 0, status: 429, retryAfter: 1 }),
      req({ atMs: 1000, status: 429, retryAfter: 1 }),
      req({ atMs: 2000, status: 429, retryAfter: 1 }),
      req({ atMs: 3000, status: 429, retryAfter: 1 }),
      req({ atMs: 4000, status: 429, retryAfter: 1 }),
      req({ atMs: 5000 }),
    ]);
    expect(honoured.findings).toEqual([]);
    const fixed = clientReport(KEY, [0, 1000, 2010, 3005, 4000].map((atMs) => req({ atMs, status: 500 })).concat(req({ atMs: 5010 })));
    expect(codes(fixed)).toEqual(['retry_without_backoff']);
  });

  it('counts a create retried with a new Idempotency-Key on each attempt', () => {
    const report = clientReport(KEY, [create(0, { status: 500, idempotencyKey: 'a' }), create(2000, { idempotencyKey: 'b' })]);
    expect(codes(report)).toEqual(['post_retry_without_idempotency_key']);
  });

  it('counts a cancel after the client saw the generation verifying, and not a retrieve or cancel of one it only saw processing', () => {
    const video = (atMs: number, operation: string, videoStatus: string, status = 200): ReportedRequest =>
      req({ atMs, method: operation === 'cancelVideo' ? 'DELETE' : 'GET', path: '/v1/videos/vid_1', operation, status, videoId: status === 200 ? 'vid_1' : undefined, videoStatus: status === 200 ? videoStatus : undefined });
    expect(clientReport(KEY, [video(0, 'retrieveVideo', 'processing'), video(3000, 'cancelVideo', 'canceled')]).findings).toEqual([]);
    const report = clientReport(KEY, [video(0, 'retrieveVideo', 'verifying'), video(3000, 'cancelVideo', '', 400)]);
    expect(codes(report)).toEqual(['cancel_not_cancelable']);
  });

  it('gives at most five examples, the first ones', () => {
    const records = Array.from({ length: 8 }, (_, i) => create(i * 1000, { status: 400 }));
    const [finding] = clientReport(KEY, records).findings;
    expect(finding?.count).toBe(7);
    expect(finding?.examples).toEqual(records.slice(1, 6).map((r) => r.request_id));
  });
});
