/**
 * A run of the simulator, from its start or a global reset to the next: the scenario as it runs
 * (the overrides applied), the fresh state it begins with, the scenario a reset names loaded, and
 * the journal's listeners, which hear every run's records; the options a simulator is made with.
 */
import { VirtualClock, type ClockMode } from '../time/clock.js';
import { SimError, fail } from '../errors.js';
import type { JournalRecord } from '../journal/journal.js';
import type { Scenario } from '../scenario/scenario.js';
import type { ShardSpec } from '../accounts/shard.js';
import { SimulatorState } from './simulatorState.js';

export interface SimulatorOptions {
  scenario: Scenario;
  /** Resolves a scenario name or path (for `reset`); any error it throws becomes a 400, param scenario. */
  loadScenario?: (name: string) => Scenario;
  /** Overrides that survive resets (the command line's --seed, --clock, --speed). */
  seed?: number;
  clockMode?: ClockMode;
  speed?: number;
  /**
   * The seed in use at first, when it is neither the override nor the scenario's: a run that a
   * file goes on with (a reset that named a seed began it). Default: the override, else the scenario's.
   */
  runSeed?: number;
  /** Wall-clock milliseconds, for realtime mode. */
  wallClock: () => number;
  /** The address written into `output.url`, `thumbnail_url` and image `url`, an http(s) URL (see `configure`). */
  cdnUrl: string;
  /** Which shard of N this simulator is (null: the only one). Kept across resets. */
  shard?: ShardSpec | null;
}

/** Where the manual clock starts unless the scenario sets `clock.start`. */
const DEFAULT_MANUAL_START = '2026-01-01T00:00:00.000Z';

/**
 * The scenario as it runs: the loaded one with the seed and the overrides that survive resets
 * (`--clock`, `--speed`) applied. The clock is made from it, and `GET /_sim/scenario` shows it.
 */
export function resolveScenario(scenario: Scenario, seed: number, overrides: { clockMode?: ClockMode; speed?: number }): Scenario {
  const { clock } = scenario;
  return {
    ...scenario,
    // A scenario object given without it has prompt triggers on (`Scenario.prompt_triggers`).
    prompt_triggers: scenario.prompt_triggers !== false,
    seed,
    clock: { ...clock, mode: overrides.clockMode ?? clock.mode, speed: overrides.speed ?? clock.speed },
  };
}

/** A run's fresh state: a new clock, on the host's time `hostTimeMs`, and nothing else. */
export function freshState(resolved: Scenario, hostTimeMs: () => number): SimulatorState {
  const { mode, speed, start: scenarioStart } = resolved.clock;
  // The manual clock starts at the scenario's start (a fixed default, for determinism); the
  // realtime clock at the wall-clock time unless the scenario sets a start.
  const start = scenarioStart ?? (mode === 'manual' ? DEFAULT_MANUAL_START : null);
  const clock = new VirtualClock(mode, speed, start === null ? Math.round(hostTimeMs()) : Date.parse(start), hostTimeMs);
  return new SimulatorState(clock, resolved.limits);
}

/** The scenario a global reset names, loaded by `load`: any error it throws becomes a 400, param `scenario`. */
export function scenarioForReset(name: string, load: ((name: string) => Scenario) | undefined): Scenario {
  if (!load) throw fail('invalid_parameter', { param: 'scenario', message: 'This simulator was built without a scenario loader.' });
  try {
    return load(name);
  } catch (e) {
    if (e instanceof SimError) throw e;
    throw fail('invalid_parameter', { param: 'scenario', message: e instanceof Error ? e.message : String(e) });
  }
}

/** A reset of one account (`apiKey`) with a scenario or seed: 400, since those apply to the whole simulator. */
export function refuseAccountResetOptions(input: { scenario?: string | null; seed?: number | null }): void {
  if (input.scenario == null && input.seed == null) return;
  throw fail('invalid_parameter', {
    param: input.scenario != null ? 'scenario' : 'seed',
    message: 'A reset with api_key resets one account; scenario and seed apply to the whole simulator, so leave them out.',
  });
}

/** Whoever listens to the journal's records, whichever run's journal is current. */
export class JournalListeners {
  private readonly listeners = new Set<(record: JournalRecord) => void>();
  /** Tells every listener of `record` (a journal's `onRecord`). */
  readonly tell = (record: JournalRecord): void => {
    for (const listener of this.listeners) listener(record);
  };

  /** Adds `listener`; returns the function that removes it. */
  add(listener: (record: JournalRecord) => void): () => void {
    this.listeners.add(listener);
    return () => void this.listeners.delete(listener);
  }

  /** Makes `state` the run's: its journal tells the listeners, and numbers on from `previous`'s. */
  adopt(state: SimulatorState, previous: SimulatorState | undefined): SimulatorState {
    state.journal.continueFrom(previous?.journal.seq ?? 0);
    state.journal.onRecord = this.tell;
    return state;
  }
}
