/**
 * A shard: one of N simulators that together serve a team, each owning the accounts a proxy
 * hashes to it (docs/scaling.md). Every account is isolated, so a shard answers its accounts
 * exactly as one simulator would; the simulator does not route, it only knows which shard it is
 * (`GET /_sim/health` says so, state files and transcripts record it).
 */

/** Shard `index` (from 0) of `count`. */
export interface ShardSpec {
  index: number;
  count: number;
}

/** A shard value that cannot be used; the message names it and says what is expected. */
export class ShardSpecError extends Error {
  override readonly name = 'ShardSpecError';
}

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
  if (!Number.isSafeInteger(count) || count < 1) throw new ShardSpecError(`${at}the shard count must be 1 or more (${EXPECTED})`);
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
  if (!Number.isSafeInteger(count) || (count as number) < 1 || !Number.isSafeInteger(index) || (index as number) < 0 || (index as number) >= (count as number)) {
    throw new ShardSpecError(`shard ${JSON.stringify(shard)}: expected { index, count } with whole numbers, 0 <= index < count`);
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
