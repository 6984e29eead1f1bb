/**
 * The page's scenarios: the bundled ones, as the build resolved them (no files, no parser, no
 * validator). A scenario given as a value or as YAML text is resolved by `customScenario.ts`, which
 * a page loads only then (the YAML parser and the scenario validator are most of its weight).
 */
import bundled from 'video-service-sim-bundled-scenarios';
import { closestMatch } from '../closestMatch.js';
import type { Scenario } from '../core/scenario/scenario.js';

/** A bundled scenario's name, a scenario as a value (a scenario file's contents), or a scenario file's YAML text. */
export type ScenarioOption = string | Record<string, unknown>;

/** The bundled scenarios, each with its purpose in one line (as `GET /_sim/scenarios` lists them). */
export function bundledScenarioList(): { name: string; purpose: string }[] {
  return bundled.list.map((entry) => ({ ...entry }));
}

/** The bundled scenario of this name, or undefined. */
export function bundledScenario(name: string): Scenario | undefined {
  return Object.hasOwn(bundled.scenarios, name) ? structuredClone(bundled.scenarios[name]) : undefined;
}

/** A reset's scenario: a bundled one, by name (a page has no scenario files). Throws naming the closest one. */
export function resetScenario(name: string): Scenario {
  const found = bundledScenario(name);
  if (found !== undefined) return found;
  const names = Object.keys(bundled.scenarios);
  const guess = closestMatch(name, names);
  throw new Error(`scenario: expected a bundled scenario (${names.join(', ')}), got '${name.slice(0, 100)}'${guess ? `; did you mean ${guess}?` : ''}`);
}

/** The bundled scenarios (what `extends` may name). */
export function bundledScenarios(): Readonly<Record<string, Scenario>> {
  return bundled.scenarios;
}
