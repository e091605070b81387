import { registerEnumType } from 'type-graphql';
import { describeCommits } from '../git/commits.js';
import { runGit, runGitRaw } from '../git/run-git.js';
import type { Signature } from '../git/storage.js';
import { mergeTree } from './pull-request.git.js';

export enum MergeMethod {
  MERGE = 'merge',
  SQUASH = 'squash',
  REBASE = 'rebase',
}
registerEnumType(MergeMethod, {
  name: 'MergeMethod',
  valuesConfig: {
    MERGE: { description: 'A merge commit with two parents: base, then head.' },
    SQUASH: { description: "One commit with head's changes, authored by the pull request's author." },
    REBASE: { description: 'Each commit replayed onto base, keeping its author and author date.' },
  },
});

/** What a merge needs to know; `base` and `head` are the exact commits it merges. */
export interface MergeRequest {
  method: MergeMethod;
  base: string;
  head: string;
  number: number;
  title: string;
  headRef: string;
  commitTitle?: string | null;
  commitMessage?: string | null;
  /** The pull request's author (the author of a squash commit), as Cairn writes users: login and commit email. */
  author: Signature;
  /**
   * Every address that is the author's own (account, public commit and no-reply), only compared:
   * the author's own commits add no Co-authored-by trailer for them to a squash, whichever address they used.
   */
  authorAddresses: string[];
  /** Who merges, as Cairn writes users: the committer of every new commit, and the author of a merge commit. */
  merger: Signature;
}

/** The merge cannot be made: the branches conflict (or, for rebase, a commit does not replay). */
export class NotMergeable extends Error {}

/**
 * Makes the commit(s) of a merge with git plumbing only: `merge-tree
 * --write-tree` for the trees, `hash-object -t commit` for the commits. No working
 * tree or index of the repository is touched, and nothing points at the new
 * objects until the ref transaction swaps the base branch to the returned
 * sha (unused ones are pruned by gc). Returns the new tip of base.
 */
export async function buildMerge(dir: string, request: MergeRequest): Promise<string> {
  switch (request.method) {
    case MergeMethod.MERGE:
      return mergeCommit(dir, request);
    case MergeMethod.SQUASH:
      return squashCommit(dir, request);
    case MergeMethod.REBASE:
      return rebaseCommits(dir, request);
  }
}

async function mergedTree(dir: string, base: string, head: string): Promise<string> {
  const merged = await mergeTree(dir, base, head);
  if (!merged.tree) {
    throw new NotMergeable(
      merged.conflicts.length ? `the branches conflict in ${merged.conflicts.join(', ')}` : 'the branches share no history',
    );
  }
  return merged.tree;
}

/** `<title>\n\n<body>\n`: a body that is empty or absent leaves the title alone. */
function message(title: string, body: string | null | undefined): string {
  return body && body.trim() ? `${title}\n\n${body.replace(/\n+$/, '')}\n` : `${title}\n`;
}

async function mergeCommit(dir: string, request: MergeRequest): Promise<string> {
  const tree = await mergedTree(dir, request.base, request.head);
  const title = request.commitTitle ?? `Merge pull request #${request.number} from ${request.headRef}`;
  const merger = identity(request.merger, now());
  return writeCommit(dir, {
    tree,
    parents: [request.base, request.head],
    author: merger,
    committer: merger,
    message: message(title, request.commitMessage ?? request.title),
  });
}

async function squashCommit(dir: string, request: MergeRequest): Promise<string> {
  const tree = await mergedTree(dir, request.base, request.head);
  const commits = request.commitMessage == null ? await squashedMessages(dir, request.base, request.head) : null;
  const title = request.commitTitle ?? `${request.title} (#${request.number})`;
  const time = now();
  return writeCommit(dir, {
    tree,
    parents: [request.base],
    author: identity(request.author, time),
    committer: identity(request.merger, time),
    message: message(title, request.commitMessage ?? squashBody(request, commits!)),
  });
}

/** How many commits of head base lacks. */
async function commitCount(dir: string, base: string, head: string): Promise<number> {
  return Number((await runGit(['rev-list', '--count', head, `^${base}`], { cwd: dir })).stdout.trim());
}

/** Commits a squash message lists at most, oldest first; the rest are counted in a last line. */
const MAX_SQUASH_LISTED = 1000;

interface SquashedCommits {
  listed: Array<{ author: Signature; message: string }>;
  unlisted: number;
}

/**
 * The messages a squash lists: of the first MAX_SQUASH_LISTED commits, as push events describe them
 * (describeCommits: each cut at 64 KiB, and past 4 MiB in all at 1 KiB), so that commits of huge
 * messages make a long squash message, not one the service cannot hold.
 */
async function squashedMessages(dir: string, base: string, head: string): Promise<SquashedCommits> {
  const range = [head, `^${base}`];
  const total = await commitCount(dir, base, head);
  const skip = Math.max(0, total - MAX_SQUASH_LISTED); // newest first before --reverse: skipping the newest keeps the oldest
  const listing = await runGit(['rev-list', '--reverse', '--topo-order', `--skip=${skip}`, ...range], { cwd: dir });
  const shas = listing.stdout.split('\n').filter(Boolean);
  const described = await describeCommits(dir, shas, { paths: false });
  const listed = shas.flatMap((sha) => {
    const commit = described.get(sha);
    return commit ? [{ author: commit.author, message: commit.message }] : [];
  });
  return { listed, unlisted: total - listed.length };
}

/** A `Co-authored-by:` line of a commit message (git's trailer key is case-insensitive). */
const CO_AUTHORED_BY = /^co-authored-by:[ \t]*(\S.*?)[ \t]*$/gim;

/**
 * The default rest of a squash message: every commit's message, then everyone else who wrote one,
 * once each, as GitHub does — the commits' authors and the `Co-authored-by:` trailers their messages
 * carried, gathered into one trailer block at the end, where git reads trailers (left in a
 * commit's bullet, in the middle of the message, git would not see them).
 */
function squashBody(request: MergeRequest, commits: SquashedCommits): string {
  const own = new Set([request.author.email, ...request.authorAddresses].map((address) => address.toLowerCase()));
  const coAuthors = new Map<string, string>();
  const credit = (who: string, email: string) => {
    const key = email.toLowerCase();
    if (!own.has(key) && !coAuthors.has(key)) coAuthors.set(key, `Co-authored-by: ${who}`);
  };
  const bullets = commits.listed.map(({ author, message: text }) => {
    // As git recorded them: these addresses were pushed by the people who wrote the commits.
    credit(`${author.name} <${author.email}>`, author.email);
    for (const [, who] of text.matchAll(CO_AUTHORED_BY)) credit(who!, /<([^>]*)>/.exec(who!)?.[1] ?? who!);
    const rest = text
      .replace(CO_AUTHORED_BY, '')
      .replace(/\n{3,}/g, '\n\n')
      .trim();
    return `* ${rest}`;
  });
  if (commits.unlisted > 0) bullets.push(`* … and ${commits.unlisted} more commit${commits.unlisted === 1 ? '' : 's'}`);
  return [bullets.join('\n\n'), [...coAuthors.values()].join('\n')].filter(Boolean).join('\n\n');
}

/** Whether a commit changes nothing against its first parent. */
async function wasEmpty(dir: string, commit: ReplayedCommit): Promise<boolean> {
  const parentTree = (await runGit(['rev-parse', '--verify', `${commit.parents[0]}^{tree}`], { cwd: dir })).stdout.trim();
  return parentTree === commit.tree;
}

/** Commits a rebase merge replays at most (each costs a few git processes): longer pull requests merge or squash. */
const MAX_REBASE_COMMITS = 250;

/**
 * Replays each commit of head onto base, oldest first, as `git rebase` would:
 * the same author line (name, email and date, byte for byte) and message, the
 * merger as committer. A commit whose parent is the current tip keeps its
 * tree; any other is cherry-picked by `merge-tree` against a stand-in commit —
 * the current tip's tree with the original parent as its only parent — so the
 * merge base is exactly that parent (git 2.39's merge-tree has no
 * `--merge-base`). Merge commits cannot be replayed this way: such a pull
 * request is merged with another method.
 */
async function rebaseCommits(dir: string, request: MergeRequest): Promise<string> {
  const commits = await commitsToReplay(dir, request.base, request.head, MAX_REBASE_COMMITS + 1);
  if (commits.length > MAX_REBASE_COMMITS) {
    const total = await commitCount(dir, request.base, request.head);
    throw new NotMergeable(`rebase replays at most ${MAX_REBASE_COMMITS} commits and this pull request has ${total}: merge or squash it`);
  }
  if (commits.some((commit) => commit.parents.length === 0)) {
    throw new NotMergeable('the pull request shares no history with the base branch');
  }
  if (commits.some((commit) => commit.parents.length > 1)) {
    throw new NotMergeable('the pull request contains merge commits, which rebase cannot replay: merge or squash it');
  }
  const committer = identity(request.merger, now());
  let tip = request.base;
  let tipTree = (await runGit(['rev-parse', '--verify', `${tip}^{tree}`], { cwd: dir })).stdout.trim();
  for (const commit of commits) {
    let tree = commit.tree;
    if (commit.parents[0] !== tip) {
      const standIn = await writeCommit(dir, {
        tree: tipTree,
        parents: [commit.parents[0]!],
        author: STAND_IN,
        committer: STAND_IN,
        message: 'rebase stand-in',
      });
      const merged = await mergeTree(dir, standIn, commit.sha);
      if (!merged.tree) throw new NotMergeable(`commit ${commit.sha.slice(0, 12)} does not apply onto the base branch`);
      tree = merged.tree;
      // Its change is already in base (cherry-picked there, say): git rebase drops it, and so does this.
      // A commit that was empty to begin with is kept, as git rebase keeps it.
      if (tree === tipTree && !(await wasEmpty(dir, commit))) continue;
    }
    tip = await writeCommit(dir, { tree, parents: [tip], author: commit.author, committer, ...(await messageOf(dir, commit.sha)) });
    tipTree = tree;
  }
  if (tip === request.base) throw new NotMergeable('every commit of the pull request is already in the base branch: close it');
  return tip;
}

/** A fixed identity for stand-in commits, so the same stand-in is the same object every time. */
const STAND_IN = 'Cairn <cairn@localhost> 0 +0000';

interface ReplayedCommit {
  sha: string;
  tree: string;
  parents: string[];
  /** The author line as the commit has it: `Name <email> <seconds> <zone>`. */
  author: string;
}

/**
 * The commits of head that base lacks, oldest first, with what replaying them needs but their
 * messages (read one at a time as each is replayed: messageOf); at most `limit`, the newest.
 */
async function commitsToReplay(dir: string, base: string, head: string, limit: number): Promise<ReplayedCommit[]> {
  const FIELDS = 6;
  const { stdout } = await runGit(
    [
      'log',
      '--reverse',
      '--topo-order',
      `--max-count=${limit}`,
      '-z',
      '--date=raw',
      '--format=%H%x00%T%x00%P%x00%an%x00%ae%x00%ad',
      head,
      `^${base}`,
    ],
    { cwd: dir },
  );
  const fields = stdout.split('\0');
  const commits: ReplayedCommit[] = [];
  for (let i = 0; i + FIELDS <= fields.length; i += FIELDS) {
    const [sha, tree, parents, name, email, date] = fields.slice(i, i + FIELDS) as string[];
    commits.push({
      sha: sha!,
      tree: tree!,
      parents: parents ? parents.split(' ') : [],
      author: `${name!} <${email!}> ${date!}`,
    });
  }
  return commits;
}

/**
 * A commit's message as its bytes, with its `encoding` header if it has one: replayed byte for byte
 * (in whatever encoding it was written), and held outside the JavaScript heap however long it is.
 */
async function messageOf(dir: string, sha: string): Promise<{ message: Buffer; encoding: string | null }> {
  const { stdout } = await runGitRaw(['cat-file', 'commit', sha], { cwd: dir });
  const end = stdout.indexOf('\n\n');
  const headers = stdout.toString('utf8', 0, end < 0 ? stdout.length : end);
  return { message: end < 0 ? Buffer.alloc(0) : stdout.subarray(end + 2), encoding: /^encoding (.+)$/m.exec(headers)?.[1] ?? null };
}

/** Seconds and zone, as a commit records a time. */
const now = () => `${Math.floor(Date.now() / 1000)} +0000`;

/** An identity line for a Cairn user: `Name <email> <time>`, without what a commit header cannot hold. */
function identity(who: Signature, time: string): string {
  const clean = (text: string) => text.replace(/[<>\n\0]/g, '').trim();
  return `${clean(who.name)} <${clean(who.email)}> ${time}`;
}

/**
 * Writes a commit object as given (`git hash-object -t commit`, which checks
 * its format as fsck does): unlike `commit-tree`, it keeps an author line
 * exactly as the replayed commit had it — git accepts names on push that it
 * would refuse or trim when making a commit from an environment.
 */
async function writeCommit(
  dir: string,
  commit: { tree: string; parents: string[]; author: string; committer: string; message: string | Buffer; encoding?: string | null },
): Promise<string> {
  const header = [
    `tree ${commit.tree}`,
    ...commit.parents.map((parent) => `parent ${parent}`),
    `author ${commit.author}`,
    `committer ${commit.committer}`,
    ...(commit.encoding ? [`encoding ${commit.encoding}`] : []),
    '',
    '',
  ].join('\n');
  const message = Buffer.isBuffer(commit.message) ? commit.message : Buffer.from(commit.message);
  let end = message.length;
  while (end > 0 && message[end - 1] === 0x0a) end--; // one line break at the end, however many it had
  const input = Buffer.concat([Buffer.from(header), message.subarray(0, end), Buffer.from('\n')]);
  return (await runGit(['hash-object', '-t', 'commit', '-w', '--stdin'], { cwd: dir, input })).stdout.trim();
}
