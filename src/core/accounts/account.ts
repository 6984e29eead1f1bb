/**
 * One account (one API key): its clock offset, request and draw counters, random streams,
 * rate-limit buckets, idempotency keys, balance, and the scheduler of its generations' due
 * transitions. Accounts share nothing, which is what makes parallel test workers reproducible; what
 * they store (generations, images) is held by the store (`generationStore.ts`), whose limits count across
 * accounts.
 */
import { fail } from '../errors.js';
import type { Generation } from '../generations/generation.js';
import { fnv1a32 } from '../hash.js';
import { IdempotencyStore, type IdempotencyEntryState, type IdempotencyLedger, type StoredResponse } from '../requests/idempotency.js';
import { TIMED_STAGES } from '../generations/pipeline.js';
import { createStream, type RandomStream } from '../random.js';
import { AccountBuckets, type BucketsState } from './rateLimit.js';
import type { Scenario } from '../scenario/scenario.js';
import { Scheduler } from '../time/scheduler.js';

/**
 * An account's state as plain data (a snapshot). The tag and the negative prompt follow from the
 * key and the scenario; the scheduled transitions from its generations (`scheduled`: the ids of
 * its in-flight generations in the order their current stages end).
 */
export interface AccountState {
  key: string;
  offset_ms: number;
  requests: number;
  video_draws: number;
  image_draws: number;
  /** Numbers drawn from the account's request stream. */
  request_draws: number;
  balance_cents: number | null;
  reserved_cents: number;
  buckets: BucketsState;
  idempotency: IdempotencyEntryState[];
  scheduled: string[];
}

/** An account's state but for its stored answers and scheduled transitions: a snapshot's account row. */
export type AccountRow = Omit<AccountState, 'idempotency' | 'scheduled'>;

export class Account {
  /** Milliseconds this account's clock runs ahead of the global clock. */
  offsetMs = 0;
  /** How many /v1 requests this account has made: its request ids count them. */
  requestCount = 0;
  /** A short stable tag of the key, for request ids (never the key itself). */
  readonly tag: string;
  /** Create attempts that drew a fate: the index that keys each generation's own stream. */
  videoDraws = 0;
  imageDraws = 0;
  readonly requestStream: RandomStream;
  readonly buckets: AccountBuckets;
  readonly idempotency: IdempotencyStore;
  /** Null: unlimited. */
  balanceCents: number | null;
  /** What in-flight generations will cost if they succeed. */
  reservedCents = 0;
  readonly negativePrompt: string | null;
  /** A generation walks at most one scheduled entry per stage. */
  readonly scheduler = new Scheduler<Generation>(TIMED_STAGES.length);

  /** `ledger`: the stored answers of all accounts, which bounds them (`limits.max_idempotency_keys`). */
  constructor(
    readonly key: string,
    scenario: Scenario,
    private readonly seed: number,
    globalNowMs: number,
    ledger: IdempotencyLedger,
  ) {
    this.tag = accountTag(key);
    // Own keys only: a key named 'valueOf' or '__proto__' must not find Object.prototype's members.
    const spec = Object.hasOwn(scenario.accounts, key) ? (scenario.accounts[key] ?? {}) : {};
    this.balanceCents = spec.balance_cents !== undefined ? spec.balance_cents : scenario.account_defaults.balance_cents;
    this.negativePrompt = spec.negative_prompt !== undefined ? spec.negative_prompt : scenario.account_defaults.negative_prompt;
    this.requestStream = createStream(seed, key, 'requests');
    this.buckets = new AccountBuckets(scenario.rate_limits, globalNowMs);
    this.idempotency = new IdempotencyStore(Math.round(scenario.idempotency.retention_seconds * 1000), ledger);
  }

  /** `ranks`: where each stored answer stands among those of all accounts (`IdempotencyLedger.ranks`). */
  toState(ranks: ReadonlyMap<StoredResponse, number>): AccountState {
    return { ...this.toRow(), idempotency: this.idempotency.toState(ranks), scheduled: this.scheduler.pending().map((g) => g.fate.id) };
  }

  /** The account's state but for its stored answers and scheduled transitions (a snapshot's account row). */
  toRow(): AccountRow {
    return {
      key: this.key,
      offset_ms: this.offsetMs,
      requests: this.requestCount,
      video_draws: this.videoDraws,
      image_draws: this.imageDraws,
      request_draws: this.requestStream.drawn(),
      balance_cents: this.balanceCents,
      reserved_cents: this.reservedCents,
      buckets: this.buckets.toState(),
    };
  }

  /**
   * The account a row of `toRow` describes, with no stored answer and nothing scheduled (the
   * caller puts them back once it has them; the ledger places its stored answers among those of
   * the other accounts).
   */
  static fromRow(row: AccountRow, scenario: Scenario, seed: number, ledger: IdempotencyLedger): Account {
    const account = new Account(row.key, scenario, seed, row.buckets.main.updated_at, ledger);
    account.offsetMs = row.offset_ms;
    account.requestCount = row.requests;
    account.videoDraws = row.video_draws;
    account.imageDraws = row.image_draws;
    account.requestStream.skip(row.request_draws);
    account.balanceCents = row.balance_cents;
    account.reservedCents = row.reserved_cents;
    account.buckets.fromState(row.buckets);
    return account;
  }

  now(globalNowMs: number): number {
    return globalNowMs + this.offsetMs;
  }

  /** The stream of this account's n-th video (or image) draw. */
  streamFor(kind: 'video' | 'image', index: number): RandomStream {
    return createStream(this.seed, this.key, kind, index);
  }

  /**
   * The balance check (402 `insufficient_balance`): a request may cost no more than the balance
   * minus what in-flight generations have reserved. An unlimited balance covers anything.
   */
  requireBalance(priceCents: number): void {
    if (this.balanceCents === null) return;
    const available = this.balanceCents - this.reservedCents;
    if (available < priceCents) {
      throw fail('insufficient_balance', {
        message: `This request costs ${priceCents} cents; the account has ${Math.max(0, available)} cents available (balance minus in-flight reservations).`,
      });
    }
  }

  /** A generation is created: its price is reserved until it resolves. */
  reserve(priceCents: number): void {
    this.reservedCents += priceCents;
  }

  /** A generation resolved: its reservation is released and `chargeCents` charged (0 when canceled). */
  settle(reservedCents: number, chargeCents: number): void {
    this.reservedCents -= reservedCents;
    this.charge(chargeCents);
  }

  /** Charges the balance (an image is charged when it is created). */
  charge(cents: number): void {
    if (this.balanceCents !== null) this.balanceCents -= cents;
  }
}

/** A short stable tag of an API key, for request ids (never the key itself). */
export function accountTag(key: string): string {
  return fnv1a32(key).toString(16).padStart(8, '0');
}
