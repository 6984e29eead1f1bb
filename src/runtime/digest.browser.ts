/**
 * `digest.ts` for a browser page (see there): the same SHA-256 digests, by `@noble/hashes`.
 */
import { sha256 } from '@noble/hashes/sha2.js';

const utf8 = new TextEncoder();

export function sha256Base64(text: string): string {
  return Buffer.from(sha256(utf8.encode(text))).toString('base64');
}

export function sha256Base64Url(bytes: Uint8Array): string {
  // The `buffer` package writes no base64url: base64, its two letters swapped and its padding dropped.
  return Buffer.from(sha256(bytes)).toString('base64').replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}
