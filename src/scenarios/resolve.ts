/**
 * Scenarios from text and values, without files: YAML text read and checked, a value checked
 * against the schema and the range rules, `extends` resolved over scenarios already loaded. The
 * file loader (`load.ts`) reads files with it; a page (`video-service-sim/msw`), which has no
 * files, resolves its scenario with it alone.
 */
import type * as YamlModule from 'yaml';

/** What is read of the `yaml` module (its namespace, or its default export). */
export type Yaml = Pick<typeof YamlModule, 'LineCounter' | 'parseDocument' | 'isAlias' | 'isCollection' | 'isPair'>;
import { ERROR_CATALOGUE, ERROR_CODES } from '../core/errors.js';
import { FAILABLE_STAGES } from '../core/generations/pipeline.js';
import { BASE_SCENARIO, mergeScenario, type Scenario, type ScenarioFile } from '../core/scenario/scenario.js';
import { checkScenario } from '../core/scenario/scenarioChecks.js';
import { aliasProblem, MAX_ALIAS_VALUES } from './aliases.js';
import { describeSchemaErrors, describeYamlError, formatProblems, yamlProblem } from './problems.js';
import { scenarioFileValidator } from './schemaValidator.js';

/** A problem, with the file (or source) it is in. */
export interface FileProblem {
  file: string;
  problem: string;
}

export class ScenarioError extends Error {
  constructor(
    readonly file: string,
    /** Each problem; one of another file (a file `file` extends) starts with that file's path. */
    readonly problems: string[],
    /** The same problems, each with the file it is in (for a file that extends this one). */
    readonly byFile: readonly FileProblem[] = problems.map((problem) => ({ file, problem })),
  ) {
    super(`Invalid scenario ${file}:\n${formatProblems(problems)}`);
    this.name = 'ScenarioError';
  }
}

const API_ERROR_CODES = ERROR_CODES.filter((c) => ERROR_CATALOGUE[c].type === 'api_error');

/** What the schema finds wrong with a scenario file's value (none: an empty list). */
export function schemaProblems(value: object): string[] {
  const validateFile = scenarioFileValidator();
  return validateFile(value) ? [] : describeSchemaErrors(validateFile.errors ?? []);
}

/**
 * The range and pattern rules a merged scenario breaks. They run even when the schema found
 * problems, so that one run of `sim validate` lists everything; on a value of the wrong shape they
 * may not apply (the schema's problems then explain why).
 */
export function rangeProblems(merged: Scenario): string[] {
  try {
    return checkScenario(merged, API_ERROR_CODES, FAILABLE_STAGES);
  } catch {
    return [];
  }
}

/**
 * A scenario file's text, parsed by `yaml` (the module, given: a caller loads it when needed) and
 * checked against the schema: the value and its schema problems. Throws a ScenarioError naming
 * `source` for text that is no YAML mapping (a syntax error, aliases past the bound).
 */
export function parseScenarioText(yaml: Yaml, text: string, source: string): { file: ScenarioFile; problems: string[] } {
  const lineCounter = new yaml.LineCounter();
  const doc = yaml.parseDocument(text, { prettyErrors: true, uniqueKeys: true, lineCounter });
  if (doc.errors.length > 0) {
    // The parser may report running out of stack more than once, a column apart: one place is enough.
    const errors = doc.errors.filter((e, i) => e.code !== 'RESOURCE_EXHAUSTION' || doc.errors.findIndex((f) => f.code === e.code) === i);
    throw new ScenarioError(source, errors.map((e) => describeYamlError(e)));
  }
  const alias = aliasProblem(yaml, doc);
  if (alias !== undefined) throw new ScenarioError(source, [yamlProblem(alias.problem, lineCounter.linePos(alias.offset))]);
  let value: unknown;
  try {
    // The aliases were checked above; the parser's own bound stays as a second guard.
    value = doc.toJS({ maxAliasCount: MAX_ALIAS_VALUES }) ?? {};
  } catch {
    throw new ScenarioError(source, [yamlProblem('The file cannot be read as data (its aliases or nesting go too far)', undefined)]);
  }
  return checkedValue(value, source);
}

function checkedValue(value: unknown, source: string): { file: ScenarioFile; problems: string[] } {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new ScenarioError(source, ['(top level): expected a mapping of scenario keys']);
  }
  return { file: value, problems: schemaProblems(value) };
}

/**
 * A scenario given as YAML text or as a value (the form of a file's contents), its `extends`
 * naming one of `known` (the bundled scenarios): checked, merged over what it extends, and
 * resolved. Throws a ScenarioError naming `source` with every problem.
 */
export function scenarioFromSource(
  source: { text: string; yaml: Yaml } | { value: unknown },
  name: string,
  known: Readonly<Record<string, Scenario>>,
): Scenario {
  const { file, problems } = 'text' in source ? parseScenarioText(source.yaml, source.text, name) : checkedValue(source.value, name);
  let parent = BASE_SCENARIO;
  if (typeof file.extends === 'string') {
    const extended = Object.hasOwn(known, file.extends) ? known[file.extends] : undefined;
    if (extended === undefined) problems.push(`extends: expected one of the bundled scenarios (${Object.keys(known).join(', ')}), got '${file.extends.slice(0, 100)}'`);
    else parent = extended;
  }
  const { extends: _ignored, ...own } = file;
  const merged = mergeScenario(structuredClone(parent), own);
  if (own.name === undefined) merged.name = typeof file.extends === 'string' ? `${file.extends} (extended)` : 'custom';
  if (own.description === undefined && file.extends === undefined) merged.description = '';
  problems.push(...rangeProblems(merged));
  if (problems.length > 0) throw new ScenarioError(name, problems);
  return merged;
}
