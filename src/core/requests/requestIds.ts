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

/** Where request ids are counted: globally, and per account's control requests. */
interface Counts {
  requestCount: number;
  nextControlRequest(apiKey: string): number;
}

/**
 * The id of a request. Ids count requests, so that the same requests give the same ids: an
 * authenticated /v1 request counts within its account (`req_<tag>_000001`, whatever other
 * accounts do meanwhile); any other request counts globally (`req_0000000001`). Resets restart
 * the counts.
 */
export function nextRequestId(counts: Counts, account?: { tag: string; requestCount: number }): string {
  if (account) return accountRequestId(account.tag, ++account.requestCount);
  return globalRequestId(++counts.requestCount);
}

/**
 * The id of a control request that names an account (`?api_key=`; `tag`: its `accountTag`):
 * counted within that key's control requests (`req_<tag>_sim_000001`), apart from its /v1 requests
 * (so watching an account never shifts its client's ids), and whatever other accounts do: the same
 * on one simulator as on the shard that owns the account. A reset of the account restarts the count.
 */
export function nextAccountControlId(counts: Counts, apiKey: string, tag: string): string {
  return accountControlRequestId(tag, counts.nextControlRequest(apiKey));
}
