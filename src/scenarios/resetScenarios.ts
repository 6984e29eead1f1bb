/**
 * The scenarios `POST /_sim/reset {"scenario"}` may switch to. A client names a scenario, never a
 * file: a bundled scenario's name, the name of the scenario the simulator was started with, or the
 * file name (no directory part) of a YAML file in the scenarios directory (`--scenarios-dir`). No
 * other file is opened, and a name that is none of these is refused with the list of the names
 * that are accepted, whatever exists on the disk.
 */
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { closestMatch } from '../closestMatch.js';
import type { Scenario } from '../core/scenario.js';
import { bundledScenarioNames, loadScenario } from './load.js';

export interface ResetScenarioSources {
  /**
   * The scenario given at start: its resolved form, and the file it was read from when it came from
   * a file the operator named (a reset to it reads that file again, so that edits take effect).
   */
  start: { scenario: Scenario; file?: string };
  /** A directory whose YAML files may be named by their file names (`team.yaml`). */
  scenariosDir?: string;
}

/** A name the reset does not accept; its message lists the names it does. */
export class UnknownResetScenario extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UnknownResetScenario';
  }
}

const YAML_FILE = /^[^/\\]+\.ya?ml$/i;
/** How much of a refused name the message repeats. */
const SHOWN_NAME_CHARS = 80;

/**
 * The loader behind `reset`: a name in, a resolved scenario out, or an `UnknownResetScenario` (a
 * name not accepted) or a `ScenarioError` (an accepted file that is not a valid scenario).
 */
export function resetScenarioLoader(sources: ResetScenarioSources): (name: string) => Scenario {
  return (name) => {
    const { start } = sources;
    if (name === start.scenario.name) return start.file ? loadScenario(start.file) : structuredClone(start.scenario);
    const bundled = bundledScenarioNames();
    if (bundled.includes(name)) return loadScenario(name);
    const files = scenariosDirFiles(sources.scenariosDir);
    if (files.includes(name)) return loadScenario(join(sources.scenariosDir as string, name));

    const accepted = [...new Set([start.scenario.name, ...bundled, ...files])];
    const shown = name.length > SHOWN_NAME_CHARS ? `${name.slice(0, SHOWN_NAME_CHARS)}…` : name;
    const guess = name.length <= SHOWN_NAME_CHARS ? closestMatch(name, accepted) : undefined;
    const where = sources.scenariosDir
      ? `a bundled scenario, the one started with, or a YAML file of the scenarios directory by its file name`
      : `a bundled scenario or the one started with (start with --scenarios-dir DIR to switch to your own files by name)`;
    throw new UnknownResetScenario(
      `scenario must name ${where}: one of ${accepted.join(', ')}; got '${shown}'.${guess ? ` Did you mean ${guess}?` : ''}`,
    );
  };
}

/** The YAML files directly in `dir`, by file name; none when there is no such directory. */
function scenariosDirFiles(dir: string | undefined): string[] {
  if (dir === undefined) return [];
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  return names
    .filter((f) => YAML_FILE.test(f) && isFile(join(dir, f)))
    .sort();
}

function isFile(path: string): boolean {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}
