/** What `GET /_sim/health` and a reset answer of the simulator. */
import type { Accounts } from '../accounts/accounts.js';
import type { ClockState } from '../time/clock.js';
import type { LimitsHealth } from './limits.js';
import type { HeldConnections } from '../faults/network.js';
import type { Scenario } from '../scenario/scenario.js';
import type { ShardSpec } from '../accounts/shard.js';
import type { GenerationStore } from '../generations/generationStore.js';

export interface Health {
  status: 'ok';
  scenario: string;
  seed: number;
  clock: ClockState;
  limits: LimitsHealth;
  /** Connections held now by network `hang` and `slow` faults (at most the scenario's `limits.max_hung_connections`). */
  network: { hung: number };
  /** Which shard of N this simulator is; null when it is the only one. */
  shard: ShardSpec | null;
}

/** The scenario, the seed, the clock, the limits' counts, the connections held, the shard. */
export function healthOf(sim: {
  readonly scenario: Scenario;
  readonly seed: number;
  clockState(): ClockState;
  readonly accounts: Accounts;
  readonly store: GenerationStore;
  readonly held: HeldConnections;
  readonly shard: ShardSpec | null;
}): Health {
  return {
    status: 'ok',
    scenario: sim.scenario.name,
    seed: sim.seed,
    clock: sim.clockState(),
    limits: {
      accounts: sim.accounts.size,
      stored_generations: sim.store.storedGenerations,
      evicted_accounts: sim.accounts.evicted,
      evicted_generations: sim.store.evictedGenerations,
    },
    network: { hung: sim.held.held },
    shard: sim.shard,
  };
}
