/**
 * Authentication (interface document, section 5): every /v1 request carries
 * `Authorization: Bearer <API_KEY>`; a missing, malformed, unknown or revoked key is 401
 * `authentication_error`. Which keys exist is the scenario's: those under `accounts`, and any key
 * with `auth.key_prefix` (each an account of its own); `auth.revoked_keys` and an account's
 * `revoked` are refused. A key is at most 255 characters long: each account keeps its key, so a
 * longer one would let the accounts' memory grow with what clients send.
 */
import { fail, type SimError } from '../errors.js';
import type { Scenario } from '../scenario/scenario.js';
import { wrongShard, type ShardSpec } from './shard.js';

/** The longest API key accepted. */
export const MAX_API_KEY_LENGTH = 255;

/**
 * The API key an `Authorization` header names, or the error to answer: 401, or on a shard the 421
 * `wrong_shard` of a key that belongs to another shard (before the scenario judges the key: this
 * shard is not where it is judged).
 */
export function apiKeyOf(scenario: Scenario, authorization: string | undefined, shard: ShardSpec | null = null): string | SimError {
  if (authorization === undefined || authorization.trim() === '') return fail('missing_api_key');
  const key = bearerCredential(authorization);
  if (key === undefined) {
    return fail('invalid_api_key', {
      message: 'Malformed Authorization header. Use "Authorization: Bearer sk_test_..." (the scheme Bearer, one space, the key).',
    });
  }
  return wrongShard(shard, key) ?? keyRefusal(scenario, key) ?? key;
}

/**
 * Why the scenario refuses a key (401 `revoked_api_key` or `invalid_api_key`), or undefined for a
 * key that is, or can become, an account's. A control call that names an account by its key
 * (`api_key`) never makes an account for a refused one.
 */
export function keyRefusal(scenario: Scenario, key: string): SimError | undefined {
  if (key.length > MAX_API_KEY_LENGTH) {
    return fail('invalid_api_key', { message: `Invalid API key: a key is at most ${MAX_API_KEY_LENGTH} characters long; this one has ${key.length}.` });
  }
  const { auth, accounts } = scenario;
  // Own keys only: a key named 'valueOf' or '__proto__' must not find Object.prototype's members.
  const spec = Object.hasOwn(accounts, key) ? accounts[key] : undefined;
  if (auth.revoked_keys.includes(key) || spec?.revoked) return fail('revoked_api_key');
  const known = spec !== undefined || (auth.key_prefix !== null && key.startsWith(auth.key_prefix) && key.length > auth.key_prefix.length);
  if (known) return undefined;
  return fail('invalid_api_key', {
    message:
      auth.key_prefix !== null
        ? `Invalid API key. This simulator accepts any key that starts with "${auth.key_prefix}", for example "Authorization: Bearer ${auth.key_prefix}123".`
        : `Invalid API key. Scenario '${scenario.name}' accepts only the keys listed under its accounts.`,
  });
}

/**
 * The credential of `Bearer <credential>` (the scheme in any case, then one or more spaces, then
 * one or more visible characters, then nothing but spaces), or undefined for any other form. One
 * pass over the header, each character looked at once or twice: no regular expression, so no
 * header, however long or hostile, costs more than its length.
 */
export function bearerCredential(header: string): string | undefined {
  const SCHEME = 'bearer';
  let at = 0;
  while (at < header.length && isOptionalSpace(header.charCodeAt(at))) at++;
  if (header.length - at < SCHEME.length + 2 || header.slice(at, at + SCHEME.length).toLowerCase() !== SCHEME) return undefined;
  at += SCHEME.length;
  if (header.charCodeAt(at) !== SPACE) return undefined;
  while (header.charCodeAt(at) === SPACE) at++;
  let end = header.length;
  while (end > at && isOptionalSpace(header.charCodeAt(end - 1))) end--;
  if (end === at) return undefined;
  for (let i = at; i < end; i++) if (header.charCodeAt(i) <= SPACE || header.charCodeAt(i) === DELETE) return undefined;
  return header.slice(at, end);
}

const SPACE = 0x20;
const TAB = 0x09;
const DELETE = 0x7f;
const isOptionalSpace = (c: number): boolean => c === SPACE || c === TAB;
