/**
 * A simulator that goes on with a run a file describes: the header of a state file or of a
 * transcript names the scenario, the seed, the clock, the media address and the shard it was
 * written with, and every simulator made from such a file (a restore, a compaction, a replay) is
 * made here, from those. Where the clock starts is the caller's wall clock, held where the run
 * began (a restore holds it at the state file's anchor, a replay stands it at the clock's start).
 */
import type { ClockMode } from '../time/clock.js';
import type { Scenario } from '../scenario/scenario.js';
import type { ShardSpec } from '../accounts/shard.js';
import { Simulator } from './simulator.js';

/** What the header of a file a simulator wrote (state file, transcript) says of the run. */
export interface RunHeader {
  /** The scenario in use, resolved (`extends` applied, every field present). */
  scenario: Scenario;
  /** The seed in use. */
  seed: number;
  /** The clock's mode and speed, and where it started (ISO). */
  clock: { mode: ClockMode; speed: number; start: string };
  /** The media address written into responses. */
  cdn_url: string;
  /** The shard of N; null or absent: a simulator running alone. */
  shard?: ShardSpec | null;
}

/** The settings that survive resets (`--seed`, `--clock`, `--speed`). */
interface RunOverrides {
  seed?: number;
  clock?: ClockMode;
  speed?: number;
}

/** What a simulator opened from a header is given beside it. */
export interface OpenSettings {
  /** The wall clock it follows (a file's reading held while it is restored, or one standing still for a replay). */
  wallClock: () => number;
  /**
   * The overrides that survive resets (`--seed`, `--clock`, `--speed`); default: those the header
   * shows, a seed or a clock mode or speed that differs from its scenario's (see `overridesShown`).
   */
  overrides?: RunOverrides;
  /** Resolves a scenario a reset names; default: none (a reset that names one is refused). */
  loadScenario?: (name: string) => Scenario;
  /** The shard (null: none); default: the header's. */
  shard?: ShardSpec | null;
}

/** The simulator of the run `header` describes: its scenario, its seed in use, its clock, its media address and shard, unless `settings` says otherwise. */
export function openSimulator(header: RunHeader, settings: OpenSettings): Simulator {
  const overrides = settings.overrides ?? overridesShown(header);
  return new Simulator({
    scenario: header.scenario,
    loadScenario: settings.loadScenario,
    seed: overrides.seed,
    clockMode: overrides.clock,
    speed: overrides.speed,
    runSeed: header.seed,
    wallClock: settings.wallClock,
    cdnUrl: header.cdn_url,
    shard: settings.shard !== undefined ? settings.shard : (header.shard ?? null),
  });
}

/**
 * The overrides a header shows: a header that names none as such (a transcript's) has the seed and
 * the clock in use, and a value that differs from its scenario's was one. (A state file's header
 * names its overrides, and a reset's seed may differ from the scenario's without being one.)
 */
function overridesShown(header: RunHeader): RunOverrides {
  const { scenario, clock } = header;
  return {
    seed: header.seed === scenario.seed ? undefined : header.seed,
    clock: clock.mode === scenario.clock.mode ? undefined : clock.mode,
    speed: clock.speed === scenario.clock.speed ? undefined : clock.speed,
  };
}
