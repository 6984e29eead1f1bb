/**
 * Strict reading of integer query parameters. The validator coerces query strings with Number(),
 * which lets `Infinity`, `1e1` and `0x10` through; the contract wants decimal integers only.
 */
import type { Request } from 'express';
import { fail } from '../core/errors.js';

/** The `limit` query parameter as a decimal integer in [1, max], or undefined when absent. */
export function limitParam(req: Request, max: number): number | undefined {
  const raw = new URLSearchParams(req.originalUrl.split('?')[1] ?? '').get('limit');
  if (raw === null) return undefined;
  const value = /^[0-9]{1,7}$/.test(raw) ? Number(raw) : NaN;
  if (!(value >= 1 && value <= max)) {
    throw fail('invalid_parameter', {
      param: 'limit',
      message: `Invalid value for 'limit': must be a decimal integer from 1 to ${max}; got '${raw}'.`,
    });
  }
  return value;
}
