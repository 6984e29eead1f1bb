/**
 * Where the contract lives, for the app (validation), the CLI (`sim openapi`) and downstream
 * contract tests (`import { openapiPath } from 'video-service-sim'`).
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';

/** Absolute path of openapi.yaml (next to src/ in the repository, next to dist/ in the package). */
export const openapiPath: string = fileURLToPath(new URL('../openapi.yaml', import.meta.url));

/**
 * The build writes the contract as JSON next to the compiled code (dist/openapi.json), which loads
 * several times faster than parsing the YAML at every start; from sources, the YAML is read.
 */
const prebuiltJsonPath: string = fileURLToPath(new URL('./openapi.json', import.meta.url));

let cached: Record<string, unknown> | undefined;

/** The parsed contract (a fresh deep copy each call, since the validator annotates what it is given). */
export function loadOpenapiDocument(): Record<string, unknown> {
  cached ??= (
    existsSync(prebuiltJsonPath) && statSync(prebuiltJsonPath).mtimeMs >= statSync(openapiPath).mtimeMs
      ? JSON.parse(readFileSync(prebuiltJsonPath, 'utf8'))
      : parse(readFileSync(openapiPath, 'utf8'))
  ) as Record<string, unknown>;
  return structuredClone(cached);
}
