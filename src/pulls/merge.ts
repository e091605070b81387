import os from 'node:os';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { PullDeps } from './pull-request.deps.js';
import type { Principal } from '../principal.js';
import { commitSignature, noreplyEmail } from '../auth/commit-identity.js';
import { Permission } from '../auth/permissions.js';
import { conflict, notMergeable, Problems } from '../errors/domain-error.js';
import { SharedSlots } from '../concurrency/slots.js';
import type { MergeNote } from './follow-refs.js';
import { buildMerge, MergeMethod, NotMergeable } from './merge-commits.js';
import { PullRequestState } from './pull-request.entity.js';
import type { MergePullRequestInput, MergeResult } from './pull-request.inputs.js';
import { findPullRequest } from './pull-request.reads.js';

/** How long a merge waits for a push to the same repository to finish. */
const MERGE_LOCK_WAIT_MS = 30_000;
/**
 * Merges making commits at once in this process — in all, and per account — and the rest wait their
 * turn: a merge can take git seconds of CPU and up to its memory bound.
 */
const MERGES_PER_ACCOUNT = 2;
const merging = new SharedSlots(Math.max(4, os.availableParallelism() * 2));

function refuseUnmergeable(pr: { state: string; draft: boolean }): void {
  if (pr.state === PullRequestState.MERGED) throw notMergeable('the pull request is already merged');
  if (pr.state !== PullRequestState.OPEN) throw notMergeable('the pull request is closed');
  if (pr.draft) throw notMergeable('the pull request is a draft: mark it ready for review first');
}

/** `method`, or `mergeMethod` (GitHub's name for it): one field under two names, merge when neither is given. */
export function chosenMethod(input: MergePullRequestInput, problems: Problems): MergeMethod {
  if (input.method === null) problems.add('method', 'missing', 'method cannot be null (leave it out for merge)');
  if (input.mergeMethod === null) problems.add('mergeMethod', 'missing', 'merge_method cannot be null (leave it out for merge)');
  if (input.method && input.mergeMethod && input.method !== input.mergeMethod) {
    problems.add('mergeMethod', 'invalid', 'method and merge_method are one field under two names: give one, or both the same');
  }
  return input.method ?? input.mergeMethod ?? MergeMethod.MERGE;
}

/**
 * Merges a pull request, needing write access:
 *
 * 1. The new commit(s) are made from the pull request's exact base and head
 *    shas with git plumbing (merge-commits.ts), before any lock: objects only.
 * 2. A ref transaction moves the base branch: under the repository's push
 *    lock and journal (its note names the pull request), inside the
 *    recording transaction, the pull request's row is locked and checked
 *    again — still open, not a draft, the same head, base and base sha — and
 *    the branch is swapped from that sha to the new one. Anything that moved
 *    meanwhile is a CONFLICT and nothing is written.
 * 3. The same transaction records `push` for the base branch (pusher: the
 *    merger) and, through the pull requests' ref listener reading the note,
 *    marks it merged and records `pull_request` `merged` — the same code that
 *    completes a merge a crash interrupted, when start-up replays the journal.
 */
export async function mergePullRequest(
  deps: PullDeps,
  em: EntityManager,
  viewer: Principal,
  input: MergePullRequestInput,
  how: { auto?: boolean } = {},
): Promise<MergeResult> {
  const repo = await deps.repositories.find(em, viewer, input.repositoryId, Permission.WRITE);
  const pr = await findPullRequest(em, repo, input.number);
  const problems = new Problems();
  const method = chosenMethod(input, problems);
  if (input.sha != null && !/^[0-9a-f]{40}$/i.test(input.sha)) problems.add('sha', 'invalid_format', 'sha must be a full commit sha');
  if (
    input.commitTitle != null &&
    (input.commitTitle.trim() === '' || input.commitTitle.length > 256 || /[\x00-\x1f\x7f]/.test(input.commitTitle)) // one line, no control characters
  ) {
    problems.add('commitTitle', 'invalid', 'commit_title must be one non-empty line of at most 256 characters');
  }
  if (input.commitMessage != null && input.commitMessage.length > 65_536) {
    problems.add('commitMessage', 'too_long', 'commit_message is at most 65536 characters');
  }
  problems.throwIfAny();
  refuseUnmergeable(pr);
  if (input.sha && input.sha.toLowerCase() !== pr.headSha) {
    throw conflict(`the head branch was modified (it is at ${pr.headSha}): review the pull request and try again`);
  }

  const release = (await merging.acquire([{ key: viewer.userId, max: MERGES_PER_ACCOUNT }]))!;
  try {
    return await merge(deps, viewer, repo, pr, { ...input, method }, how.auto ?? false);
  } finally {
    release();
  }
}

/** How many times a merge is built when the base keeps moving under it (each a build on the new base). */
const MERGE_ATTEMPTS = 3;

/** The base branch moved between building a merge and swapping it in; the head did not. */
class BaseMoved extends Error {
  constructor(readonly baseSha: string) {
    super('the base branch moved while the merge was prepared; nothing was written');
  }
}

type PullToMerge = Awaited<ReturnType<typeof findPullRequest>>;
type Who = { name: string; email: string };

/** Steps 1-3, in one of the account's merge slots. */
async function merge(
  deps: PullDeps,
  viewer: Principal,
  repo: { id: string },
  pr: PullToMerge,
  input: MergePullRequestInput,
  auto: boolean,
): Promise<MergeResult> {
  const started = performance.now();
  // Users appear in commits by login and commit email (public or no-reply), never their private account email.
  const merger = { name: viewer.login, email: viewer.gitEmail };
  let base = pr.baseSha;
  for (let attempt = 1; ; attempt++) {
    const sha = await build(deps, repo, pr, input, base, merger);
    const built = performance.now();
    try {
      await swap(deps, viewer, repo, pr, base, sha, merger, { method: input.method ?? MergeMethod.MERGE, auto });
    } catch (error) {
      // Another merge (or a push) moved the base between the build and the swap: built again on the
      // new base while the pull request still merges cleanly there (a conflict there is 405), not a
      // 409 the client could do nothing about. The head stood still: what the client asked for holds.
      if (!(error instanceof BaseMoved)) throw error;
      if (attempt === MERGE_ATTEMPTS) throw conflict(error.message);
      base = error.baseSha;
      continue;
    }
    deps.log.info(
      {
        repositoryId: repo.id,
        number: pr.number,
        method: input.method ?? MergeMethod.MERGE,
        attempts: attempt,
        buildMs: Math.round(built - started),
        recordMs: Math.round(performance.now() - built),
      },
      'pull request merged',
    );
    return { merged: true, sha, message: 'Pull request successfully merged' };
  }
}

/** Step 1: the merge's commit(s) on `base`, objects only; NOT_MERGEABLE when they cannot be made. */
async function build(
  deps: PullDeps,
  repo: { id: string },
  pr: PullToMerge,
  input: MergePullRequestInput,
  base: string,
  merger: Who,
): Promise<string> {
  try {
    return await buildMerge(deps.git.pathFor(repo.id), {
      method: input.method ?? MergeMethod.MERGE,
      base,
      head: pr.headSha,
      number: pr.number,
      title: pr.title,
      headRef: pr.headRef,
      commitTitle: input.commitTitle,
      commitMessage: input.commitMessage,
      author: commitSignature(pr.user, deps.baseUrl),
      authorAddresses: [pr.user.email, noreplyEmail(pr.user, deps.baseUrl)],
      merger,
    });
  } catch (error) {
    if (error instanceof NotMergeable) throw notMergeable(`the pull request cannot be merged: ${error.message}`);
    throw error;
  }
}

/** Steps 2-3: the base branch swapped from `base` to `sha` by the one ref path; BaseMoved when base is elsewhere now. */
async function swap(
  deps: PullDeps,
  viewer: Principal,
  repo: { id: string },
  pr: PullToMerge,
  base: string,
  sha: string,
  merger: Who,
  how: { method: MergeMethod; auto: boolean },
): Promise<void> {
  const { headSha: head, baseRef } = pr;
  const note: MergeNote = { merge: { pullRequestId: pr.id, sha, method: how.method, ...(how.auto ? { auto: true } : {}) } };
  const outcome = await deps.refs.update({
    repositoryId: repo.id,
    actor: { id: viewer.userId, ...merger, login: viewer.login },
    waitMs: MERGE_LOCK_WAIT_MS,
    note,
    commitsNewTo: 'branch', // the push event lists the pull request's commits and the merge commit
    decide: async (tx) => {
      // Lock order everywhere: refs, then pull requests, then the repository.
      await tx.execute('select 1 from git_refs where repository_id = ? and name = ? for update', [repo.id, `refs/heads/${baseRef}`]);
      const [now] = await tx.execute<Array<{ state: string; draft: boolean; head_sha: string; base_ref: string; base_sha: string }>>(
        'select state, draft, head_sha, base_ref, base_sha from pull_requests where id = ? for update',
        [pr.id],
      );
      if (!now) throw conflict('the pull request was deleted');
      refuseUnmergeable(now);
      if (now.head_sha !== head || now.base_ref !== baseRef) {
        throw conflict('the head or base branch moved while the merge was prepared; nothing was written');
      }
      if (now.base_sha !== base) throw new BaseMoved(now.base_sha);
      return [{ ref: `refs/heads/${baseRef}`, before: base, after: sha }];
    },
  });
  if (!outcome) throw conflict('another change to this repository is still running; try again');
}
