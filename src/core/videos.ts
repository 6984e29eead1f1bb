/**
 * The video endpoints (interface document, sections 4.1 to 4.4).
 */

/**
 * Section 4.1: the request's negative prompt is merged with the account's default, not replacing
 * it. The simulator renders nothing, so the merged prompt shows in the journal only.
 */
export function effectiveNegativePrompt(accountDefault: string | null, requested: string | null): string | null {
  const parts = [accountDefault, requested].filter((p): p is string => p !== null && p.trim() !== '');
  return parts.length > 0 ? parts.join(', ') : null;
}
