import { UniqueConstraintViolationException } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { PullDeps } from './pull-request.deps.js';
import type { Principal } from '../principal.js';
import { mayChangeAuthored, Permission } from '../auth/permissions.js';
import { User } from '../auth/user.entity.js';
import { lockForUpdate } from '../db/lock-row.js';
import { fastRead } from '../db/fast-read.js';
import type { Changes } from '../events/event-map.js';
import { DomainError, conflict, invalid, notFound, Problems } from '../errors/domain-error.js';
import { connection, type Connection, type Page } from '../graphql/pagination.js';
import { applyTitleAndBody, checkTitleAndBody, isValidBranchName } from '../repositories/names.js';
import { allocateNumber } from '../repositories/numbering.js';
import type { Repository } from '../repositories/repository.entity.js';
import {
  PullRequestEditState,
  PullRequestStateFilter,
  type CreatePullRequestInput,
  type UpdatePullRequestInput,
} from './pull-request.inputs.js';
import { PullRequest, PullRequestState } from './pull-request.entity.js';
import { pullRequestView, type PullRequestFacts, type PullRequestView } from './pull-request.view.js';
import { countCommits, mergeBase } from './pull-request.git.js';
import { pullRequestRecord } from './pull-request.record.js';

/** A pull request as read for a view: its row with its users' logins. */
interface PullRequestRow {
  id: string;
  number: number;
  title: string;
  body: string | null;
  state: PullRequestState;
  draft: boolean;
  head_ref: string;
  head_sha: string;
  base_ref: string;
  base_sha: string;
  user_id: string;
  user_login: string;
  merged_at: string | Date | null;
  merged_by_id: string | null;
  merged_by_login: string | null;
  merge_commit_sha: string | null;
  commits_count: number;
  mergeable: boolean | null;
  mergeable_base_sha: string | null;
  mergeable_head_sha: string | null;
  conflicts: string[] | string;
  created_at: string | Date;
  updated_at: string | Date;
  closed_at: string | Date | null;
  repository_id: string;
}

const date = (value: string | Date) => (value instanceof Date ? value : new Date(value));

function factsOf(row: PullRequestRow): PullRequestFacts {
  return {
    id: row.id,
    number: row.number,
    title: row.title,
    body: row.body,
    state: row.state,
    draft: row.draft,
    headRef: row.head_ref,
    headSha: row.head_sha,
    baseRef: row.base_ref,
    baseSha: row.base_sha,
    user: { id: row.user_id, login: row.user_login },
    mergedAt: row.merged_at === null ? null : date(row.merged_at),
    mergedBy: row.merged_by_id === null ? null : { id: row.merged_by_id, login: row.merged_by_login! },
    mergeCommitSha: row.merge_commit_sha,
    commitsCount: row.commits_count,
    storedMergeable: row.mergeable,
    mergeableBaseSha: row.mergeable_base_sha,
    mergeableHeadSha: row.mergeable_head_sha,
    storedConflicts: typeof row.conflicts === 'string' ? (JSON.parse(row.conflicts) as string[]) : row.conflicts,
    createdAt: date(row.created_at),
    updatedAt: date(row.updated_at),
    closedAt: row.closed_at === null ? null : date(row.closed_at),
    repositoryId: row.repository_id,
  };
}

/**
 * Pull requests as views, read with one statement: their rows in the given order joined with their
 * users' logins. `ids` is a subquery selecting the wanted ids (a page, or one number).
 */
async function readViews(em: EntityManager, ids: string, params: unknown[], order: string): Promise<PullRequestView[]> {
  const rows = await fastRead<PullRequestRow>(
    em,
    `select p.*, u.login as user_login, m.login as merged_by_login
       from (${ids}) as wanted
       join pull_requests p on p.id = wanted.id
       join users u on u.id = p.user_id
       left join users m on m.id = p.merged_by_id
      order by ${order}`,
    params,
  );
  return rows.map((row) => pullRequestView(factsOf(row)));
}

/**
 * A page of a repository's pull requests, newest first. A list is only read, so it is not hydrated
 * into entities: one statement for the page (its ids chosen first, so a deep offset walks the index
 * only, not the joins), one for the total.
 */
export async function listPullRequests(
  em: EntityManager,
  repo: Repository,
  state: PullRequestStateFilter,
  page: Page,
): Promise<Connection<PullRequestView>> {
  const filter = state === PullRequestStateFilter.ALL ? '' : ' and state = ?';
  const params = state === PullRequestStateFilter.ALL ? [repo.id] : [repo.id, state];
  const [counted, views] = await Promise.all([
    fastRead<{ total: number }>(em, `select count(*)::int as total from pull_requests where repository_id = ?${filter}`, params),
    page.limit === 0
      ? Promise.resolve([])
      : readViews(
          em,
          `select id, created_at from pull_requests where repository_id = ?${filter} order by created_at desc, id desc limit ? offset ?`,
          [...params, page.limit, page.offset],
          'wanted.created_at desc, wanted.id desc',
        ),
  ]);
  return connection(views, counted[0]!.total, page);
}

/** One pull request as its view; NOT_FOUND when there is none. */
export async function readPullRequest(em: EntityManager, repo: Repository, number: number): Promise<PullRequestView> {
  const [view] = await readViews(em, 'select id from pull_requests where repository_id = ? and number = ?', [repo.id, number], 'p.id');
  if (!view) throw notFound('pull request');
  return view;
}

export async function findPullRequest(em: EntityManager, repo: Repository, number: number): Promise<PullRequest> {
  const pr = await em.findOne(PullRequest, { repository: repo, number }, { populate: ['user', 'mergedBy'] });
  if (!pr) throw notFound('pull request');
  return pr;
}

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
      const number = await allocateNumber(tx, repo.id);
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
        fields: { number, pull_request: pullRequestRecord(pr) },
      });
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
      const fields = () => ({ number: pr.number, pull_request: pullRequestRecord(pr) });
      if (Object.keys(changes).length) {
        await events.record(tx, { type: 'pull_request', action: 'updated', repository: repo, actor, fields: { ...fields(), changes } });
      }
      if (transition) await events.record(tx, { type: 'pull_request', action: transition, repository: repo, actor, fields: fields() });
      if (retarget || transition === 'reopened') events.afterCommit(tx, () => mergeability.wake(repo.id));
      return pr;
    });
  } catch (error) {
    throw translateDuplicate(error);
  }
}
