/**
 * The global limits of a scenario's `limits`: what is stored is counted across accounts, and past a
 * bound the oldest goes first. The rules are applied by the store (`generationStore.ts`: generations and
 * images), the accounts (`accounts.ts`), the journal (`journal.ts`), the stored idempotent answers
 * (`idempotency.ts`) and the fault queue (`faults.ts`).
 */

/** What `GET /_sim/health` shows of the limits. */
export interface LimitsHealth {
  /** Accounts held now. */
  accounts: number;
  /** Generations (in-flight ones included) and images held now: what counts against `max_stored_generations`. */
  stored_generations: number;
  /** Accounts dropped for `max_accounts` since the last global reset. */
  evicted_accounts: number;
  /** Resolved generations and images dropped for `max_stored_generations` since the last global reset. */
  evicted_generations: number;
}
