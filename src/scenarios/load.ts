/**
 * Loading scenario files: a bundled name (`flaky`) or a path to a YAML file, `extends` resolved,
 * checked against the JSON schema; every problem names the file, the field and what was expected.
 */
import { closeSync, existsSync, fstatSync, openSync, readFileSync, readdirSync, realpathSync, statSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { closestMatch } from '../closestMatch.js';
import { BASE_SCENARIO, mergeScenario, type Scenario, type ScenarioFile } from '../core/scenario/scenario.js';
import { cachedScenarioFile, keepScenarioFile, yamlParser } from './fileReading.js';
import { parseScenarioText, rangeProblems, ScenarioError, schemaProblems, type FileProblem } from './resolve.js';

export { ScenarioError };

/** The bundled scenarios' folder (next to src/ in the repository, next to dist/ in the package). */
export const BUNDLED_SCENARIOS_DIR: string = fileURLToPath(new URL('../../scenarios/', import.meta.url));

/** The largest scenario file the simulator reads (1 MiB): a larger one is refused before it is parsed. */
const MAX_SCENARIO_FILE_BYTES = 1024 * 1024;


/** The bundled scenarios' names, in order (no file is read). */
export function bundledScenarioNames(): string[] {
  return readdirSync(BUNDLED_SCENARIOS_DIR)
    .filter((f) => f.endsWith('.yaml'))
    .sort()
    .map((f) => basename(f, '.yaml'));
}

/** The bundled scenarios, with the one-line purpose from each file's first comment. */
export function listBundledScenarios(): { name: string; purpose: string }[] {
  return bundledScenarioNames().map((name) => {
    const firstComment = readFileSync(resolve(BUNDLED_SCENARIOS_DIR, `${name}.yaml`), 'utf8')
      .split('\n')
      .find((line) => line.startsWith('#'));
    return { name, purpose: firstComment?.replace(/^#\s*/, '').replace(/^[\w-]+:\s*/, '') ?? '' };
  });
}

/**
 * Resolves a bundled name or a file path to the file to read. A name that is no bundled scenario
 * is refused with the closest one suggested. `field` names where the name was given: the command
 * line's or the API's `scenario` (a path, relative to `relativeTo`), or a file's `extends` (then
 * `relativeTo` is that file's directory, and the problem is that file's): `extends` names a
 * bundled scenario or a file of the same directory by its file name (`base.yaml`, or
 * `./base.yaml`), never a path, and a file whose real path is outside that directory (a symbolic
 * link out of it) is refused as if it did not exist.
 */
export function scenarioFile(nameOrPath: string, relativeTo = process.cwd(), field: 'scenario' | 'extends' = 'scenario'): string {
  const extendsFile = field === 'extends';
  if (!isPath(nameOrPath)) {
    const bundled = resolve(BUNDLED_SCENARIOS_DIR, `${nameOrPath}.yaml`);
    if (existsSync(bundled)) return bundled;
    const names = bundledScenarioNames();
    const guess = closestMatch(nameOrPath, names);
    const file = extendsFile ? 'the file name of a YAML file in the same directory (base.yaml)' : 'a path to a YAML file';
    throw new ScenarioError(nameOrPath, [
      `${field}: expected a bundled scenario (${names.join(', ')}) or ${file}, got '${shownName(nameOrPath)}'${guess ? `; did you mean ${guess}?` : ''}`,
    ]);
  }
  if (extendsFile) {
    const name = nameOrPath.startsWith('./') ? nameOrPath.slice(2) : nameOrPath;
    if (/[\\/]/.test(name)) {
      throw new ScenarioError(nameOrPath, [
        `extends: expected a bundled scenario or the file name of a YAML file in the same directory (base.yaml), never a path; got '${shownName(nameOrPath)}'`,
      ]);
    }
    const inside = fileInside(relativeTo, name);
    if (inside === undefined) throw new ScenarioError(nameOrPath, [`extends: expected an existing YAML file at '${shownName(nameOrPath)}', but there is none at this path`]);
    return inside;
  }
  const path = isAbsolute(nameOrPath) ? nameOrPath : resolve(relativeTo, nameOrPath);
  if (!existsSync(path)) throw new ScenarioError(nameOrPath, ['file: expected an existing YAML file, but there is none at this path']);
  if (!statSync(path).isFile()) throw new ScenarioError(nameOrPath, ['file: expected a YAML file, got a directory or another kind of file']);
  return path;
}

/**
 * The real path of the file `name` of `dir` (symbolic links resolved), when it is a regular file
 * inside the real directory; undefined otherwise (no such file, a directory, or a link that leads
 * out of the directory).
 */
export function fileInside(dir: string, name: string): string | undefined {
  try {
    const realDir = realpathSync(dir);
    const real = realpathSync(join(dir, name));
    const prefix = realDir.endsWith(sep) ? realDir : `${realDir}${sep}`;
    return real.startsWith(prefix) && statSync(real).isFile() ? real : undefined;
  } catch {
    return undefined;
  }
}

/** How much of a name a problem repeats. */
const SHOWN_NAME_CHARS = 100;

function shownName(name: string): string {
  return name.length > SHOWN_NAME_CHARS ? `${name.slice(0, SHOWN_NAME_CHARS)}…` : name;
}

/** Loads, validates and resolves a scenario. Throws a ScenarioError listing every problem. */
export function loadScenario(nameOrPath: string, relativeTo?: string): Scenario {
  const prebuilt = isPath(nameOrPath) ? undefined : prebuiltScenarios()?.[nameOrPath];
  if (prebuilt) return structuredClone(prebuilt);
  return resolveFile(scenarioFile(nameOrPath, relativeTo), []);
}

function isPath(nameOrPath: string): boolean {
  return /[\\/]/.test(nameOrPath) || /\.ya?ml$/i.test(nameOrPath);
}

/**
 * The bundled scenarios as the build resolved and checked them (dist/scenarios/bundled.json, by
 * scripts/bundle-scenarios.mjs): starting with a bundled scenario then loads neither the YAML parser
 * nor the schema validator. Undefined from sources, or when a scenario file is newer than it.
 */
let prebuilt: Record<string, Scenario> | null | undefined;
function prebuiltScenarios(): Record<string, Scenario> | undefined {
  if (prebuilt === undefined) {
    const path = fileURLToPath(new URL('./bundled.json', import.meta.url));
    const builtAt = existsSync(path) ? statSync(path).mtimeMs : -1;
    const fresh =
      builtAt >= 0 &&
      readdirSync(BUNDLED_SCENARIOS_DIR).every((f) => !f.endsWith('.yaml') || statSync(resolve(BUNDLED_SCENARIOS_DIR, f)).mtimeMs <= builtAt);
    prebuilt = fresh ? (JSON.parse(readFileSync(path, 'utf8')) as Record<string, Scenario>) : null;
  }
  return prebuilt ?? undefined;
}

/**
 * A scenario given as a value rather than a file (a transcript's resolved scenario): checked as a
 * file's contents would be and merged over the built-in base, without `extends`. Throws a
 * ScenarioError naming `source`.
 */
export function scenarioFromValue(value: unknown, source: string): Scenario {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new ScenarioError(source, ['(top level): expected a mapping of scenario keys']);
  }
  const problems = schemaProblems(value);
  if ('extends' in value) problems.push('extends: expected a resolved scenario, without extends');
  const merged = mergeScenario(BASE_SCENARIO, value);
  problems.push(...rangeProblems(merged));
  if (problems.length > 0) throw new ScenarioError(source, problems);
  return merged;
}

/**
 * Every problem of a scenario file, or an empty list: `sim validate`. A problem of another file
 * (one it extends) starts with that file's path.
 */
export function validateScenarioFile(path: string): string[] {
  try {
    loadScenario(path);
    return [];
  } catch (e) {
    if (e instanceof ScenarioError) {
      const ownFile = e.file === path || e.file === resolve(path);
      return e.problems.map((p) => (ownFile ? p : `${e.file}: ${p}`));
    }
    throw e;
  }
}

/**
 * A file resolved over what it extends. A file with problems is refused with all of them: its own,
 * and those of the file it extends (a bad `extends` among them), which then do not hide its own;
 * its own are then checked over the built-in base.
 */
function resolveFile(path: string, chain: string[]): Scenario {
  if (chain.includes(path)) {
    throw new ScenarioError(path, [`extends: expected no cycle, got ${[...chain, path].map((p) => basename(p)).join(' -> ')}`]);
  }
  const { file, problems } = readScenarioFile(path);
  const inherited: FileProblem[] = [];
  let parent = BASE_SCENARIO;
  if (typeof file.extends === 'string') {
    let parentPath: string | undefined;
    try {
      parentPath = scenarioFile(file.extends, dirname(path), 'extends');
    } catch (e) {
      // A name or path that resolves to no file is this file's problem (its `extends`).
      if (!(e instanceof ScenarioError)) throw e;
      inherited.push(...e.problems.map((problem) => ({ file: path, problem })));
    }
    try {
      if (parentPath !== undefined) parent = bundledScenarioAt(parentPath) ?? resolveFile(parentPath, [...chain, path]);
    } catch (e) {
      if (!(e instanceof ScenarioError)) throw e;
      inherited.push(...e.byFile);
    }
  }
  const { extends: _ignored, ...own } = file;
  const merged = mergeScenario(parent, own);
  if (own.name === undefined) merged.name = basename(path).replace(/\.ya?ml$/i, '');
  if (own.description === undefined && file.extends === undefined) merged.description = '';
  problems.push(...rangeProblems(merged));
  const all = [...inherited.filter((p) => p.file === path), ...problems.map((problem) => ({ file: path, problem })), ...inherited.filter((p) => p.file !== path)];
  if (all.length > 0) throw new ScenarioError(path, all.map((p) => (p.file === path ? p.problem : `${p.file}: ${p.problem}`)), all);
  return merged;
}

function readScenarioFile(path: string): { file: ScenarioFile; problems: string[] } {
  let text: string;
  let fd: number | undefined;
  try {
    fd = openSync(path, 'r');
    // Checked before a byte is read (and again after, for a file that grew meanwhile).
    const tooLarge = (size: number) =>
      new ScenarioError(path, [`file: expected a YAML file of at most 1 MiB (${MAX_SCENARIO_FILE_BYTES} bytes), got ${size} bytes`]);
    const { size } = fstatSync(fd);
    if (size > MAX_SCENARIO_FILE_BYTES) throw tooLarge(size);
    const bytes = readFileSync(fd);
    if (bytes.length > MAX_SCENARIO_FILE_BYTES) throw tooLarge(bytes.length);
    text = bytes.toString('utf8');
  } catch (e) {
    if (e instanceof ScenarioError) throw e;
    throw new ScenarioError(path, [`file: expected a readable YAML file (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`]);
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
  // A text read and found valid before is taken from the cache (fileReading.ts); otherwise the
  // parser is loaded on first use: a simulator started with a bundled scenario needs none.
  const cached = cachedScenarioFile(text);
  if (cached !== undefined) return { file: cached, problems: [] };
  const read = parseScenarioText(yamlParser(), text, path);
  if (read.problems.length === 0) keepScenarioFile(text, read.file);
  return read;
}

/**
 * The bundled scenario at `path` as the build resolved and checked it (a file's `extends: fast`),
 * without reading its YAML or what it extends; undefined for any other file, or from sources.
 */
function bundledScenarioAt(path: string): Scenario | undefined {
  if (dirname(path) !== resolve(BUNDLED_SCENARIOS_DIR) || !path.endsWith('.yaml')) return undefined;
  const scenario = prebuiltScenarios()?.[basename(path, '.yaml')];
  return scenario && structuredClone(scenario);
}
