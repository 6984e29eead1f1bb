/**
 * A shard: one of N simulators that together serve a team, each owning the accounts a proxy
 * hashes to it (docs/scaling.md). Every account is isolated, so a shard answers its accounts
 * exactly as one simulator would; the simulator does not route, it only knows which shard it is
 * (`GET /_sim/health` says so, state files and transcripts record it) and which keys are its own:
 * the proxy's hash is computed here too (`shardOfKey`), and a key of another shard is refused.
 */
import { fail, type SimError } from '../errors.js';

/** Shard `index` (from 0) of `count`. */
export interface ShardSpec {
  index: number;
  count: number;
}

/** A shard value that cannot be used; the message names it and says what is expected. */
export class ShardSpecError extends Error {
  override readonly name = 'ShardSpecError';
}

/** The most shards: the proxy's `split_clients` gives each at least 0.01% of the keys (`shardShares`). */
export const MAX_SHARDS = 10000;

const EXPECTED = 'expected I/N (shard I of N, counted from 0, so 0 <= I < N: 0/3, 1/3, 2/3) or auto/N (I from the host name, sim-2 is 2)';

/**
 * Reads `I/N` or `auto/N` (I taken from the trailing ordinal of `hostName`, as a Kubernetes
 * StatefulSet names its pods: `sim-2` is 2). Throws a `ShardSpecError` that names `given` (how the
 * value was given; null: the caller names it) when it is not one.
 */
export function parseShard(value: string, hostName: string, given: string | null = value): ShardSpec {
  const at = given === null ? '' : `${given}: `;
  const match = /^\s*(auto|\d+)\/(\d+)\s*$/.exec(value);
  if (!match) throw new ShardSpecError(`${at}${EXPECTED}`);
  const count = Number(match[2]);
  if (!Number.isSafeInteger(count) || count < 1 || count > MAX_SHARDS) throw new ShardSpecError(`${at}the shard count must be 1 to ${MAX_SHARDS} (${EXPECTED})`);
  let index: number;
  if (match[1] === 'auto') {
    const ordinal = /-(\d+)$/.exec(hostName);
    if (!ordinal) {
      throw new ShardSpecError(
        `${at}the host name '${hostName}' does not end with an ordinal (-0, -1, ...) as a StatefulSet's pods do; give the shard as I/N`,
      );
    }
    index = Number(ordinal[1]);
    if (index >= count) {
      throw new ShardSpecError(`${at}the host name '${hostName}' makes this shard ${index}, but there are ${count} shards (0 to ${count - 1})`);
    }
  } else {
    index = Number(match[1]);
    if (!Number.isSafeInteger(index) || index >= count) {
      throw new ShardSpecError(`${at}shard ${match[1]} does not exist among ${count} shards (0 to ${count - 1})`);
    }
  }
  return { index, count };
}

/** Checks a shard given as an object (`createSimulator({ shard })`); throws a `ShardSpecError` naming it. */
export function checkShard(shard: ShardSpec | null | undefined): ShardSpec | null {
  if (shard === undefined || shard === null) return null;
  const { index, count } = shard as Partial<ShardSpec>;
  if (!Number.isSafeInteger(count) || (count as number) < 1 || (count as number) > MAX_SHARDS || !Number.isSafeInteger(index) || (index as number) < 0 || (index as number) >= (count as number)) {
    throw new ShardSpecError(`shard ${JSON.stringify(shard)}: expected { index, count } with whole numbers, 0 <= index < count <= ${MAX_SHARDS}`);
  }
  return { index: index as number, count: count as number };
}

/** `2/3`, or `unsharded`. */
export function shardInWords(shard: ShardSpec | null): string {
  return shard === null ? 'unsharded' : `shard ${shard.index}/${shard.count}`;
}

export function sameShard(a: ShardSpec | null, b: ShardSpec | null): boolean {
  return a === null || b === null ? a === b : a.index === b.index && a.count === b.count;
}

/**
 * Which shard of `count` a key belongs to, as the proxy routes it: nginx's `split_clients` over
 * the key (`sim deploy nginx`), so that the proxy and every shard compute the same answer from the
 * key, the count and nothing else. `split_clients` hashes the key's bytes with MurmurHash2 and
 * takes the first share whose upper bound is above the hash; the shares are `shardShares(count)`.
 * A shard refuses a key that is not its own (421 `wrong_shard`).
 */
export function shardOfKey(key: string, count: number): number {
  const hash = murmurHash2(keyBytes(key));
  let bound = 0;
  const shares = shardShares(count);
  for (let i = 0; i < count - 1; i++) {
    // nginx: last += percent * (uint64_t) 0xffffffff / 10000, in whole numbers.
    bound += Math.floor(((shares[i] as number) * 0xffffffff) / 10000);
    if (hash < bound) return i;
  }
  return count - 1;
}

/**
 * Each shard's share of the keys, in hundredths of a percent (nginx's `split_clients` reads
 * percentages with two decimals): `floor(10000 / count)` for every shard but the last, which takes
 * the rest (`*`). 3 shards: 33.33%, 33.33% and the rest.
 */
export function shardShares(count: number): number[] {
  const each = Math.floor(10000 / count);
  return Array.from({ length: count }, (_, i) => (i < count - 1 ? each : 10000 - each * (count - 1)));
}

/**
 * The bytes a proxy reads of a key: a header value's characters are its bytes (Node reads header
 * bytes as Latin-1), so a key of such characters is hashed as those bytes. A key with a character
 * beyond Latin-1 (from a percent-encoded query only, which the proxy does not route) as UTF-8.
 */
function keyBytes(key: string): Uint8Array {
  const bytes = new Uint8Array(key.length);
  for (let i = 0; i < key.length; i++) {
    const c = key.charCodeAt(i);
    if (c > 0xff) return new TextEncoder().encode(key);
    bytes[i] = c;
  }
  return bytes;
}

/** nginx's `ngx_murmur_hash2` (MurmurHash2, seed 0, little-endian blocks) as an unsigned 32-bit number. */
function murmurHash2(data: Uint8Array): number {
  const M = 0x5bd1e995;
  let len = data.length;
  let h = len >>> 0;
  let at = 0;
  while (len >= 4) {
    let k = (data[at] as number) | ((data[at + 1] as number) << 8) | ((data[at + 2] as number) << 16) | ((data[at + 3] as number) << 24);
    k = Math.imul(k, M);
    k ^= k >>> 24;
    k = Math.imul(k, M);
    h = Math.imul(h, M) ^ k;
    at += 4;
    len -= 4;
  }
  if (len === 3) h ^= (data[at + 2] as number) << 16;
  if (len >= 2) h ^= (data[at + 1] as number) << 8;
  if (len >= 1) {
    h ^= data[at] as number;
    h = Math.imul(h, M);
  }
  h ^= h >>> 13;
  h = Math.imul(h, M);
  h ^= h >>> 15;
  return h >>> 0;
}

/**
 * The 421 `wrong_shard` a shard answers to a request whose key belongs to another shard (it holds
 * none of that key's state: answering would make a second account of the key), or undefined when
 * the key is its own or the simulator runs alone.
 */
export function wrongShard(shard: ShardSpec | null, key: string): SimError | undefined {
  if (shard === null || shard.count === 1) return undefined;
  const owner = shardOfKey(key, shard.count);
  if (owner === shard.index) return undefined;
  return fail('wrong_shard', {
    message:
      `This simulator is shard ${shard.index} of ${shard.count}, and the API key of this request belongs to shard ${owner}: this shard holds none of its state. ` +
      `Send the request through the proxy in front of the shards (or to shard ${owner}).`,
  });
}
