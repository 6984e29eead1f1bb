// Build step: compiles the scenario-file JSON schema with Ajv into standalone code,
// dist/scenarios/scenario-schema.cjs, so that the simulator does not compile it at every start.
// src/scenarios/schemaValidator.ts compiles at run time when the file is missing or stale.
import { createRequire } from 'node:module';
import { writeFileSync } from 'node:fs';
import { SCENARIO_FILE_SCHEMA } from '../dist/core/scenario/scenarioSchema.js';
import { SCENARIO_AJV_OPTIONS } from '../dist/scenarios/schemaValidator.js';

const require = createRequire(import.meta.url);
const { Ajv } = require('ajv');
const standaloneCode = require('ajv/dist/standalone').default;
const addFormats = require('ajv-formats');

const ajv = new Ajv({ ...SCENARIO_AJV_OPTIONS, code: { source: true } });
addFormats(ajv);
const validate = ajv.compile(SCENARIO_FILE_SCHEMA);
writeFileSync(new URL('../dist/scenarios/scenario-schema.cjs', import.meta.url), standaloneCode(ajv, validate));
