import { jsonBytes } from './json-bytes.js';
import { objectSizes } from './object-sizes.js';
import { nulFields, ownCopy } from './own-strings.js';
import { GitCommandError, runGit, runGitHead, runGitRaw, tryGitHead } from './run-git.js';

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
  /** More paths changed than `added`, `modified` and `removed` list (MAX_PATHS_PER_COMMIT, the push's budget, git's bounds). */
  paths_truncated: boolean;
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
/** Names and emails in payloads are cut here: git sets no bound, and a description holds them for every commit. */
const MAX_IDENTITY_CHARS = 256;
/** Paths listed per commit (added, modified and removed together); past it `paths_truncated`. */
const MAX_PATHS_PER_COMMIT = 3000;
/**
 * What the descriptions of one push may hold in all, whatever is pushed: message text kept whole (up
 * to MAX_MESSAGE_CHARS each), and path text listed, in the order the commits are asked for, both
 * counted as the bytes they take in a payload's JSON (a control character takes six). Past the
 * first, a message is cut at BRIEF_MESSAGE_CHARS; past the second, commits list no paths.
 */
const MESSAGE_BUDGET_BYTES = 4 * 1024 * 1024;
const PATH_BUDGET_BYTES = 4 * 1024 * 1024;
const BRIEF_MESSAGE_CHARS = 1024;
/** Commit objects read by one `git log`: chunks of at most this many bytes. */
const LOG_CHUNK_BYTES = 16 * 1024 * 1024;
/** A commit larger than this is described from a prefix of its object only. */
const LARGE_COMMIT_BYTES = 1024 * 1024;
/** Commits whose changed paths one `diff-tree` lists, and the output it may keep. */
const DIFF_CHUNK_COMMITS = 256;
const DIFF_CHUNK_BYTES = 8 * 1024 * 1024;

/**
 * `message` kept to `chars` (one fewer rather than half a surrogate pair), in a string of its own: a
 * description outlives the output it was read from (own-strings.ts).
 */
function cut(message: string, chars: number): string {
  if (message.length <= chars) return ownCopy(message);
  const highSurrogate = /[\uD800-\uDBFF]/.test(message[chars - 1] ?? '');
  return ownCopy(`${message.slice(0, highSurrogate ? chars - 1 : chars)}…`);
}

/** A message as a description past its budgets holds it: its first BRIEF_MESSAGE_CHARS. */
export const briefMessage = (message: string) => cut(message, BRIEF_MESSAGE_CHARS);

/**
 * Describes commits for payloads, with a bounded number of git processes and bounded memory
 * whatever the commits hold: `log` for the metadata and messages (chunked by object size; a huge
 * commit's message from a prefix of its object), `diff-tree --stdin` for the paths each commit
 * added, modified and removed against its first parent (a root commit against the empty tree), at
 * most MAX_PATHS_PER_COMMIT each, chunked too. `shas` come in order of importance: the budgets
 * (MESSAGE_BUDGET_BYTES, PATH_BUDGET_BYTES) go to the first.
 *
 * Paths are listed without rename detection: a rename is listed as the old path removed and the new
 * one added, as GitHub lists it, which is what `diff-tree` says without `-M` — and rename detection
 * would hold every change of a commit in memory before writing any. A commit whose paths git cannot
 * list within its bounds (git-bounds.ts: a tree of billions of paths) lists none, `paths_truncated`;
 * without `paths`, none does.
 */
export async function describeCommits(dir: string, shas: string[], { paths = true } = {}): Promise<Map<string, PushCommit>> {
  const described = new Map<string, PushCommit>();
  const unique = [...new Set(shas)];
  if (!unique.length) return described;
  const sizes = await objectSizes(dir, unique);
  const allowance = messageAllowances(unique, sizes);
  const regular = unique.filter((sha) => (sizes.get(sha) ?? 0) <= LARGE_COMMIT_BYTES);
  const large = unique.filter((sha) => (sizes.get(sha) ?? 0) > LARGE_COMMIT_BYTES);

  for (const chunk of chunksBySize(regular, sizes, LOG_CHUNK_BYTES)) {
    for (const commit of await logCommits(dir, chunk, '%B')) {
      described.set(commit.id, { ...commit, message: cut(commit.message, allowance.get(commit.id)!) });
    }
  }
  for (const sha of large) {
    const [commit] = await logCommits(dir, [sha], '');
    const head = await runGitHead(['cat-file', 'commit', sha], MAX_MESSAGE_CHARS * 4 + 64 * 1024, { cwd: dir });
    const text = head.stdout.toString('utf8');
    const body = text.indexOf('\n\n');
    if (commit)
      described.set(sha, { ...commit, message: cut(body < 0 ? '' : text.slice(body + 2).replace(/\n+$/, ''), allowance.get(sha)!) });
  }
  keepMessagesWithinBudget(unique, described);
  const found = unique.filter((sha) => described.has(sha));
  if (paths) await addChangedPaths(dir, found, described);
  else for (const sha of found) described.get(sha)!.paths_truncated = true;
  return described;
}

/**
 * Messages kept whole while MESSAGE_BUDGET_BYTES lasts, counted as payload bytes, in the order of
 * importance; the rest brief. `messageAllowances` decided what to read from git by object sizes
 * before any message was read; this holds the budget to what the messages take in JSON.
 */
function keepMessagesWithinBudget(shas: string[], described: Map<string, PushCommit>): void {
  let budget = MESSAGE_BUDGET_BYTES;
  for (const sha of shas) {
    const commit = described.get(sha);
    if (!commit) continue;
    if (budget <= 0) commit.message = briefMessage(commit.message);
    else budget -= jsonBytes(commit.message);
  }
}

/** How much of each message is read: whole (up to MAX_MESSAGE_CHARS) while the budget lasts, then brief. */
function messageAllowances(shas: string[], sizes: Map<string, number>): Map<string, number> {
  let budget = MESSAGE_BUDGET_BYTES;
  return new Map(
    shas.map((sha) => {
      const chars = budget > 0 ? MAX_MESSAGE_CHARS : BRIEF_MESSAGE_CHARS;
      budget -= Math.min(sizes.get(sha) ?? 0, chars);
      return [sha, chars];
    }),
  );
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

/** A name or email as a description holds it. Fields are their own strings already (nulFields): only one cut short needs a copy. */
const identity = (text: string) => (text.length > MAX_IDENTITY_CHARS ? cut(text, MAX_IDENTITY_CHARS) : text);

/** Metadata (and with `body` = `%B`, messages) of commits, with one `git log --no-walk`. */
async function logCommits(dir: string, shas: string[], body: '%B' | ''): Promise<PushCommit[]> {
  const FIELDS = 7;
  const { stdout } = await runGitRaw(
    ['log', '--no-walk=unsorted', '--stdin', '-z', `--format=%H%x00%an%x00%ae%x00%aI%x00%cn%x00%ce%x00${body}`],
    {
      cwd: dir,
      input: shas.join('\n') + '\n',
    },
  );
  // NUL-separated fields, 7 per commit (git cuts messages at NUL, so none contains one).
  const fields = nulFields(stdout);
  const commits: PushCommit[] = [];
  for (let i = 0; i + FIELDS <= fields.length; i += FIELDS) {
    const [id, authorName, authorEmail, authorDate, committerName, committerEmail, message] = fields.slice(i, i + FIELDS) as string[];
    commits.push({
      id: id!,
      message: message!.replace(/\n+$/, ''),
      timestamp: authorDate!,
      author: { name: identity(authorName!), email: identity(authorEmail!) },
      committer: { name: identity(committerName!), email: identity(committerEmail!) },
      added: [],
      modified: [],
      removed: [],
      paths_truncated: false,
    });
  }
  return commits;
}

const DIFF_TREE = ['diff-tree', '--stdin', '--always', '-r', '-z', '--name-status', '--no-renames', '--root', '--diff-merges=first-parent'];

/** Where the listing of a push's paths stands: the budget left, and whether git met a bound on one commit alone. */
interface PathListing {
  bytes: number;
  stopped: boolean;
}

/**
 * The paths each commit changed, from `diff-tree --stdin`, a chunk of commits per process, while
 * the path budget lasts (the commits after it list none, `paths_truncated`). A chunk that stops
 * short — its output past DIFF_CHUNK_BYTES, or git past a bound — has the commits it did not finish
 * listed one by one; a commit that alone stops short keeps what was listed of it, `paths_truncated`.
 * Once one commit alone has taken git to a bound (seconds, and a GiB), no more paths are listed for
 * the push: a push of thousands of such commits costs two runs to a bound, not thousands.
 */
async function addChangedPaths(dir: string, shas: string[], described: Map<string, PushCommit>): Promise<void> {
  const listing: PathListing = { bytes: PATH_BUDGET_BYTES, stopped: false };
  const unlisted = (sha: string) => (described.get(sha)!.paths_truncated = true);
  for (let start = 0; start < shas.length; start += DIFF_CHUNK_COMMITS) {
    const chunk = shas.slice(start, start + DIFF_CHUNK_COMMITS);
    if (listing.bytes <= 0 || listing.stopped) {
      chunk.forEach(unlisted);
      continue;
    }
    const { complete, exceeded } = await listChangedPaths(dir, chunk, described, listing);
    const rest = chunk.filter((sha) => !complete.has(sha));
    if (chunk.length === 1) {
      rest.forEach(unlisted); // alone, it stops short the same way again
      if (exceeded) listing.stopped = true;
      continue;
    }
    for (const sha of rest) {
      if (listing.bytes <= 0 || listing.stopped) {
        unlisted(sha);
        continue;
      }
      const commit = described.get(sha)!;
      listing.bytes += [...commit.added, ...commit.modified, ...commit.removed].reduce((sum, path) => sum + Buffer.byteLength(path), 0);
      Object.assign(commit, { added: [], modified: [], removed: [], paths_truncated: false });
      const alone = await listChangedPaths(dir, [sha], described, listing);
      if (!alone.complete.has(sha)) unlisted(sha);
      if (alone.exceeded) listing.stopped = true;
    }
  }
}

/** One `diff-tree` over `shas`: the commits whose paths it listed to the end, and whether git met a bound. */
async function listChangedPaths(
  dir: string,
  shas: string[],
  described: Map<string, PushCommit>,
  listing: PathListing,
): Promise<{ complete: Set<string>; exceeded: boolean }> {
  const { stdout, truncated, exceeded } = await tryGitHead(DIFF_TREE, DIFF_CHUNK_BYTES, { cwd: dir, input: shas.join('\n') + '\n' });
  const seen = parseChangedPaths(stdout, truncated || exceeded !== null, described, listing);
  // Whole output: every commit was listed. Cut short: all but the last commit seen (it may have more).
  return { complete: new Set(truncated || exceeded ? seen.slice(0, -1) : seen), exceeded: exceeded !== null };
}

/**
 * Tokens: a commit id, then per changed path a status (A, M, D, T, ...) and the path. Paths past a
 * commit's MAX_PATHS_PER_COMMIT, or past the budget, are skipped and the commit marked
 * `paths_truncated`. Returns the ids seen, in order.
 */
function parseChangedPaths(output: Buffer, cutShort: boolean, described: Map<string, PushCommit>, budget: PathListing): string[] {
  const tokens = nulFields(output); // paths kept are of their own, not views of the whole output
  if (cutShort) tokens.pop(); // the last token may be cut short
  const seen: string[] = [];
  let current: PushCommit | undefined;
  let listed = 0;
  for (let i = 0; i < tokens.length; i++) {
    const token = tokens[i]!;
    if (/^[0-9a-f]{40}$/.test(token)) {
      current = described.get(token);
      listed = 0;
      seen.push(token);
    } else if (current && /^[A-Z]\d*$/.test(token)) {
      const path = tokens[++i];
      if (path === undefined) break;
      if (listed >= MAX_PATHS_PER_COMMIT || budget.bytes <= 0) {
        current.paths_truncated = true;
        continue;
      }
      listed++;
      budget.bytes -= jsonBytes(path);
      if (token === 'A') current.added.push(path);
      else if (token === 'D') current.removed.push(path);
      else current.modified.push(path);
    }
  }
  return seen;
}
