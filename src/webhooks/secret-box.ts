import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import type { MikroORM } from '@mikro-orm/postgresql';
import { siteValue, storedSiteValue } from '../db/site-values.js';

/** CAIRN_SECRET_KEY's prefix for a key given as it is (base64 of 32 bytes) rather than as a passphrase. */
const RAW_KEY_PREFIX = 'base64:';

/** What the site's check value says, sealed with the site's key: a key that cannot open it is another key. */
const CHECK_TEXT = 'cairn site key';

/** Why a process's key is not the site's: it refuses to start, saying which setting to fix. */
type Mismatch = 'setting' | 'file' | 'unset' | 'secrets';

const MISMATCH_MESSAGES: Record<Mismatch, string> = {
  setting:
    "CAIRN_SECRET_KEY is not the key this site's webhook secrets are encrypted with: set the same CAIRN_SECRET_KEY on every process of the site (or unset it to use the key kept in the database)",
  file: "the key kept in this data dir's secret-key file is not the key this site's webhook secrets are encrypted with: set CAIRN_SECRET_KEY to the site's key, or remove the file",
  unset: "CAIRN_SECRET_KEY is not set, and this site's key comes from CAIRN_SECRET_KEY on its other processes: set it here too",
  secrets:
    'this key cannot open the webhook secrets already in the database: start with the data dir (secret-key file) or CAIRN_SECRET_KEY the site used before',
};

/** The error of a process whose key is not the site's: it refuses to start. */
class SiteKeyMismatch extends Error {
  constructor(why: Mismatch) {
    super(MISMATCH_MESSAGES[why]);
    this.name = 'SiteKeyMismatch';
  }
}

/**
 * Webhook secrets (and the other site secrets) at rest: AES-256-GCM under one key per site, stored
 * as `v1:<base64 of iv | tag | ciphertext>`. The key is CAIRN_SECRET_KEY — `base64:<32 bytes>` as
 * it is, any other text (≥ 32 characters) through SHA-256 — or, without it, generated
 * once into the database by the first process to start (a data dir's `secret-key` file from an
 * earlier version is taken over instead). Every process checks its key against a value sealed
 * with the site's key and refuses to start on another one.
 */
export class SecretBox {
  private constructor(private readonly key: Buffer) {}

  static async open(configuredKey: string | undefined, orm: MikroORM, dataDir: string): Promise<SecretBox> {
    if (!configuredKey && (await storedSiteValue(orm, 'secret-key-check')) && !(await storedSiteValue(orm, 'secret-key'))) {
      throw new SiteKeyMismatch('unset'); // the site was keyed by CAIRN_SECRET_KEY: generating a key here would be another
    }
    const box = new SecretBox(configuredKey ? keyFromSetting(configuredKey) : await siteKey(orm, dataDir));
    // The first process to check also tries a secret already sealed (a site from before the check):
    // a key that cannot open it must not become the site's.
    const check = await siteValue(orm, 'secret-key-check', async () => {
      const [sealed] = await orm.em.fork().execute<Array<{ secret_ciphertext: string }>>('select secret_ciphertext from webhooks limit 1');
      if (sealed && !box.opens(sealed.secret_ciphertext)) throw new SiteKeyMismatch('secrets');
      return box.seal(CHECK_TEXT);
    });
    if (!box.opens(check, CHECK_TEXT)) throw new SiteKeyMismatch(configuredKey !== undefined ? 'setting' : 'file');
    return box;
  }

  /** Whether this key opens `sealed` (to `expected`, when given). */
  private opens(sealed: string, expected?: string): boolean {
    try {
      const opened = this.open(sealed);
      return expected === undefined || opened === expected;
    } catch {
      return false;
    }
  }

  seal(plaintext: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return `v1:${Buffer.concat([iv, cipher.getAuthTag(), ciphertext]).toString('base64')}`;
  }

  open(sealed: string): string {
    if (!sealed.startsWith('v1:')) throw new Error('unknown secret format');
    const raw = Buffer.from(sealed.slice(3), 'base64');
    const decipher = createDecipheriv('aes-256-gcm', this.key, raw.subarray(0, 12));
    decipher.setAuthTag(raw.subarray(12, 28));
    return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8');
  }
}

/**
 * CAIRN_SECRET_KEY as a key: `base64:` and the base64 of 32 bytes (the form the database keeps a
 * generated key in) is the key itself; any other text is a passphrase, hashed (as it always was, so
 * a site that set one keeps its key).
 */
function keyFromSetting(setting: string): Buffer {
  if (!setting.startsWith(RAW_KEY_PREFIX)) return createHash('sha256').update(setting, 'utf8').digest();
  return Buffer.from(setting.slice(RAW_KEY_PREFIX.length), 'base64');
}

/** The key kept in the database; the first process offers its data dir's old `secret-key` file, or a new key. */
async function siteKey(orm: MikroORM, dataDir: string): Promise<Buffer> {
  const stored = await siteValue(orm, 'secret-key', async () => (await legacyKey(dataDir)) ?? randomBytes(32).toString('base64'));
  const key = Buffer.from(stored, 'base64');
  if (key.length !== 32) throw new Error("the site's secret key in the database is not 32 bytes");
  const legacy = await legacyKey(dataDir);
  if (legacy !== null && legacy !== stored) throw new SiteKeyMismatch('file');
  return key;
}

/** The key an earlier version generated into `<dataDir>/secret-key`, base64; null without one. */
async function legacyKey(dataDir: string): Promise<string | null> {
  const file = path.join(dataDir, 'secret-key');
  try {
    const stored = (await fs.readFile(file, 'utf8')).trim();
    if (Buffer.from(stored, 'base64').length !== 32) throw new Error(`${file} does not hold a 32-byte key`);
    return stored;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
}
