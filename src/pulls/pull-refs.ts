import { runGit } from '../git/run-git.js';
import { PullRequestState } from './pull-request.entity.js';

/**
 * Pull refs: `refs/pull/<n>/head` and `refs/pull/<n>/merge`, which CI fetches (`git fetch origin
 * pull/<n>/merge`). They are not branches: pushes to them are refused (hooks.ts), they are no ref
 * changes of the repository (readDiskRefs skips them: no events, no `git_refs` rows) and listings
 * of branches never show them.
 *
 * While a pull request is open its head ref is a symbolic ref to its head branch, made when it
 * opens or reopens, inside that transaction: it follows every push with no git process at all, and
 * it is right the moment a push's `updated` event can be delivered (the push moved the branch
 * before its transaction committed) — a CI bot fetching `pull/<n>/head` on the event cannot see
 * the old head. Measured (`npm run bench:pulls`, git processes per push to a head): a plain ref
 * would need an `update-ref` inside every push's transaction to be as timely. `git ls-remote`,
 * protocol v2 `ls-refs`, `fetch pull/<n>/head`, `for-each-ref`, `pack-refs --all` (symbolic refs
 * stay loose) and `gc` all read through it; one left dangling (its branch deleted) is skipped by
 * each, never an error. When the pull request merges it becomes a plain ref to the head that
 * merged, so it stays after the branch goes (as on GitHub); when it closes, both refs go.
 *
 * The merge ref is the test merge of head into base: a commit made from the tree the mergeability
 * check's `merge-tree --write-tree` computed, first parent the base tip, second the head. It is
 * written by that check, after the change commits: it lags the head by one check (milliseconds
 * after the push), and exists only while the pair merges cleanly.
 */

export const pullRef = (number: number, kind: 'head' | 'merge') => `refs/pull/${number}/${kind}`;

/** Who makes test merges: no user does. */
const TEST_MERGER = { GIT_AUTHOR_NAME: 'Cairn', GIT_AUTHOR_EMAIL: 'noreply@cairn.invalid' };
const TEST_MERGE_ENV = {
  ...TEST_MERGER,
  GIT_COMMITTER_NAME: TEST_MERGER.GIT_AUTHOR_NAME,
  GIT_COMMITTER_EMAIL: TEST_MERGER.GIT_AUTHOR_EMAIL,
};

/** A change of one pull ref: a sha to point it at, or null to delete it. */
export interface PullRefChange {
  ref: string;
  sha: string | null;
}

/** Points an open pull request's head ref at its head branch (a symbolic ref). */
export async function linkHeadRef(dir: string, number: number, headBranch: string): Promise<void> {
  await runGit(['symbolic-ref', pullRef(number, 'head'), `refs/heads/${headBranch}`], { cwd: dir });
}

/** The test merge commit of head into base whose tree `merge-tree --write-tree` computed. */
export async function writeTestMerge(dir: string, base: string, head: string, tree: string): Promise<string> {
  const args = ['commit-tree', tree, '-p', base, '-p', head, '-m', `Merge ${head} into ${base}`];
  return (await runGit(args, { cwd: dir, env: TEST_MERGE_ENV })).stdout.trim();
}

/**
 * Applies pull ref changes with one `update-ref --stdin`, every one `no-deref`: the ref itself is
 * written or deleted, never the branch a symbolic head ref points at. Deleting a ref that does not
 * exist is no error. No old values: every writer holds the pull request's row lock with the state
 * it writes for (the check stores its result under it, a close or merge decides under it), so
 * writes for one pull request happen in the order of its changes.
 */
export async function applyPullRefs(dir: string, changes: PullRefChange[]): Promise<void> {
  if (!changes.length) return;
  const input = changes.map(({ ref, sha }) => `option no-deref\n${sha === null ? `delete ${ref}` : `update ${ref} ${sha}`}\n`).join('');
  await runGit(['update-ref', '--stdin'], { cwd: dir, input });
}

/**
 * The refs of pull requests that are no longer open: a merged one keeps its head ref as a plain
 * ref to the head that merged, a closed one has none; neither has a merge ref.
 */
export function settledRefs(pulls: Array<{ number: number; state: PullRequestState; headSha: string }>): PullRefChange[] {
  return pulls.flatMap((pr) => [
    { ref: pullRef(pr.number, 'head'), sha: pr.state === PullRequestState.MERGED ? pr.headSha : null },
    { ref: pullRef(pr.number, 'merge'), sha: null },
  ]);
}
