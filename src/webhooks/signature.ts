import { createHmac } from 'node:crypto';

/** `sha256=` + lowercase hex HMAC-SHA256 of the exact body bytes, keyed with the secret as UTF-8. */
export function signatureHeader(secret: string, body: string): string {
  return `sha256=${createHmac('sha256', Buffer.from(secret, 'utf8')).update(Buffer.from(body, 'utf8')).digest('hex')}`;
}
