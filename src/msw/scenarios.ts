/**
 * The page's scenarios: the bundled ones as the build resolved them (no files, no YAML parser for
 * them), and a scenario given as a value or as YAML text, checked as a file would be
 * (`src/scenarios/resolve.ts`). A reset names a bundled scenario.
 */
import { parseDocument, LineCounter, isAlias, isCollection, isPair } from 'yaml';
import bundled from 'video-service-sim-bundled-scenarios';
import { closestMatch } from '../closestMatch.js';
import type { Scenario } from '../core/scenario.js';
import { ScenarioError, scenarioFromSource } from '../scenarios/resolve.js';

/** A bundled scenario's name, a scenario as a value (a scenario file's contents), or a scenario file's YAML text. */
export type ScenarioOption = string | Record<string, unknown>;

const YAML = { parseDocument, LineCounter, isAlias, isCollection, isPair };

/** The bundled scenarios, each with its purpose in one line (as `GET /_sim/scenarios` lists them). */
export function bundledScenarioList(): { name: string; purpose: string }[] {
  return bundled.list.map((entry) => ({ ...entry }));
}

/**
 * The scenario an option names: a bundled one by name, else a value or YAML text resolved over
 * the bundled ones. `field`: where it was given (`scenario` of the options, or a reset's). Throws a
 * ScenarioError listing every problem, or (for the options) a RangeError for a value of no form.
 */
export function resolveScenario(option: ScenarioOption, field: 'scenario' | 'reset' = 'scenario'): Scenario {
  const known = bundled.scenarios;
  if (typeof option === 'string') {
    const named = Object.hasOwn(known, option) ? known[option] : undefined;
    if (named !== undefined) return structuredClone(named);
    // A name has no line break and no colon; YAML text of a scenario has at least one `key:`.
    if (field === 'reset' || !/[:\n]/.test(option)) {
      const names = Object.keys(known);
      const guess = closestMatch(option, names);
      throw new ScenarioError(option.slice(0, 100), [
        `scenario: expected a bundled scenario (${names.join(', ')})${field === 'reset' ? '' : ' or the YAML text of a scenario'}, got '${option.slice(0, 100)}'${guess ? `; did you mean ${guess}?` : ''}`,
      ]);
    }
    return scenarioFromSource({ text: option, yaml: YAML }, 'the scenario text', known);
  }
  if (typeof option !== 'object' || option === null || Array.isArray(option)) {
    throw new RangeError(`scenario must be a bundled scenario's name, a scenario object or YAML text, got ${JSON.stringify(option)}`);
  }
  return scenarioFromSource({ value: option }, 'the scenario object', known);
}
