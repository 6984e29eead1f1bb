/**
 * Where the contract lives, for the CLI (`sim openapi`) and downstream contract tests
 * (`import { openapiPath } from 'video-service-sim'`). The simulator itself never reads it at run
 * time: it uses the validators compiled from it by the build (see `src/request-path/router.ts`).
 */
import { fileURLToPath } from 'node:url';

/** Absolute path of openapi.yaml (next to src/ in the repository, next to dist/ in the package). */
export const openapiPath: string = fileURLToPath(new URL('../openapi.yaml', import.meta.url));
