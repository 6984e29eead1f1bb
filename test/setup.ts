/**
 * Runs around every test file: no response anywhere in the suite may fail validation against
 * openapi.yaml (the validator turns such a response into a 500 and counts it).
 */
import { afterAll, expect } from 'vitest';
import { responseValidation } from '../src/http/errors.js';

afterAll(() => {
  expect(responseValidation.last, 'responses that failed validation against openapi.yaml').toEqual([]);
  expect(responseValidation.failures).toBe(0);
});
