/**
 * `schemaValidator.ts` for a browser page (see there): the validator the build compiled ahead of
 * time, bundled in; a page never compiles one (no `new Function` under a strict CSP).
 */
import type { ErrorObject } from 'ajv';
import prebuilt from 'video-service-sim-scenario-validator';

export interface SchemaValidator {
  (data: unknown): boolean;
  errors?: ErrorObject[] | null;
}

export function scenarioFileValidator(): SchemaValidator {
  return prebuilt;
}
