import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';

/**
 * Webhook secrets at rest: AES-256-GCM with a key from CAIRN_SECRET_KEY, or
 * one generated once into `<dataDir>/secret-key` (mode 0600). Stored as
 * `v1:<base64 of iv | tag | ciphertext>`. Several processes sharing a
 * database must share the key: set CAIRN_SECRET_KEY for them.
 */
export class SecretBox {
  private constructor(private readonly key: Buffer) {}

  static async open(configuredKey: string | undefined, dataDir: string): Promise<SecretBox> {
    if (configuredKey) return new SecretBox(createHash('sha256').update(configuredKey, 'utf8').digest());
    const file = path.join(dataDir, 'secret-key');
    try {
      const stored = Buffer.from((await fs.readFile(file, 'utf8')).trim(), 'base64');
      if (stored.length === 32) return new SecretBox(stored);
      throw new Error(`${file} does not hold a 32-byte key`);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
    const key = randomBytes(32);
    await fs.mkdir(dataDir, { recursive: true });
    await fs.writeFile(file, `${key.toString('base64')}\n`, { mode: 0o600, flag: 'wx' }).catch(async (error: NodeJS.ErrnoException) => {
      if (error.code === 'EEXIST') return; // another process won the race: use its key
      throw error;
    });
    return SecretBox.open(undefined, dataDir);
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
