import { tryGitHead } from '../git/run-git.js';

/**
 * GitHub's closing keywords: close, closes, closed, fix, fixes, fixed, resolve, resolves, resolved,
 * in any case, then `#<number>` (an optional colon between, as GitHub allows).
 */
const CLOSING = /\b(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?):?\s+#(\d{1,9})\b/gi;

/** Issues one merge closes at most: the first named (a body cannot make a merge close thousands, inside its transaction). */
const MOST_CLOSED = 50;

/** The issue numbers that `texts` (a pull request's body, its commits' messages) say it closes, in order of first mention, at most MOST_CLOSED. */
export function closingReferences(texts: Array<string | null>): number[] {
  const numbers = new Set<number>();
  for (const text of texts) {
    for (const match of (text ?? '').matchAll(CLOSING)) {
      numbers.add(Number(match[1]));
      if (numbers.size === MOST_CLOSED) return [...numbers];
    }
  }
  return [...numbers];
}

/** Commits whose messages are read for closing keywords, and the bytes of messages kept: what a merge reads stays small. */
const MESSAGE_COMMITS = 250;
const MESSAGE_BYTES = 256 * 1024;

/** The messages of the commits on `head` that `base` lacks, newest first, within the bounds above. */
export async function commitMessages(dir: string, base: string, head: string): Promise<string[]> {
  const { stdout } = await tryGitHead(
    ['log', '-z', '--format=%B', `--max-count=${MESSAGE_COMMITS}`, `${base}..${head}`, '--'],
    MESSAGE_BYTES,
    {
      cwd: dir,
    },
  );
  return stdout.toString('utf8').split('\0');
}
