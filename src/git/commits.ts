import { GitCommandError, runGit, runGitHead } from './run-git.js';

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
const MAX_PUSH_COMMITS = 2048;

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

/** Messages in payloads are cut here (a push of a few huge messages must stay recordable). */
const MAX_MESSAGE_CHARS = 64 * 1024;
/** Commit objects read by one `git log`: chunks of at most this many bytes. */
const LOG_CHUNK_BYTES = 16 * 1024 * 1024;
/** A commit larger than this is described from a prefix of its object only. */
const LARGE_COMMIT_BYTES = 1024 * 1024;
/** Commits whose changed paths one `diff-tree` lists, and the output it may keep. */
const DIFF_CHUNK_COMMITS = 256;
const DIFF_CHUNK_BYTES = 32 * 1024 * 1024;

const cut = (message: string) => (message.length > MAX_MESSAGE_CHARS ? `${message.slice(0, MAX_MESSAGE_CHARS)}…` : message);

/**
 * Describes commits for payloads, with a bounded number of git processes and
 * bounded memory whatever the commits hold: `log` for the metadata and
 * messages (chunked by object size; a huge commit's message from a prefix of
 * its object), `diff-tree --stdin` for the paths each commit added, modified
 * and removed against its first parent (a root commit against the empty tree;
 * renames detected and reported as removed old path + added new path, as
 * GitHub does), chunked too, listing what fits of a commit with millions of paths.
 */
export async function describeCommits(dir: string, shas: string[]): Promise<Map<string, PushCommit>> {
  const described = new Map<string, PushCommit>();
  const unique = [...new Set(shas)];
  if (!unique.length) return described;
  const sizes = await objectSizes(dir, unique);
  const regular = unique.filter((sha) => (sizes.get(sha) ?? 0) <= LARGE_COMMIT_BYTES);
  const large = unique.filter((sha) => (sizes.get(sha) ?? 0) > LARGE_COMMIT_BYTES);

  for (const chunk of chunksBySize(regular, sizes, LOG_CHUNK_BYTES)) {
    for (const commit of await logCommits(dir, chunk, '%B')) described.set(commit.id, commit);
  }
  for (const sha of large) {
    const [commit] = await logCommits(dir, [sha], '');
    const { stdout } = await runGitHead(['cat-file', 'commit', sha], MAX_MESSAGE_CHARS * 4 + 64 * 1024, { cwd: dir });
    const text = stdout.toString('utf8');
    const body = text.indexOf('\n\n');
    if (commit) described.set(sha, { ...commit, message: cut(body < 0 ? '' : text.slice(body + 2).replace(/\n+$/, '')) });
  }
  for (let start = 0; start < unique.length; start += DIFF_CHUNK_COMMITS) {
    await addChangedPaths(dir, unique.slice(start, start + DIFF_CHUNK_COMMITS), described);
  }
  return described;
}

async function objectSizes(dir: string, shas: string[]): Promise<Map<string, number>> {
  const { stdout } = await runGit(['cat-file', '--batch-check=%(objectname) %(objectsize)'], { cwd: dir, input: shas.join('\n') + '\n' });
  const sizes = new Map<string, number>();
  for (const line of stdout.split('\n')) {
    const [sha, size] = line.split(' ');
    if (sha && size) sizes.set(sha, Number(size));
  }
  return sizes;
}

function chunksBySize(shas: string[], sizes: Map<string, number>, limit: number): string[][] {
  const chunks: string[][] = [];
  let current: string[] = [];
  let total = 0;
  for (const sha of shas) {
    const size = sizes.get(sha) ?? 0;
    if (current.length && total + size > limit) {
      chunks.push(current);
      current = [];
      total = 0;
    }
    current.push(sha);
    total += size;
  }
  if (current.length) chunks.push(current);
  return chunks;
}

/** Metadata (and with `body` = `%B`, messages) of commits, with one `git log --no-walk`. */
async function logCommits(dir: string, shas: string[], body: '%B' | ''): Promise<PushCommit[]> {
  const FIELDS = 7;
  const { stdout } = await runGit(
    ['log', '--no-walk=unsorted', '--stdin', '-z', `--format=%H%x00%an%x00%ae%x00%aI%x00%cn%x00%ce%x00${body}`],
    {
      cwd: dir,
      input: shas.join('\n') + '\n',
    },
  );
  // NUL-separated fields, 7 per commit (git cuts messages at NUL, so none contains one).
  const fields = stdout.split('\0');
  const commits: PushCommit[] = [];
  for (let i = 0; i + FIELDS <= fields.length; i += FIELDS) {
    const [id, authorName, authorEmail, authorDate, committerName, committerEmail, message] = fields.slice(i, i + FIELDS) as string[];
    commits.push({
      id: id!,
      message: cut(message!.replace(/\n+$/, '')),
      timestamp: authorDate!,
      author: { name: authorName!, email: authorEmail! },
      committer: { name: committerName!, email: committerEmail! },
      added: [],
      modified: [],
      removed: [],
    });
  }
  return commits;
}

/**
 * The paths each commit changed, from `diff-tree --stdin`. Output past the chunk's limit stops git:
 * the commits it did not reach are listed one by one, and one that alone overflows lists what fit.
 */
async function addChangedPaths(dir: string, shas: string[], described: Map<string, PushCommit>): Promise<void> {
  const args = ['diff-tree', '--stdin', '--always', '-r', '-z', '--name-status', '-M', '--root', '--diff-merges=first-parent'];
  const { stdout, truncated } = await runGitHead(args, DIFF_CHUNK_BYTES, { cwd: dir, input: shas.join('\n') + '\n' });
  const seen = parseChangedPaths(stdout.toString('utf8'), truncated, described);
  if (!truncated) return;
  const complete = new Set(seen.slice(0, -1)); // the last one seen may have been cut short
  for (const sha of shas.filter((sha) => !complete.has(sha))) {
    const commit = described.get(sha);
    if (commit) Object.assign(commit, { added: [], modified: [], removed: [] });
    const one = await runGitHead(args, DIFF_CHUNK_BYTES, { cwd: dir, input: `${sha}\n` });
    parseChangedPaths(one.stdout.toString('utf8'), one.truncated, described);
  }
}

/** Tokens: a commit id, then per changed path a status (A, M, D, T, R<score>, ...) and one path, or two for R/C. Returns the ids seen. */
function parseChangedPaths(output: string, truncated: boolean, described: Map<string, PushCommit>): string[] {
  const tokens = output.split('\0');
  if (truncated) tokens.pop(); // the last token may be cut short
  const seen: string[] = [];
  let current: PushCommit | undefined;
  for (let i = 0; i < tokens.length; i++) {
    const token = tokens[i]!;
    if (/^[0-9a-f]{40}$/.test(token)) {
      current = described.get(token);
      seen.push(token);
    } else if (current && /^[A-Z]\d*$/.test(token)) {
      const kind = token[0]!;
      if (kind === 'R' || kind === 'C') {
        const from = tokens[++i];
        const to = tokens[++i];
        if (from === undefined || to === undefined) break;
        if (kind === 'R') current.removed.push(from);
        current.added.push(to);
      } else {
        const path = tokens[++i];
        if (path === undefined) break;
        if (kind === 'A') current.added.push(path);
        else if (kind === 'D') current.removed.push(path);
        else current.modified.push(path);
      }
    }
  }
  return seen;
}
