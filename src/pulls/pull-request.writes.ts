import { UniqueConstraintViolationException } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { PullDeps } from './pull-request.deps.js';
import type { Principal } from '../principal.js';
import { mayChangeAuthored, Permission } from '../auth/permissions.js';
import { User } from '../auth/user.entity.js';
import { lockForUpdate } from '../db/lock-row.js';
import type { Changes } from '../events/event-map.js';
import { DomainError, conflict, invalid, Problems } from '../errors/domain-error.js';
import { applyTitleAndBody, checkTitleAndBody, isValidBranchName } from '../repositories/names.js';
import { allocateNumber, countOpen } from '../repositories/numbering.js';
import type { Repository } from '../repositories/repository.entity.js';
import { PullRequestEditState, type CreatePullRequestInput, type UpdatePullRequestInput } from './pull-request.inputs.js';
import { PullRequest, PullRequestState } from './pull-request.entity.js';
import { countCommits, mergeBase } from './pull-request.git.js';
import { pullRequestRecord } from './pull-request.payload.js';
import { applyPullRefs, linkHeadRef, settledRefs } from './pull-refs.js';
import { findPullRequest } from './pull-request.reads.js';
import { CLOSED, stopAutoMerge } from './auto-merge-stop.js';

/**
 * Changing pull requests: opening and editing (title, body, base, draft, close, reopen), each
 * deciding on the row as the previous change committed it (its row lock), with its event in the
 * same transaction. Merges are merge.ts; reviews review.service.ts; the use-case entry that binds
 * them all is pull-request.service.ts.
 */
/**
 * Re-reads a pull request under its row lock: what a change decides (a transition, whether it still
 * takes reviews) is decided on the state the previous change committed. Its users are loaded again,
 * as a concurrent merge may have set `merged_by` meanwhile.
 */
export async function lockPullRequest(tx: EntityManager, loaded: PullRequest): Promise<PullRequest> {
  const pr = await lockForUpdate(tx, loaded, 'pull request');
  await tx.populate(pr, ['user', 'mergedBy']);
  return pr;
}

/** GitHub clients name the head `owner:branch`; within one repository the owner is the repository's. */
function headBranch(head: string, repo: Repository): string {
  const prefix = `${repo.owner.login.toLowerCase()}:`;
  return head.toLowerCase().startsWith(prefix) ? head.slice(prefix.length) : head;
}

/**
 * The tips of branches as the recorded refs know them, under share locks:
 * a push that moves or deletes one of them waits until this transaction
 * ends, and its listener then sees what this transaction wrote (lock order:
 * refs, then pull requests, then the repository).
 */
async function lockBranches(tx: EntityManager, repositoryId: string, branches: string[]): Promise<Map<string, string>> {
  if (!branches.length) return new Map();
  const rows = await tx.execute<{ name: string; sha: string }[]>(
    `select name, sha from git_refs
      where repository_id = ? and name in (select 'refs/heads/' || jsonb_array_elements_text(?::jsonb)) for share`,
    [repositoryId, JSON.stringify(branches)],
  );
  return new Map(rows.map((row) => [row.name.slice('refs/heads/'.length), row.sha]));
}

const branchMissing = (name: string) => `branch "${name.slice(0, 100)}" does not exist`;
const unknownBranch = (field: string, name: string) => invalid(field, 'unknown_branch', branchMissing(name));

interface Tip {
  name: string;
  sha: string;
}

/**
 * What head must be to base for a pull request to be open between them (opening, retargeting,
 * reopening): sharing history with it and having commits it lacks. Returns how many.
 */
async function checkPair(dir: string, base: Tip, head: Tip): Promise<number> {
  const [commits, common] = await Promise.all([countCommits(dir, base.sha, head.sha), mergeBase(dir, base.sha, head.sha)]);
  const names = `${base.name.slice(0, 100)} and ${head.name.slice(0, 100)}`;
  if (!common) throw invalid('head', 'no_common_history', `${names} have entirely different histories`);
  if (commits === 0) throw invalid('head', 'no_commits', `No commits between ${names}: head has nothing base lacks`);
  return commits;
}

/** A second open pull request for the same head and base (the partial unique index decides, also under concurrency). */
function translateDuplicate(error: unknown): unknown {
  if (error instanceof UniqueConstraintViolationException && error.message.includes('one_open_per_branch_pair')) {
    return invalid('head', 'already_exists', 'a pull request for this head and base is already open');
  }
  return error;
}

/**
 * Opening: read access and the repo scope; head and base are existing
 * branches, not the same one, head has commits base lacks, and no other pull
 * request for the pair is open. Mergeability is computed after the commit.
 */
export async function createPullRequest(
  deps: PullDeps,
  em: EntityManager,
  viewer: Principal,
  input: CreatePullRequestInput,
): Promise<PullRequest> {
  const repo = await deps.repositories.find(em, viewer, input.repositoryId, Permission.READ, 'repo');
  const head = headBranch(input.head, repo);
  const base = input.base ?? repo.defaultBranch;
  const problems = new Problems();
  checkTitleAndBody(problems, input.title, input.body);
  if (input.draft === null) problems.add('draft', 'missing', 'draft cannot be null (leave it out for false)');
  if (!isValidBranchName(head)) problems.add('head', 'unknown_branch', 'head is not a branch name');
  if (!isValidBranchName(base)) problems.add('base', 'unknown_branch', 'base is not a branch name');
  if (head === base) problems.add('head', 'same_branch', 'head and base are the same branch');
  problems.throwIfAny();

  const { events, git, mergeability } = deps;
  try {
    return await events.transaction(em, async (tx) => {
      const tips = await lockBranches(tx, repo.id, [head, base]);
      const missing = new Problems();
      for (const [field, name] of [
        ['head', head],
        ['base', base],
      ] as const) {
        if (!tips.has(name)) missing.add(field, 'unknown_branch', branchMissing(name));
      }
      missing.throwIfAny();
      const headSha = tips.get(head)!;
      const baseSha = tips.get(base)!;
      const commits = await checkPair(git.pathFor(repo.id), { name: base, sha: baseSha }, { name: head, sha: headSha });

      const author = await tx.findOneOrFail(User, { id: viewer.userId });
      const number = await allocateNumber(tx, repo.id, 'open_pulls');
      // Opened with no labels or assignees: its answer says so unread (openedNow, in the resolver).
      const pr = tx.create(PullRequest, {
        repository: repo,
        number,
        title: input.title.trim(),
        body: input.body ?? null,
        draft: input.draft ?? false,
        headRef: head,
        headSha,
        baseRef: base,
        baseSha,
        user: author,
        commitsCount: commits,
      });
      await tx.flush(); // a second open pull request for the pair fails here
      await events.record(tx, {
        type: 'pull_request',
        action: 'opened',
        repository: repo,
        actor: author,
        fields: { number, pull_request: await pullRequestRecord(deps, tx, pr) },
      });
      // Last before the commit: `pull/<n>/head` is there once `opened` can be delivered (pull-refs.ts).
      await linkHeadRef(git.pathFor(repo.id), number, head);
      events.afterCommit(tx, () => mergeability.wake(repo.id));
      return pr;
    });
  } catch (error) {
    throw translateDuplicate(error);
  }
}

/**
 * Editing: the author or a writer may change the title, body, base and
 * draft flag, close and reopen. Each kind of change records its event:
 * `updated` with `changes`, then `closed` or `reopened`. A merged pull
 * request keeps its state and base; reopening needs the head branch.
 */
export async function updatePullRequest(
  deps: PullDeps,
  em: EntityManager,
  viewer: Principal,
  input: UpdatePullRequestInput,
): Promise<PullRequest> {
  const repo = await deps.repositories.find(em, viewer, input.repositoryId, Permission.READ, 'repo');
  const loaded = await findPullRequest(em, repo, input.number);
  if (!(await mayChangeAuthored(em, viewer, repo, loaded.user.id))) {
    throw new DomainError('FORBIDDEN', 'only the author or a collaborator with write access may change this pull request');
  }
  const problems = new Problems();
  checkTitleAndBody(problems, input.title, input.body);
  for (const field of ['state', 'draft', 'base'] as const) {
    if (input[field] === null) problems.add(field, 'missing', `${field} cannot be null`);
  }
  if (input.base != null && !isValidBranchName(input.base)) problems.add('base', 'unknown_branch', 'base is not a branch name');
  problems.throwIfAny();

  const { events, git, mergeability } = deps;
  const dir = git.pathFor(repo.id);
  const actor = { id: viewer.userId, login: viewer.login };
  const reopening = input.state === PullRequestEditState.OPEN && loaded.state === PullRequestState.CLOSED;
  const seen = { headRef: loaded.headRef, baseRef: loaded.baseRef, state: loaded.state }; // the lock below refreshes `loaded` itself
  try {
    return await events.transaction(em, async (tx) => {
      // Branch rows first, then the pull request's (the lock order of every ref change).
      const wanted = [input.base, ...(reopening ? [seen.headRef, seen.baseRef] : [])].filter((b): b is string => !!b);
      const tips = await lockBranches(tx, repo.id, [...new Set(wanted)]);
      // Decided on the locked row: of two concurrent closes, only the first is a transition.
      const pr = await lockPullRequest(tx, loaded);
      if (pr.headRef !== seen.headRef || pr.baseRef !== seen.baseRef || pr.state !== seen.state) {
        if (reopening || input.base != null) throw conflict('the pull request changed while this edit was made; try again');
      }
      const changes: Changes = {};
      applyTitleAndBody(pr, input, changes);
      if (input.draft != null && input.draft !== pr.draft) {
        changes.draft = { from: pr.draft };
        pr.draft = input.draft;
      }
      const retarget = input.base != null && input.base !== pr.baseRef ? input.base : null;
      const nextState = input.state ? (input.state as string as PullRequestState) : pr.state;
      if (pr.state === PullRequestState.MERGED && (retarget || nextState !== pr.state)) {
        throw invalid(retarget ? 'base' : 'state', 'merged', 'a merged pull request cannot be reopened, closed or retargeted');
      }
      if (retarget && nextState !== PullRequestState.OPEN)
        throw invalid('base', 'not_open', 'only an open pull request can change its base');

      let transition: 'closed' | 'reopened' | null = null;
      const now = new Date();
      if (reopening && nextState === PullRequestState.OPEN) {
        // While closed its shas stood still: a reopened pull request takes the branches as they are now.
        const headSha = tips.get(pr.headRef);
        const baseSha = tips.get(pr.baseRef);
        if (!headSha) throw invalid('state', 'unknown_branch', `the head branch "${pr.headRef}" no longer exists: it cannot be reopened`);
        if (!baseSha) throw invalid('state', 'unknown_branch', `the base branch "${pr.baseRef}" no longer exists: it cannot be reopened`);
        transition = 'reopened';
        pr.state = PullRequestState.OPEN;
        pr.closedAt = null;
        pr.headSha = headSha;
        pr.baseSha = baseSha;
        // Checked again even for the pair it had: closing took its merge ref, which the check writes.
        pr.mergeableBaseSha = pr.mergeableHeadSha = null;
        if (!retarget) pr.commitsCount = await checkPair(dir, { name: pr.baseRef, sha: baseSha }, { name: pr.headRef, sha: headSha });
      } else if (nextState === PullRequestState.CLOSED && pr.state === PullRequestState.OPEN) {
        transition = 'closed';
        pr.state = PullRequestState.CLOSED;
        pr.closedAt = now;
      }
      if (retarget) {
        if (retarget === pr.headRef) throw invalid('base', 'same_branch', 'head and base are the same branch');
        const baseSha = tips.get(retarget);
        if (!baseSha) throw unknownBranch('base', retarget);
        const commits = await checkPair(dir, { name: retarget, sha: baseSha }, { name: pr.headRef, sha: pr.headSha });
        changes.base = { ref: { from: pr.baseRef }, sha: { from: pr.baseSha } };
        pr.baseRef = retarget;
        pr.baseSha = baseSha;
        pr.commitsCount = commits;
      }
      if (!transition && Object.keys(changes).length === 0) return pr;
      pr.updatedAt = now;
      await tx.flush(); // reopening beside another open pull request for the pair fails here
      const fields = async () => ({ number: pr.number, pull_request: await pullRequestRecord(deps, tx, pr) });
      if (Object.keys(changes).length) {
        await events.record(tx, {
          type: 'pull_request',
          action: 'updated',
          repository: repo,
          actor,
          fields: { ...(await fields()), changes },
        });
      }
      if (retarget || transition === 'reopened') events.afterCommit(tx, () => mergeability.wake(repo.id));
      if (transition) {
        if (transition === 'closed') await stopAutoMerge(deps, tx, repo, pr, actor, CLOSED);
        await events.record(tx, { type: 'pull_request', action: transition, repository: repo, actor, fields: await fields() });
        await countOpen(tx, repo.id, 'open_pulls', transition === 'closed' ? -1 : 1); // last: it locks the counters that creation takes too
        // Under the row lock, before the commit: the refs are right once the event can be delivered (pull-refs.ts).
        if (transition === 'reopened') await linkHeadRef(dir, pr.number, pr.headRef);
        else await applyPullRefs(dir, settledRefs([pr]));
      }
      return pr;
    });
  } catch (error) {
    throw translateDuplicate(error);
  }
}
