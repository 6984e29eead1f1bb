/**
 * A page's scenario given as a value or as YAML text, checked as a scenario file is
 * (`src/scenarios/resolve.ts`), its `extends` naming a bundled scenario. Loaded by the handlers
 * only for such a scenario: it brings the YAML parser and the scenario validator.
 */
import { isAlias, isCollection, isPair, LineCounter, parseDocument } from 'yaml';
import type { Scenario } from '../core/scenario/scenario.js';
import { ScenarioError, scenarioFromSource } from '../scenarios/resolve.js';
import { bundledScenarios, type ScenarioOption } from './scenarios.js';

const YAML = { parseDocument, LineCounter, isAlias, isCollection, isPair };

/** Throws a ScenarioError listing every problem. */
export function customScenario(option: Exclude<ScenarioOption, never>): Scenario {
  const known = bundledScenarios();
  if (typeof option === 'string') {
    // A name has no line break and no colon; a scenario's YAML text has at least one `key:`.
    if (!/[:\n]/.test(option)) {
      throw new ScenarioError(option.slice(0, 100), [`scenario: expected a bundled scenario (${Object.keys(known).join(', ')}) or the YAML text of a scenario, got '${option.slice(0, 100)}'`]);
    }
    return scenarioFromSource({ text: option, yaml: YAML }, 'the scenario text', known);
  }
  return scenarioFromSource({ value: option }, 'the scenario object', known);
}
