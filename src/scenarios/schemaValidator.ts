/**
 * The compiled validator of scenario files. Compiling the schema with Ajv takes about a tenth of a
 * second, so the build writes it ahead of time as standalone code (`dist/scenarios/
 * scenario-schema.cjs`, by `scripts/scenario-validator.mjs`); from sources, or when that file is
 * missing or older than this module, it is compiled at first use.
 */
import type { ErrorObject } from 'ajv';
import { existsSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { SCENARIO_FILE_SCHEMA } from '../core/scenario/scenarioSchema.js';

export interface SchemaValidator {
  (data: unknown): boolean;
  errors?: ErrorObject[] | null;
}

/** Ajv's options: `verbose` makes errors carry the offending data and their schema, for messages. */
export const SCENARIO_AJV_OPTIONS = { allErrors: true, discriminator: true, strict: false, verbose: true } as const;

const require = createRequire(import.meta.url);
const prebuiltPath = fileURLToPath(new URL('./scenario-schema.cjs', import.meta.url));
const thisModulePath = fileURLToPath(import.meta.url);

let validator: SchemaValidator | undefined;

export function scenarioFileValidator(): SchemaValidator {
  validator ??= loadPrebuilt() ?? compile();
  return validator;
}

function loadPrebuilt(): SchemaValidator | undefined {
  if (!existsSync(prebuiltPath) || statSync(prebuiltPath).mtimeMs < statSync(thisModulePath).mtimeMs) return undefined;
  const mod = require(prebuiltPath) as SchemaValidator | { default: SchemaValidator };
  return typeof mod === 'function' ? mod : mod.default;
}

function compile(): SchemaValidator {
  const { Ajv } = require('ajv') as typeof import('ajv');
  const addFormats = require('ajv-formats') as typeof import('ajv-formats').default;
  const ajv = new Ajv(SCENARIO_AJV_OPTIONS);
  addFormats(ajv);
  return ajv.compile(SCENARIO_FILE_SCHEMA) as SchemaValidator;
}
