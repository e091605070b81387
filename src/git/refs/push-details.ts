import fs from 'node:fs/promises';

/**
 * What a push says beside its ref updates, as git hands it to the hooks: its options (`git push -o`,
 * `GIT_PUSH_OPTION_*`) and its certificate (`git push --signed`, `GIT_PUSH_CERT_*`). The pre-receive
 * hook (hooks.ts) writes them as NUL-terminated `name=value` records; the `push` events carry them.
 */

/** Options one push may send; more refuse the push (the pre-receive hook), as does a longer one. */
export const MAX_PUSH_OPTIONS = 32;
export const MAX_PUSH_OPTION_BYTES = 1024;
/** A certificate's fields are git's and gpg's; bounded all the same. */
const MAX_CERT_FIELD_CHARS = 256;

/** A push certificate as git verified it, with the server's keyring. */
export interface PushCertificate {
  /** git's verification status (`%G?`): G good, B bad, U good of unknown validity, X/Y expired, R revoked, E cannot be checked. */
  status: string;
  /** Whether the signature is good and made by a key the server's keyring trusts (status G). */
  verified: boolean;
  /** Name and email of the key's owner, when gpg knows the key. */
  signer: string | null;
  /** The signing key's id, when the signature names it. */
  key: string | null;
  /** Whether the certificate carries the nonce this server issued for the push: OK, SLOP, BAD, MISSING or UNSOLICITED. */
  nonce_status: string | null;
}

export interface PushDetails {
  options: string[];
  certificate: PushCertificate | null;
}

export const NO_PUSH_DETAILS: PushDetails = { options: [], certificate: null };

/** What the pre-receive hook wrote to `file`; none when it wrote nothing (a push refused before, or without details). */
export async function readPushDetails(file: string): Promise<PushDetails> {
  return parsePushDetails(await fs.readFile(file, 'utf8').catch(() => ''));
}

/** Parses what the pre-receive hook wrote; anything unexpected is ignored, every value bounded. */
function parsePushDetails(text: string): PushDetails {
  const options: string[] = [];
  const cert = new Map<string, string>();
  for (const record of text.split('\0')) {
    const equals = record.indexOf('=');
    if (equals < 0) continue;
    const name = record.slice(0, equals);
    const value = record.slice(equals + 1);
    if (name === 'option' && options.length < MAX_PUSH_OPTIONS) options.push(cutBytes(value, MAX_PUSH_OPTION_BYTES));
    else if (name.startsWith('cert.')) cert.set(name.slice(5), value.slice(0, MAX_CERT_FIELD_CHARS));
  }
  if (!cert.get('id')) return { options, certificate: null };
  const status = cert.get('status') || 'E';
  return {
    options,
    certificate: {
      status,
      verified: status === 'G',
      signer: cert.get('signer') || null,
      key: cert.get('key') || null,
      nonce_status: cert.get('nonce_status') || null,
    },
  };
}

function cutBytes(value: string, bytes: number): string {
  const buffer = Buffer.from(value, 'utf8');
  return buffer.length <= bytes
    ? value
    : buffer
        .subarray(0, bytes)
        .toString('utf8')
        .replace(/\uFFFD$/, '');
}
