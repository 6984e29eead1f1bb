/**
 * Runs around every test file: no response anywhere in the suite may fail validation against
 * openapi.yaml, by the simulator's own validators or by express-openapi-validator (see
 * test/crossCheck.ts), and the two must agree.
 */
import { afterAll, expect } from 'vitest';
import { contractProblems, forgetContractChecks } from './crossCheck.js';

afterAll(() => {
  try {
    expect(contractProblems(), 'responses or requests on which the two validators of openapi.yaml disagree').toEqual([]);
  } finally {
    forgetContractChecks();
  }
});
