/**
 * Runs around every test file: it leaves no file lock held, and no response anywhere in the suite may fail validation against
 * openapi.yaml, by the simulator's own validators or by express-openapi-validator (see
 * test/crossCheck.ts), and the two must agree.
 */
import { afterAll, expect } from 'vitest';
import { heldLockCount } from '../src/fileLock.js';
import { contractProblems, forgetContractChecks } from './crossCheck.js';

afterAll(() => {
  try {
    // Files share a worker: a lock left held keeps its refresh timer running into the next file.
    expect(heldLockCount(), 'state or transcript locks still held at the end of this file (close its simulators)').toBe(0);
    expect(contractProblems(), 'responses or requests on which the two validators of openapi.yaml disagree').toEqual([]);
  } finally {
    forgetContractChecks();
  }
});
