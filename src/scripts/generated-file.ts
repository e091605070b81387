import fs from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The checkout's root (scripts run from dist/). */
export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');

/**
 * Writes a generated, committed file (`schema/…`), or with --check exits 1 when the committed copy
 * differs from what the code generates now: the test suite runs the check, so a stale file fails it.
 */
export async function writeOrCheck(relativePath: string, content: string, command: string): Promise<void> {
  const file = path.join(ROOT, relativePath);
  if (process.argv.includes('--check')) {
    const committed = await fs.readFile(file, 'utf8').catch(() => '');
    if (committed !== content) {
      console.error(`${relativePath} is stale: run \`${command}\` and commit it`);
      process.exit(1);
    }
    console.log(`${relativePath} is up to date`);
  } else {
    await fs.writeFile(file, content);
    console.log(`wrote ${relativePath}`);
  }
}
