/**
 * The forms of request ids (`src/core/requests/requestIds.ts`): the global form is the one whose number is
 * read back (a state file's `{"ids":N}` and request lines), the account forms read back as none.
 */
import { describe, expect, it } from 'vitest';
import { accountControlRequestId, accountRequestId, globalIdNumber, globalRequestId } from '../src/core/requests/requestIds.js';

describe('request ids', () => {
  it('a global id is req_ and ten digits, and reads back as its number', () => {
    expect(globalRequestId(12)).toBe('req_0000000012');
    for (const n of [1, 12, 9_999_999_999, 12_345_678_901]) expect(globalIdNumber(globalRequestId(n))).toBe(n);
  });

  it("an account's ids carry its tag and six digits, and read back as no global number", () => {
    expect(accountRequestId('a1b2c3d4', 7)).toBe('req_a1b2c3d4_000007');
    expect(accountControlRequestId('a1b2c3d4', 7)).toBe('req_a1b2c3d4_sim_000007');
    expect(globalIdNumber(accountRequestId('a1b2c3d4', 7))).toBeNull();
    expect(globalIdNumber(accountControlRequestId('a1b2c3d4', 7))).toBeNull();
  });

  it.each(['', 'req_', 'req_12a', 'req_proxy_abc', 'REQ_0000000012', 'req_-1'])('%j is no global id', (id) => {
    expect(globalIdNumber(id)).toBeNull();
  });
});
