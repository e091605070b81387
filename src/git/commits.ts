import { GitCommandError, runGit } from './run-git.js';

/** A commit as push payloads describe it (`commits[]`). */
export interface PushCommit {
  id: string;
  message: string;
  timestamp: string;
  author: { name: string; email: string };
  committer: { name: string; email: string };
  added: string[];
  modified: string[];
  removed: string[];
}

/** Most commits one push event lists (GitHub's limit); `total_commits` still counts all. */
export const MAX_PUSH_COMMITS = 2048;

/**
 * Peels each object to the commit it names (a tag to its commit, a commit to
 * itself) with one `cat-file --batch-check`; null when it is not a commit-ish
 * (a tag of a tree or blob) or missing.
 */
export async function peelToCommits(dir: string, shas: string[]): Promise<Map<string, string | null>> {
  const unique = [...new Set(shas)];
  const peeled = new Map<string, string | null>();
  if (!unique.length) return peeled;
  const { stdout } = await runGit(['cat-file', '--batch-check=%(objectname) %(objecttype)'], {
    cwd: dir,
    input: unique.map((sha) => `${sha}^{commit}\n`).join(''),
  });
  const lines = stdout.split('\n');
  unique.forEach((sha, i) => {
    const match = /^([0-9a-f]{40}) commit$/.exec(lines[i] ?? '');
    peeled.set(sha, match ? match[1]! : null);
  });
  return peeled;
}

/**
 * The commits reachable from `tip` and from none of `exclude` — the commits a
 * push makes new to the repository. Returns how many there are and the newest
 * `limit` of them, oldest first (topological order, so parents come first).
 * The list is bounded; only when it is full does a second `rev-list` count
 * the rest, so an initial push of a large history is counted, not held in
 * memory, and the usual push costs one git process.
 */
export async function newCommits(dir: string, tip: string, exclude: Iterable<string>, limit = MAX_PUSH_COMMITS) {
  const input = [tip, ...[...exclude].map((sha) => `^${sha}`)].join('\n') + '\n';
  const listed = await runGit(['rev-list', '--ignore-missing', '--topo-order', '--reverse', `--max-count=${limit}`, '--stdin'], {
    cwd: dir,
    input,
  });
  const shas = listed.stdout.split('\n').filter(Boolean);
  if (shas.length < limit) return { total: shas.length, shas };
  const count = await runGit(['rev-list', '--ignore-missing', '--count', '--stdin'], { cwd: dir, input });
  return { total: Number(count.stdout.trim()), shas };
}

/** Whether any commit is reachable from `tips` and from none of `exclude`, with one git process. */
export async function hasNewCommits(dir: string, tips: Iterable<string>, exclude: Iterable<string>): Promise<boolean> {
  const input = [...tips, ...[...exclude].map((sha) => `^${sha}`)].join('\n') + '\n';
  const { stdout } = await runGit(['rev-list', '--ignore-missing', '--max-count=1', '--stdin'], { cwd: dir, input });
  return stdout.trim() !== '';
}

/** Whether `ancestor` is reachable from `descendant` (a fast-forward from one to the other). */
export async function isAncestor(dir: string, ancestor: string, descendant: string): Promise<boolean> {
  try {
    await runGit(['merge-base', '--is-ancestor', ancestor, descendant], { cwd: dir });
    return true;
  } catch (error) {
    if (error instanceof GitCommandError && error.code === 1) return false;
    throw error;
  }
}

/**
 * Describes commits for payloads with two git processes whatever their
 * number: `log` for the metadata, `diff-tree --stdin` for the paths each
 * commit added, modified and removed against its first parent (a root
 * commit against the empty tree; renames detected and reported as removed
 * old path + added new path, as GitHub does).
 */
export async function describeCommits(dir: string, shas: string[]): Promise<Map<string, PushCommit>> {
  const described = new Map<string, PushCommit>();
  const unique = [...new Set(shas)];
  if (!unique.length) return described;

  // Both in parallel. Log: NUL-separated fields, 7 per commit (git cuts messages at NUL, so none
  // contains one). diff-tree: each commit against its first parent, a root against the empty tree.
  const input = unique.join('\n') + '\n';
  const FIELDS = 7;
  const [{ stdout: log }, { stdout: diff }] = await Promise.all([
    runGit(['log', '--no-walk=unsorted', '--stdin', '-z', '--format=%H%x00%an%x00%ae%x00%aI%x00%cn%x00%ce%x00%B'], { cwd: dir, input }),
    runGit(['diff-tree', '--stdin', '--always', '-r', '-z', '--name-status', '-M', '--root', '--diff-merges=first-parent'], {
      cwd: dir,
      input,
    }),
  ]);
  const fields = log.split('\0');
  for (let i = 0; i + FIELDS <= fields.length; i += FIELDS) {
    const [id, authorName, authorEmail, authorDate, committerName, committerEmail, message] = fields.slice(i, i + FIELDS) as string[];
    described.set(id!, {
      id: id!,
      message: message!.replace(/\n+$/, ''),
      timestamp: authorDate!,
      author: { name: authorName!, email: authorEmail! },
      committer: { name: committerName!, email: committerEmail! },
      added: [],
      modified: [],
      removed: [],
    });
  }

  // Tokens: a commit id, then per changed path a status (A, M, D, T, R<score>, ...) and one path, or two for R/C.
  const tokens = diff.split('\0');
  let current: PushCommit | undefined;
  for (let i = 0; i < tokens.length; i++) {
    const token = tokens[i]!;
    if (/^[0-9a-f]{40}$/.test(token)) {
      current = described.get(token);
    } else if (current && /^[A-Z]\d*$/.test(token)) {
      const kind = token[0]!;
      if (kind === 'R' || kind === 'C') {
        const from = tokens[++i]!;
        const to = tokens[++i]!;
        if (kind === 'R') current.removed.push(from);
        current.added.push(to);
      } else {
        const path = tokens[++i]!;
        if (kind === 'A') current.added.push(path);
        else if (kind === 'D') current.removed.push(path);
        else current.modified.push(path);
      }
    }
  }
  return described;
}
