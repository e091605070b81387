import { runGit } from './run-git.js';

/** Sizes of objects by sha, with one `cat-file --batch-check`; a missing object has none. */
export async function objectSizes(dir: string, shas: string[]): Promise<Map<string, number>> {
  const sizes = new Map<string, number>();
  if (!shas.length) return sizes;
  const { stdout } = await runGit(['cat-file', '--batch-check=%(objectname) %(objectsize)'], { cwd: dir, input: shas.join('\n') + '\n' });
  for (const line of stdout.split('\n')) {
    const [sha, size] = line.split(' ');
    if (sha && size && size !== 'missing') sizes.set(sha, Number(size));
  }
  return sizes;
}
