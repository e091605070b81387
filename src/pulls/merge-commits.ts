import { registerEnumType } from 'type-graphql';
import { runGit } from '../git/run-git.js';
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
  /** The pull request's author (the author of a squash commit). */
  author: Signature;
  /** Who merges: the committer of every new commit, and the author of a merge commit. */
  merger: Signature;
}

/** The merge cannot be made: the branches conflict (or, for rebase, a commit does not replay). */
export class NotMergeable extends Error {}

/**
 * Makes the commit(s) of a merge with git plumbing only: `merge-tree
 * --write-tree` for the trees, `commit-tree` for the commits. No working
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
  return commitTree(dir, tree, [request.base, request.head], message(title, request.commitMessage ?? request.title), {
    author: request.merger,
    committer: request.merger,
  });
}

async function squashCommit(dir: string, request: MergeRequest): Promise<string> {
  const tree = await mergedTree(dir, request.base, request.head);
  const commits = await commitsToReplay(dir, request.base, request.head);
  const title = request.commitTitle ?? `${request.title} (#${request.number})`;
  return commitTree(dir, tree, [request.base], message(title, request.commitMessage ?? squashBody(request, commits)), {
    author: request.author,
    committer: request.merger,
  });
}

/** The default rest of a squash message: every commit's message, then everyone else who wrote one, once each, as GitHub does. */
function squashBody(request: MergeRequest, commits: ReplayedCommit[]): string {
  const own = request.author.email.toLowerCase();
  const coAuthors = new Map<string, string>();
  for (const { author } of commits) {
    const key = author.email.toLowerCase();
    if (key !== own && !coAuthors.has(key)) coAuthors.set(key, `Co-authored-by: ${author.name} <${author.email}>`);
  }
  const list = commits.map((commit) => `* ${commit.message}`).join('\n\n');
  return [list, [...coAuthors.values()].join('\n')].filter(Boolean).join('\n\n');
}

/**
 * Replays each commit of head onto base, oldest first, as `git rebase` would:
 * the same author, author date and message, the merger as committer. A commit
 * whose parent is the current tip keeps its tree; any other is cherry-picked
 * by `merge-tree` against a stand-in commit — the current tip's tree with the
 * original parent as its only parent — so the merge base is exactly that
 * parent (git 2.39's merge-tree has no `--merge-base`). Merge commits cannot
 * be replayed this way: such a pull request is merged with another method.
 */
async function rebaseCommits(dir: string, request: MergeRequest): Promise<string> {
  const commits = await commitsToReplay(dir, request.base, request.head);
  if (commits.some((commit) => commit.parents.length !== 1)) {
    throw new NotMergeable('the pull request contains merge commits, which rebase cannot replay: merge or squash it');
  }
  let tip = request.base;
  let tipTree = (await runGit(['rev-parse', '--verify', `${tip}^{tree}`], { cwd: dir })).stdout.trim();
  for (const commit of commits) {
    let tree = commit.tree;
    if (commit.parents[0] !== tip) {
      const standIn = await commitTree(dir, tipTree, [commit.parents[0]!], 'rebase stand-in\n', { author: STAND_IN, committer: STAND_IN });
      const merged = await mergeTree(dir, standIn, commit.sha);
      if (!merged.tree) throw new NotMergeable(`commit ${commit.sha.slice(0, 12)} does not apply onto the base branch`);
      tree = merged.tree;
    }
    tip = await commitTree(dir, tree, [tip], `${commit.message}\n`, { author: commit.author, committer: request.merger });
    tipTree = tree;
  }
  return tip;
}

/**
 * A fixed signature for stand-in commits, so the same stand-in is the same object every time. Raw
 * dates are written `@<seconds> <zone>`: without the `@`, git reads a small number as something else.
 */
const STAND_IN: Signature & { date: string } = { name: 'Cairn', email: 'cairn@localhost', date: '@0 +0000' };

interface ReplayedCommit {
  sha: string;
  tree: string;
  parents: string[];
  author: Signature & { date: string };
  message: string;
}

/** The commits of head that base lacks, oldest first, with what replaying them needs. */
async function commitsToReplay(dir: string, base: string, head: string): Promise<ReplayedCommit[]> {
  const FIELDS = 7;
  const { stdout } = await runGit(
    ['log', '--reverse', '--topo-order', '-z', '--date=raw', '--format=%H%x00%T%x00%P%x00%an%x00%ae%x00%ad%x00%B', head, `^${base}`],
    { cwd: dir },
  );
  const fields = stdout.split('\0');
  const commits: ReplayedCommit[] = [];
  for (let i = 0; i + FIELDS <= fields.length; i += FIELDS) {
    const [sha, tree, parents, name, email, date, body] = fields.slice(i, i + FIELDS) as string[];
    commits.push({
      sha: sha!,
      tree: tree!,
      parents: parents ? parents.split(' ') : [],
      author: { name: name!, email: email!, date: `@${date!}` },
      message: body!.replace(/\n+$/, ''),
    });
  }
  return commits;
}

async function commitTree(
  dir: string,
  tree: string,
  parents: string[],
  text: string,
  who: { author: Signature & { date?: string }; committer: Signature },
): Promise<string> {
  const env: NodeJS.ProcessEnv = {
    GIT_AUTHOR_NAME: who.author.name,
    GIT_AUTHOR_EMAIL: who.author.email,
    GIT_COMMITTER_NAME: who.committer.name,
    GIT_COMMITTER_EMAIL: who.committer.email,
  };
  if (who.author.date) env.GIT_AUTHOR_DATE = who.author.date;
  if (who.author === STAND_IN) env.GIT_COMMITTER_DATE = STAND_IN.date;
  const args = ['commit-tree', '--no-gpg-sign', tree, ...parents.flatMap((parent) => ['-p', parent]), '-F', '-'];
  return (await runGit(args, { cwd: dir, env, input: text })).stdout.trim();
}
