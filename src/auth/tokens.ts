import { hash, randomBytes } from 'node:crypto';

const TOKEN_PREFIX = 'cairn_pat_';

/** A new token: the prefix and 32 random bytes (256 bits) in base64url. */
export function generateToken(): string {
  return TOKEN_PREFIX + randomBytes(32).toString('base64url');
}

/**
 * Tokens carry 256 bits of entropy, so a fast hash is enough to make the
 * stored value useless to a reader of the database (no password-style KDF).
 */
export function hashToken(token: string): string {
  return hash('sha256', token, 'hex'); // one-shot: every request hashes its token, no Hash object each time
}

/** Cheap shape check before any query: printable ASCII, sane length. */
export function plausibleToken(token: string): boolean {
  return token.length >= 20 && token.length <= 200 && /^[\x21-\x7e]+$/.test(token);
}
