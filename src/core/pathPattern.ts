/**
 * Path patterns of scenario faults, rate-limit groups and queued faults: an exact path, or a
 * prefix when the pattern ends with `*` (`/v1/*`).
 */
export function matchesPath(pattern: string, path: string): boolean {
  return pattern.endsWith('*') ? path.startsWith(pattern.slice(0, -1)) : path === pattern;
}
