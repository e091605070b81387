import { createHash } from 'node:crypto';
import type { BigIntStats } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';

/**
 * A digest of how a bare repository's refs are stored — `HEAD`, `packed-refs` and every directory
 * and loose ref file under `refs/`, each by inode, size and modification and change times — without
 * reading a ref. git changes a ref by renaming a lock file onto it (a new inode) or rewriting
 * `packed-refs` the same way; a file rewritten in place by hand changes its times: any ref change
 * changes the digest, however coarse the file system's clock. Other things can change it too (git's
 * own `pack-refs`), which only costs a comparison that finds nothing. `refs/pull/` is left out: pull
 * refs (src/pulls/pull-refs.ts) are written after a change is recorded and are no ref changes of
 * the repository, so writing them must not make it look changed. (Deleting one that `pack-refs`
 * packed rewrites `packed-refs`, and the first one made adds `refs/pull` to `refs`: a comparison
 * that finds nothing, once.) Null when the repository's directory cannot be read.
 */
export async function refsFingerprint(dir: string): Promise<string | null> {
  const hash = createHash('sha256');
  const note = async (relative: string): Promise<BigIntStats | null> => {
    const stat = await fs.stat(path.join(dir, relative), { bigint: true }).catch((error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') return null;
      throw error;
    });
    hash.update(stat ? `${relative} ${stat.ino} ${stat.size} ${stat.mtimeNs} ${stat.ctimeNs}\n` : `${relative} -\n`);
    return stat;
  };
  const walk = async (relative: string): Promise<void> => {
    await note(relative);
    const entries = await fs.readdir(path.join(dir, relative), { withFileTypes: true });
    for (const entry of entries.sort((x, y) => (x.name < y.name ? -1 : 1))) {
      if (entry.isDirectory()) {
        if (relative !== 'refs' || entry.name !== 'pull') await walk(path.join(relative, entry.name));
      } else await note(path.join(relative, entry.name));
    }
  };
  try {
    if (!(await note('HEAD'))) return null;
    await note('packed-refs');
    await walk('refs');
  } catch {
    return null;
  }
  return hash.digest('base64url');
}
