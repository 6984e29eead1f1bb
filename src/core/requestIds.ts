/**
 * The forms of a request's id (`X-Request-Id`), made and read back here only. Ids count requests,
 * so that the same requests give the same ids: an account's `/v1` requests (`req_<tag>_000001`),
 * an account's control requests (`req_<tag>_sim_000001`), and every other request, counted
 * globally (`req_0000000001`): the one form that carries no account, whose number a state file
 * reads back to know how far the global count went.
 */

/** The id of an account's `n`th `/v1` request; `tag` is the account's (`accountTag`). */
export function accountRequestId(tag: string, n: number): string {
  return `req_${tag}_${String(n).padStart(6, '0')}`;
}

/** The id of the `n`th control request that names the account of `tag`. */
export function accountControlRequestId(tag: string, n: number): string {
  return `req_${tag}_sim_${String(n).padStart(6, '0')}`;
}

/** The id of the `n`th request counted globally. */
export function globalRequestId(n: number): string {
  return `req_${String(n).padStart(10, '0')}`;
}

/** The number of a global request id (`req_0000000012` is 12), or null for an account's id. */
export function globalIdNumber(id: string): number | null {
  return /^req_\d+$/.test(id) ? Number(id.slice(4)) : null;
}
