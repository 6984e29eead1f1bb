/**
 * Host names and addresses: which are loopback ones (the Host check, the default base URL, whether
 * a control token is needed), a host as it stands in a URL, and which addresses are http(s) URLs.
 */

/** The addresses that listen on every interface (`''`: no host given). */
const WILDCARD_ADDRESSES: ReadonlySet<string> = new Set(['0.0.0.0', '::', '']);

/** Whether a listen address listens on every interface (`0.0.0.0`, `::`, or none given). */
export function isWildcardAddress(address: string): boolean {
  return WILDCARD_ADDRESSES.has(address);
}

/**
 * Whether a listen address is a loopback one: `localhost`, `::1` (bracketed or not), an address of
 * 127.0.0.0/8 (dotted, or IPv4-mapped `::ffff:127.…`); letter case aside.
 */
export function isLoopbackAddress(address: string): boolean {
  const name = address.toLowerCase();
  const bare = name.startsWith('[') && name.endsWith(']') ? name.slice(1, -1) : name;
  return bare === 'localhost' || bare === '::1' || bare.startsWith('::ffff:127.') || isLoopbackIPv4(bare);
}

/**
 * Whether a host name, lower case and an IPv6 address bracketed (as the Host check reads a `Host`
 * header), is a loopback one: `localhost`, `*.localhost`, an address of 127.0.0.0/8, or `[::1]`.
 */
export function isLoopbackHostName(name: string): boolean {
  return name === 'localhost' || name.endsWith('.localhost') || name === '[::1]' || isLoopbackIPv4(name);
}

/** Four dotted decimal numbers of at most 255, the first 127. */
function isLoopbackIPv4(name: string): boolean {
  const parts = name.split('.');
  if (parts.length !== 4 || parts[0] !== '127') return false;
  return parts.every((part) => part.length >= 1 && part.length <= 3 && [...part].every((d) => d >= '0' && d <= '9') && Number(part) <= 255);
}

/** A host as it stands in a URL, before `:PORT`: an IPv6 address in brackets (once), anything else as it is. */
export function hostInUrl(host: string): string {
  return host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
}

/** Whether `value` is an http(s) URL: what a base or media address written into responses must be. */
export function isHttpUrl(value: string): boolean {
  try {
    const { protocol } = new URL(value);
    return protocol === 'http:' || protocol === 'https:';
  } catch {
    return false;
  }
}
