import { randomFillSync } from 'node:crypto';

/**
 * Opaque, time-ordered ids such as `repo_01jd3k8x0f4q9s7m2c5v6b8n1t`.
 *
 * The prefix names the kind of record and the underscore keeps an id from
 * ever being mistaken for a user login (logins have no underscores) or a
 * number. The body is a ULID (48-bit millisecond time + 80 random bits) in
 * lowercase Crockford base32, so ids sort by creation time: lists ordered by
 * (created_at, id) are stable.
 */
export type IdPrefix = 'usr' | 'tok' | 'repo' | 'col' | 'iss' | 'pr' | 'rev' | 'hook' | 'sts' | 'bp' | 'lbl' | 'cmt' | 'rvc' | 'rvt';

const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz';

export function newId(prefix: IdPrefix, now = Date.now()): string {
  let time = '';
  let t = now;
  for (let i = 0; i < 10; i++) {
    time = ALPHABET[t % 32] + time;
    t = Math.floor(t / 32);
  }
  if (used + 16 > pool.length) {
    randomFillSync(pool);
    used = 0;
  }
  let random = '';
  for (let i = 0; i < 16; i++) random += ALPHABET[pool[used++]! % 32];
  return `${prefix}_${time}${random}`;
}

/**
 * Random bytes for ids, drawn 4 KiB at a time: asking the system for 16 bytes per id cost as much
 * as the rest of making one. Bytes are used once and in order, so every id still has its own.
 */
const pool = Buffer.alloc(4096);
let used = pool.length;

/** True when `value` has the shape of an id with that prefix (cheap pre-check before a query). */
export function looksLikeId(prefix: IdPrefix, value: string): boolean {
  return value.length === prefix.length + 27 && value.startsWith(`${prefix}_`) && /^[0-9a-z]+$/.test(value.slice(prefix.length + 1));
}

/** The "no object" id git uses for a ref that does not exist (before a create, after a delete). */
export const ZERO_SHA = '0'.repeat(40);
