/**
 * The scenarios `POST /_sim/reset {"scenario"}` may switch to. A client names a scenario, never a
 * file: a bundled scenario's name, the name of the scenario the simulator was started with, or the
 * file name (no directory part) of a YAML file in the scenarios directory (`--scenarios-dir`) whose
 * real path stays inside that directory. No other file is opened (a symbolic link out of the
 * directory is not), and a name that is none of these is refused with the list of the names that
 * are accepted, whatever exists on the disk.
 */
import { readdirSync } from 'node:fs';
import { closestMatch } from '../closestMatch.js';
import type { Scenario } from '../core/scenario/scenario.js';
import { bundledScenarioNames, fileInside, loadScenario } from './load.js';

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
class UnknownResetScenario extends Error {
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
    const file = files.get(name);
    if (file !== undefined) return loadScenario(file);

    const accepted = [...new Set([start.scenario.name, ...bundled, ...files.keys()])];
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

/**
 * The YAML files directly in `dir`, by file name, each with its real path: only those whose real
 * path is a regular file inside the real directory (a symbolic link that leads out of it is left
 * out, as if it were not there). None when there is no such directory.
 */
function scenariosDirFiles(dir: string | undefined): Map<string, string> {
  const files = new Map<string, string>();
  if (dir === undefined) return files;
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return files;
  }
  for (const name of names.filter((f) => YAML_FILE.test(f)).sort()) {
    const real = fileInside(dir, name);
    if (real !== undefined) files.set(name, real);
  }
  return files;
}
