/**
 * The control API over N shards behind a proxy (docs/scaling.md): a call that names an account
 * goes through the proxy once, to that account's shard; a call that names none goes to every
 * shard (`/shards/I/...`), after which the answers are merged into the one a single simulator
 * would give. It fails closed: every shard is tried, and when any fails the call rejects with an
 * error naming each shard that failed (and those where it was applied); nothing is retried.
 */
import { OPERATION_FACTS, type ShardFanOut } from '../generated/operations.js';
import {
  controlCall,
  type ControlCall,
  type SimClock,
  type SimFaultList,
  type SimFaultQueued,
  type SimGenerationList,
  type SimHealth,
  type SimJournalEntry,
  type SimVerification,
  type SimWaitAnswer,
  type VerifyTimes,
} from './endpoints.js';
import { SimulatorControlError } from './controlError.js';
import { expectedInWords } from './verificationError.js';

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
 * One call that names no account, over `count` shards, as its operation's fan-out says (its
 * `x-sim-operation` in openapi.yaml, `FAN_OUTS` below): mostly sent to each, the answers merged;
 * calls on one generation by id alone go to each shard and answer the one that holds it.
 */
export async function sendToEveryShard(count: number, call: ControlCall, sendTo: SendTo): Promise<unknown> {
  return FAN_OUTS[OPERATION_FACTS[call.operation].shards](count, call, sendTo);
}

/** What each fan-out does with a call over `count` shards (the compiler holds it to every `ShardFanOut`). */
const FAN_OUTS: { readonly [K in ShardFanOut]: (count: number, call: ControlCall, sendTo: SendTo) => Promise<unknown> } = {
  proxy: (count, call, sendTo) => everyShard<SimHealth>(count, call, sendTo),
  async 'latest-clock'(count, call, sendTo) {
    if (call.body?.seconds !== undefined) {
      // Every clock moves to one instant: as far past the latest shard's as asked (the `to` form can be sent twice).
      const clocks = await everyShard<SimClock>(count, controlCall('simClock'), sendTo);
      const to = new Date(Date.parse(latest(clocks).now) + Math.round((call.body.seconds as number) * 1000)).toISOString();
      return latest(await everyShard<SimClock>(count, controlCall('simAdvanceClock', { body: { to } }), sendTo));
    }
    return latest(await everyShard<SimClock>(count, call, sendTo));
  },
  'merged-health': async (count, call, sendTo) => mergeHealth(await everyShard<SimHealth>(count, call, sendTo)),
  async summed(count, call, sendTo) {
    const answers = await everyShard<SimFaultQueued>(count, call, sendTo);
    return { queued: answers.reduce((n, a) => n + a.queued, 0) } satisfies SimFaultQueued;
  },
  async 'summed-list'(count, call, sendTo) {
    const lists = await everyShard<SimFaultList>(count, call, sendTo);
    return { queued: lists.reduce((n, l) => n + l.queued, 0), faults: lists.flatMap((l) => l.faults) } satisfies SimFaultList;
  },
  verified: verifyOverShards,
  waited: waitOverShards,
  async 'merged-pages'(count, call, sendTo) {
    if (call.query?.after !== undefined || call.query?.changed_since !== undefined) {
      throw new TypeError(
        `${call.method} ${call.path}: 'after' and 'changedSince' name a place in one shard's list; with ${count} shards, give apiKey (the account's shard answers), or ask one shard with shard(i).`,
      );
    }
    return mergeGenerations(await everyShard<SimGenerationList>(count, call, sendTo), Number(call.query?.limit ?? 20));
  },
  holder: oneHolder,
  'one-shard': (_count, call) =>
    Promise.reject(new TypeError(`${call.method} ${call.path} is not merged across shards (each shard has its own); ask one shard with shard(i).`)),
};

/** A call on one generation by id: every shard is asked, the one that holds it answers. */
async function oneHolder(count: number, call: ControlCall, sendTo: SendTo): Promise<unknown> {
  const settled = await Promise.allSettled(Array.from({ length: count }, (_, i) => sendTo(i, call)));
  const held = settled.find((s) => s.status === 'fulfilled');
  if (held) return (held).value;
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
function mergeGenerations(pages: SimGenerationList[], limit: number): SimGenerationList {
  const all = pages.flatMap((p) => p.data).sort((a, b) => (a.created_at < b.created_at ? -1 : a.created_at > b.created_at ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  return {
    object: 'list',
    data: all.slice(0, limit),
    has_more: all.length > limit || pages.some((p) => p.has_more),
    cursor: pages.reduce((n, p) => n + p.cursor, 0),
  };
}

// ---- verifications and waits over shards ----

/**
 * A verification over shards. A count: every shard's count and dropped requests summed, judged
 * against `times` as one simulator judges its own (the same sentence, `over N shards` added), the
 * closest entries of all shards merged. A sequence: verified when one shard holds it all in order
 * (a sequence of one account's requests is always on its shard); else the answer of the shard that
 * found most of it.
 */
async function verifyOverShards(count: number, call: ControlCall, sendTo: SendTo): Promise<SimVerification> {
  if (call.body?.sequence !== undefined) {
    const answers = await everyShard<SimVerification>(count, call, sendTo);
    return answers.find((a) => a.verified) ?? answers.reduce((best, a) => (a.count > best.count ? a : best));
  }
  const times = (call.body?.times as VerifyTimes | undefined) ?? { at_least: 1 };
  // A bound no shard reaches, so that every shard answers its closest entries too.
  const asked = { ...call, body: { ...call.body, times: { at_least: NEVER_REACHED } } };
  const answers = await everyShard<SimVerification>(count, asked, sendTo);
  const total = answers.reduce((n, a) => n + a.count, 0);
  const dropped = answers.reduce((n, a) => n + a.dropped, 0);
  const { verified, dropMatters } = countVerdict(times, total, dropped);
  if (verified) return { verified, count: total, message: null, closest: [], dropped };
  const pattern = call.body?.request as { api_key?: string };
  const head = `Expected ${expectedInWords(times)} matching ${shownPattern(pattern)} over ${count} shards; found ${total}`;
  const droppedWords = `the journals dropped ${dropped} older ${dropped === 1 ? 'request' : 'requests'}${pattern.api_key === undefined ? '' : ` of ${pattern.api_key}`} (limits.journal_size)`;
  const message = dropMatters
    ? `${head}, but ${droppedWords} that may have matched, so the count cannot be verified.`
    : dropped > 0 && 'at_least' in times
      ? `${head}, and ${droppedWords} that may have matched.`
      : `${head}.`;
  return { verified, count: total, message, closest: nearest(answers.flatMap((a) => a.closest)), dropped };
}

const NEVER_REACHED = 1_000_000;

/**
 * A wait over shards: a look at every shard first; then, until `count` requests matched in all or
 * the time ran out, a wait for the next match on each shard (after what it answered), the others
 * let go once enough matched. `after` names a place in one shard's journal: over shards, it is
 * refused.
 */
async function waitOverShards(count: number, call: ControlCall, sendTo: SendTo): Promise<SimWaitAnswer> {
  const body = call.body ?? {};
  if (body.after !== undefined && body.after !== 0) {
    throw new TypeError(`${call.method} ${call.path}: 'after' names a place in one shard's journal; with ${count} shards, ask one shard with shard(i).`);
  }
  const wanted = (body.count as number | undefined) ?? 1;
  const timeoutMs = (body.timeout_ms as number | undefined) ?? 5000;
  const deadline = Date.now() + timeoutMs;
  const looks = await everyShard<SimWaitAnswer>(count, { ...call, body: { ...body, timeout_ms: 0 } }, sendTo);
  const matched: SimJournalEntry[] = looks.flatMap((a) => a.matched);
  const closest = looks.map((a) => a.closest ?? []);
  const answer = (timedOut: boolean): SimWaitAnswer => {
    const all = inArrivalOrder(matched).slice(0, wanted);
    const out: SimWaitAnswer = { matched: all, timed_out: timedOut && all.length < wanted, cursor: 0 };
    if (out.timed_out) out.closest = nearest(closest.flat());
    return out;
  };
  if (matched.length >= wanted || timeoutMs === 0) return answer(true);
  const stop = new AbortController();
  const onShard = async (i: number, cursor: number): Promise<void> => {
    while (!stop.signal.aborted && matched.length < wanted) {
      const left = deadline - Date.now();
      if (left <= 0) return;
      let next: SimWaitAnswer;
      try {
        next = (await sendTo(i, { ...call, body: { ...body, count: 1, after: cursor, timeout_ms: Math.min(left, 30_000) }, signal: stop.signal })) as SimWaitAnswer;
      } catch (e) {
        if (stop.signal.aborted) return;
        throw e;
      }
      if (next.timed_out) {
        closest[i] = next.closest ?? closest[i] ?? [];
        if (Date.now() >= deadline) return;
      }
      matched.push(...next.matched);
      cursor = next.cursor;
    }
    // Enough matched (here or on another shard): the other shards' waits are let go.
    stop.abort();
  };
  const settled = await Promise.allSettled(looks.map((look, i) => onShard(i, look.cursor)));
  stop.abort();
  const failures = settled.flatMap((s, i) => (s.status === 'rejected' ? [{ shard: i, error: s.reason instanceof Error ? s.reason : new Error(String(s.reason)) }] : []));
  if (failures.length > 0 && matched.length < wanted) throw new SimulatorShardsError(`${call.method} ${call.path} (sent to every shard)`, failures, []);
  return answer(true);
}

/** Entries of several shards in the order they arrived, by time (`at`), then by shard. */
function inArrivalOrder(entries: SimJournalEntry[]): SimJournalEntry[] {
  return entries.map((e, i) => ({ e, i })).sort((a, b) => (a.e.at < b.e.at ? -1 : a.e.at > b.e.at ? 1 : a.i - b.i)).map(({ e }) => e);
}

/** The closest entries of several shards: fewest fields missed, then the most recent; at most 3. */
function nearest(entries: SimJournalEntry[]): SimJournalEntry[] {
  return entries
    .map((e, i) => ({ e, i }))
    .sort((a, b) => (a.e.differs?.length ?? 0) - (b.e.differs?.length ?? 0) || (a.e.at > b.e.at ? -1 : a.e.at < b.e.at ? 1 : a.i - b.i))
    .slice(0, 3)
    .map(({ e }) => e);
}

// The same words as one simulator's verification (src/core/journal/requestPattern.ts); a test holds them together.

function countVerdict(times: VerifyTimes, count: number, dropped: number): { verified: boolean; dropMatters: boolean } {
  if ('at_least' in times) return { verified: count >= times.at_least, dropMatters: false };
  const bound = 'exactly' in times ? times.exactly : times.at_most;
  if (count > bound) return { verified: false, dropMatters: false };
  if (dropped > 0) return { verified: false, dropMatters: true };
  return { verified: 'exactly' in times ? count === bound : true, dropMatters: false };
}

function shownPattern(value: unknown): string {
  const text = JSON.stringify(value);
  return text.length > 1000 ? `${text.slice(0, 1000)}…` : text;
}
