import { createHmac } from 'node:crypto';

/**
 * `sha256=` + lowercase hex HMAC-SHA256 of the exact body bytes, keyed with the secret as UTF-8.
 * Both go in as strings (UTF-8 is createHmac's default): Node takes a string key by a much quicker
 * path than a Buffer key, and the body needs no copy.
 */
export function signatureHeader(secret: string, body: string): string {
  return `sha256=${createHmac('sha256', secret).update(body, 'utf8').digest('hex')}`;
}
