import { randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import { configureServerGit } from './git-environment.js';

/**
 * How long a signed push's nonce stays good: it is issued with the advertisement (`info/refs`) and
 * checked by the receive-pack of the POST, a process of its own that may start only after the push
 * waited for the repository's lock (up to 10 minutes) and the client signed. Within this window git
 * reports the nonce `OK`, beyond it `SLOP`.
 */
const CERT_NONCE_SLOP_SECONDS = 15 * 60;

/**
 * What receive-pack offers clients, for every git the service starts (git-environment.ts):
 * - push options (`git push -o ci.skip`), which the hooks pass on to the `push` events;
 * - signed pushes (`git push --signed`): git asks for a certificate with a nonce, an HMAC under a
 *   seed generated once into `<dataDir>/push-cert-seed` (mode 0600; processes serving the same
 *   repositories share it through the data dir), and verifies the signature with the server's own
 *   keyring, `<dataDir>/gnupg`, where an administrator may import and trust keys.
 */
export async function configureReceive(dataDir: string): Promise<void> {
  const gnupgHome = path.join(dataDir, 'gnupg');
  await fs.mkdir(gnupgHome, { recursive: true, mode: 0o700 });
  configureServerGit(
    {
      'receive.advertisePushOptions': 'true',
      'receive.certNonceSeed': await nonceSeed(dataDir),
      'receive.certNonceSlop': String(CERT_NONCE_SLOP_SECONDS),
    },
    { GNUPGHOME: gnupgHome },
  );
}

async function nonceSeed(dataDir: string): Promise<string> {
  const file = path.join(dataDir, 'push-cert-seed');
  try {
    const stored = (await fs.readFile(file, 'utf8')).trim();
    if (/^[0-9a-f]{64}$/.test(stored)) return stored;
    throw new Error(`${file} does not hold a 32-byte hex seed`);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  await fs.writeFile(file, `${randomBytes(32).toString('hex')}\n`, { mode: 0o600, flag: 'wx' }).catch((error: NodeJS.ErrnoException) => {
    if (error.code !== 'EEXIST') throw error; // another process won the race: use its seed
  });
  return nonceSeed(dataDir);
}
