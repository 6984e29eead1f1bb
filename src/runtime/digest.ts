/**
 * SHA-256 digests, in Node by `node:crypto`. A browser bundle (`video-service-sim/msw`) takes
 * `digest.browser.ts` in its place: the same digests from a JavaScript implementation, so that
 * what the page answers (ETags) and keeps (request fingerprints) is what the server would.
 */
import { createHash, hash } from 'node:crypto';

/** The SHA-256 of a text's UTF-8 bytes, in base64 (44 characters). */
export function sha256Base64(text: string): string {
  // The one-shot digest: no Hash object per request.
  return hash('sha256', text, 'base64');
}

/** The SHA-256 of some bytes, in base64url without padding (43 characters). */
export function sha256Base64Url(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('base64url');
}
