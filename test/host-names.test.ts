/**
 * Loopback hosts and a host as it stands in a URL (`src/hostNames.ts`), and what the addresses the
 * simulator writes and prints make of them: the default base URL (`defaultBaseUrl`) and a shard's
 * address in the proxy's configuration (`shardAddress`).
 */
import { describe, expect, it } from 'vitest';
import { shardAddress } from '../src/deploy/nginx.js';
import { hostInUrl, isLoopbackAddress, isLoopbackHostName, isWildcardAddress } from '../src/hostNames.js';
import { defaultBaseUrl } from '../src/index.js';

describe('loopback addresses and host names', () => {
  it.each([
    ['localhost', true],
    ['LocalHost', true],
    ['127.0.0.1', true],
    ['127.255.0.9', true],
    ['::1', true],
    ['[::1]', true],
    ['::ffff:127.0.0.1', true],
    ['0.0.0.0', false],
    ['::', false],
    ['', false],
    ['10.0.0.5', false],
    ['127.0.0.256', false],
    ['127.1', false],
    ['127.evil.example', false],
    ['app.localhost', false],
    ['fe80::1', false],
  ])('listen address %j is loopback: %j', (address, loopback) => {
    expect(isLoopbackAddress(address)).toBe(loopback);
  });

  it.each([
    ['localhost', true],
    ['app.localhost', true],
    ['127.1.2.3', true],
    ['[::1]', true],
    ['::1', false],
    ['[::ffff:127.0.0.1]', false],
    ['127.0.0.1.evil.example', false],
    ['localhost.evil.example', false],
  ])('host name %j (as the Host check reads it) is loopback: %j', (name, loopback) => {
    expect(isLoopbackHostName(name)).toBe(loopback);
  });

  it('the wildcard addresses are 0.0.0.0, :: and none', () => {
    expect(['0.0.0.0', '::', '', '127.0.0.1', 'localhost'].map(isWildcardAddress)).toEqual([true, true, true, false, false]);
  });
});

describe('a host in a URL', () => {
  it.each([
    ['localhost', 'localhost'],
    ['10.0.0.5', '10.0.0.5'],
    ['sim-0.sim', 'sim-0.sim'],
    ['fe80::1', '[fe80::1]'],
    ['[fe80::1]', '[fe80::1]'],
  ])('%j stands as %j', (host, shown) => {
    expect(hostInUrl(host)).toBe(shown);
  });

  it.each([
    ['0.0.0.0', 'http://localhost:8080'],
    ['::', 'http://localhost:8080'],
    ['', 'http://localhost:8080'],
    ['127.0.0.1', 'http://localhost:8080'],
    ['127.0.0.2', 'http://localhost:8080'],
    ['::1', 'http://localhost:8080'],
    ['localhost', 'http://localhost:8080'],
    ['10.0.0.5', 'http://10.0.0.5:8080'],
    ['fe80::1', 'http://[fe80::1]:8080'],
    ['sim-0.sim', 'http://sim-0.sim:8080'],
  ])('the default base URL when listening on %j is %s', (host, url) => {
    expect(defaultBaseUrl(host, 8080)).toBe(url);
  });

  it.each([
    ['http://127.0.0.1:8081', '127.0.0.1:8081'],
    ['http://[::1]:8081/', '[::1]:8081'],
    ['http://[FE80::1]', '[fe80::1]:80'],
    ['http://sim-0.sim:8080', 'sim-0.sim:8080'],
  ])('the proxy reaches shard %s at %s', (url, address) => {
    expect(shardAddress(url)).toBe(address);
  });
});
