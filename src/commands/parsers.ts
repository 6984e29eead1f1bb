/**
 * Parsers of flag values, shared by the commands: each returns the value or throws commander's
 * InvalidArgumentError, which commander reports naming the flag (exit status 2).
 */
import { InvalidArgumentError } from 'commander';
import { hostname } from 'node:os';
import { parseShard, ShardSpecError, type ShardSpec } from '../core/accounts/shard.js';
import { isHttpUrl } from '../hostNames.js';
import { parseControlOrigins } from '../http/accessGuard.js';

/** Exit status of a usage error: a bad flag, a bad value, an invalid scenario file. */
export const EXIT_USAGE = 2;

export function integer(name: string, min: number, max: number) {
  return (value: string): number => {
    if (!/^-?\d+$/.test(value.trim())) throw new InvalidArgumentError(`${name} must be an integer.`);
    const n = Number(value);
    if (n < min || n > max) throw new InvalidArgumentError(`${name} must be between ${min} and ${max}.`);
    return n;
  };
}

export function positiveNumber(value: string): number {
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n) || n <= 0) throw new InvalidArgumentError('must be a number above 0.');
  return n;
}

/** An http(s) URL, without trailing slashes. */
export function url(value: string): string {
  if (!isHttpUrl(value)) throw new InvalidArgumentError(`must be an http(s) URL, got '${value}'.`);
  return value.replace(/\/+$/, '');
}

/** A comma-separated list of host names (`--allowed-hosts a.test,.b.test`). */
export function hostList(value: string): string[] {
  const hosts = value.split(',').map((h) => h.trim()).filter((h) => h !== '');
  const bad = hosts.find((h) => /[\s/@?#]/.test(h));
  if (bad !== undefined) throw new InvalidArgumentError(`expected host names separated by commas (sim.internal,.example.test), got '${bad}'.`);
  return hosts;
}

/** A comma-separated list of origins (`--control-origin http://localhost:5173,https://app.test`): each an origin alone. */
export function originList(value: string): string[] {
  try {
    return parseControlOrigins(value.split(',').map((o) => o.trim()).filter((o) => o !== ''), 'expected origins separated by commas');
  } catch (e) {
    throw new InvalidArgumentError(`${(e as Error).message}.`);
  }
}

/** `I/N`, or `auto/N` with I from this host's name (`sim-2` is 2): a shard of N (see src/core/accounts/shard.ts). */
export function shard(value: string): ShardSpec {
  try {
    return parseShard(value, hostname(), null);
  } catch (e) {
    if (e instanceof ShardSpecError) throw new InvalidArgumentError(e.message);
    throw e;
  }
}
