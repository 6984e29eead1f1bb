/**
 * The control API over N shards behind a proxy (docs/scaling.md): a call that names an account
 * goes through the proxy once, to that account's shard; a call that names none goes to every
 * shard (`/shards/I/...`), after which the answers are merged into the one a single simulator
 * would give. It fails closed: every shard is tried, and when any fails the call rejects with an
 * error naming each shard that failed (and those where it was applied); nothing is retried.
 */
import { controlCall, isGenerationOperation, type ControlCall, type SimClock, type SimFaultList, type SimFaultQueued, type SimGenerationList, type SimHealth } from './api.js';
import { SimulatorControlError } from './controlError.js';

/** A call to every shard that failed on some: which failed and why, and where it was applied. */
export class SimulatorShardsError extends Error {
  /** The shards where the call failed, each with its error. */
  readonly failures: { shard: number; error: Error }[];
  /** The shards that answered 200 (where the call took effect). */
  readonly applied: number[];

  constructor(what: string, failures: { shard: number; error: Error }[], applied: number[]) {
    super(
      `${what} failed on ${failures.map((f) => `shard ${f.shard} (${f.error.message})`).join(', ')}` +
        (applied.length > 0 ? `; it was applied on shard${applied.length === 1 ? '' : 's'} ${applied.join(', ')}` : '; it was applied on no shard'),
    );
    this.name = 'SimulatorShardsError';
    this.failures = failures;
    this.applied = applied;
  }
}

/** `health()` over shards: the proxy's (shard 0's) health, and every shard's under `shards`. */
export type ShardedHealth = SimHealth & { shards?: SimHealth[] };

/** Sends one call to one shard (through `/shards/I`); resolves to its value or rejects. */
type SendTo = (shard: number, call: ControlCall) => Promise<unknown>;

/** The call sent to every shard: every value, or a `SimulatorShardsError` once all were tried. */
async function everyShard<T>(count: number, call: ControlCall, sendTo: SendTo): Promise<T[]> {
  const settled = await Promise.allSettled(Array.from({ length: count }, (_, i) => sendTo(i, call)));
  const failures: { shard: number; error: Error }[] = [];
  const applied: number[] = [];
  settled.forEach((s, i) => {
    if (s.status === 'fulfilled') applied.push(i);
    else failures.push({ shard: i, error: s.reason instanceof Error ? s.reason : new Error(String(s.reason)) });
  });
  if (failures.length > 0) throw new SimulatorShardsError(`${call.method} ${call.path} (sent to every shard)`, failures, applied);
  return settled.map((s) => (s as PromiseFulfilledResult<T>).value);
}

const latest = (clocks: SimClock[]): SimClock => clocks.reduce((a, b) => (Date.parse(b.now) > Date.parse(a.now) ? b : a));

/**
 * One call that names no account, over `count` shards: sent to each, the answers merged. Calls on
 * one generation by id alone go to each shard and answer the one that holds it.
 */
export async function sendToEveryShard(count: number, call: ControlCall, sendTo: SendTo): Promise<unknown> {
  const { operation, method, path } = call;
  if (isGenerationOperation(operation)) return oneHolder(count, call, sendTo);
  if (operation === 'simAdvanceClock' && call.body?.seconds !== undefined) {
    // Every clock moves to one instant: as far past the latest shard's as asked (the `to` form can be sent twice).
    const clocks = await everyShard<SimClock>(count, controlCall('simClock'), sendTo);
    const to = new Date(Date.parse(latest(clocks).now) + Math.round((call.body.seconds as number) * 1000)).toISOString();
    return latest(await everyShard<SimClock>(count, controlCall('simAdvanceClock', { body: { to } }), sendTo));
  }
  if (operation === 'simClock' || operation === 'simAdvanceClock') return latest(await everyShard<SimClock>(count, call, sendTo));
  if (operation === 'simReset') return mergeHealth(await everyShard<SimHealth>(count, call, sendTo));
  if (operation === 'simHealth') return everyShard<SimHealth>(count, call, sendTo);
  if (operation === 'simListFaults') {
    const lists = await everyShard<SimFaultList>(count, call, sendTo);
    return { queued: lists.reduce((n, l) => n + l.queued, 0), faults: lists.flatMap((l) => l.faults) } satisfies SimFaultList;
  }
  if (operation === 'simQueueFault' || operation === 'simClearFaults') {
    const answers = await everyShard<SimFaultQueued>(count, call, sendTo);
    return { queued: answers.reduce((n, a) => n + a.queued, 0) } satisfies SimFaultQueued;
  }
  if (operation === 'simGenerations') {
    if (call.query?.after !== undefined || call.query?.changed_since !== undefined) {
      throw new TypeError(
        `${method} ${path}: 'after' and 'changedSince' name a place in one shard's list; with ${count} shards, give apiKey (the account's shard answers), or ask one shard with shard(i).`,
      );
    }
    return mergeGenerations(await everyShard<SimGenerationList>(count, call, sendTo), Number(call.query?.limit ?? 20));
  }
  throw new TypeError(`${method} ${path} is not merged across shards (each shard has its own); ask one shard with shard(i).`);
}

/** A call on one generation by id: every shard is asked, the one that holds it answers. */
async function oneHolder(count: number, call: ControlCall, sendTo: SendTo): Promise<unknown> {
  const settled = await Promise.allSettled(Array.from({ length: count }, (_, i) => sendTo(i, call)));
  const held = settled.find((s) => s.status === 'fulfilled');
  if (held) return (held as PromiseFulfilledResult<unknown>).value;
  const notFound = (e: unknown) => e instanceof SimulatorControlError && e.status === 404 && e.code === 'resource_not_found';
  const failures = settled.map((s, i) => ({ shard: i, error: (s as PromiseRejectedResult).reason as Error })).filter((f) => !notFound(f.error));
  // Not stored on any shard: the 404 a single simulator gives.
  if (failures.length === 0) throw (settled[0] as PromiseRejectedResult).reason;
  throw new SimulatorShardsError(`${call.method} ${call.path} (sent to every shard: no shard that answered holds it)`, failures, []);
}

/** Every shard's health under `shards`, beside shard 0's. */
export function mergeHealth(healths: SimHealth[]): ShardedHealth {
  return { ...(healths[0] as SimHealth), shards: healths };
}

/**
 * Every shard's page merged: in creation order, then by id, cut at `limit`. The cursor is the sum
 * of the shards' (it grows whenever anything changes anywhere, but names no place to go on from).
 */
export function mergeGenerations(pages: SimGenerationList[], limit: number): SimGenerationList {
  const all = pages.flatMap((p) => p.data).sort((a, b) => (a.created_at < b.created_at ? -1 : a.created_at > b.created_at ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  return {
    object: 'list',
    data: all.slice(0, limit),
    has_more: all.length > limit || pages.some((p) => p.has_more),
    cursor: pages.reduce((n, p) => n + p.cursor, 0),
  };
}
