import { randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { Permission } from '../auth/permissions.js';
import { fastRead } from '../db/fast-read.js';
import { DomainError, invalid, notFound, Problems } from '../errors/domain-error.js';
import { GroupCommit } from '../db/group-commit.js';
import type { EventRecorder, StatementEvent } from '../events/event-recorder.js';
import type { GitStorage } from '../git/storage.js';
import { newId } from '../ids.js';
import { connection, type Connection, type Page } from '../graphql/pagination.js';
import type { Principal, Scope } from '../principal.js';
import type { Repository } from '../repositories/repository.entity.js';
import type { Repositories } from '../repositories/repository.service.js';
import { combinedStatus, combinedVersion, statusOf, type LatestStatus, type StatusRow } from './combined-status.js';
import { FULL_SHA, isCommit, resolveCommit, shaFacts } from './commit-refs.js';
import { statusPayload } from './commit-status.payload.js';
import { StatusRepository, type CombinedStatusRecord, type CreateCommitStatusInput } from './commit-status.types.js';

/** GitHub's limits: a context keeps at most this many statuses of one commit; a description is short. */
const MAX_STATUSES_PER_CONTEXT = 1000;
const MAX_DESCRIPTION = 140;
const MAX_CONTEXT = 255;
const MAX_TARGET_URL = 2048;

/** A private repository shows itself to a token that may read it, or to a CI token that may post statuses on it. */
const SEEN_WITH: readonly Scope[] = ['repo:read', 'repo:status'];

/** The commit statuses use cases: posting one (with its `status` event), listing a commit's, and its combined status. */
export class CommitStatuses {
  constructor(private readonly deps: { events: EventRecorder; repositories: Repositories; git: GitStorage }) {}

  /** The repository, if the viewer may read statuses on it (`repo:status` tokens included). */
  readable(em: EntityManager, viewer: Principal, repositoryId: string): Promise<Repository> {
    return this.deps.repositories.find(em, viewer, repositoryId, Permission.READ, null, SEEN_WITH);
  }

  /** A commit's statuses, newest first; `ref` is a full sha, a branch or a tag. */
  async list(em: EntityManager, repo: Repository, ref: string, page: Page): Promise<Connection<LatestStatus>> {
    const sha = await resolveCommit(em, this.deps.git, repo.id, ref);
    const [counted, rows] = await Promise.all([
      fastRead<{ total: number }>(em, 'select count(*)::int as total from commit_statuses where repository_id = ? and sha = ?', [
        repo.id,
        sha,
      ]),
      page.limit === 0
        ? Promise.resolve([])
        : fastRead<StatusRow>(
            em,
            `select s.id, s.state, s.context, s.description, s.target_url, s.creator_id, u.login as creator_login, s.created_at, s.updated_at
               from commit_statuses s join users u on u.id = s.creator_id
              where s.repository_id = ? and s.sha = ?
              order by s.created_at desc, s.id desc limit ? offset ?`,
            [repo.id, sha, page.limit, page.offset],
          ),
    ]);
    return connection(rows.map(statusOf), counted[0]!.total, page);
  }

  /** The latest status of each context of the commit `ref` names, and their combined state. */
  async combined(em: EntityManager, repo: Repository, ref: string): Promise<CombinedStatusRecord> {
    const known = await this.ofCommit(
      em,
      repo,
      ref,
      (sha) => combinedStatus(em, repo.id, sha),
      (status) => status.totalCount > 0,
    );
    return { ...known, repository: StatusRepository.of(repo) };
  }

  /**
   * The version of what `combined` answers for `ref` (combined-status.ts), if the viewer may read the
   * repository's statuses: one small read, so a caller that keeps answers by it asks it first, and
   * makes the answer only for a version it has not kept. A full sha's version needs nothing of the
   * repository but its id, so it is read while the permission check runs (a CI system's poll waits
   * for one round trip to the database, not two), and used only once that check has passed.
   */
  async combinedVersion(em: EntityManager, viewer: Principal, repositoryId: string, ref: string): Promise<string> {
    const lower = ref.toLowerCase();
    const early = FULL_SHA.test(lower) ? combinedVersion(em, repositoryId, lower) : null;
    early?.catch(() => undefined); // a refused check leaves it unread; its failure is seen below otherwise
    const repo = await this.readable(em, viewer, repositoryId);
    const read = (sha: string) => (early && sha === lower ? early : combinedVersion(em, repo.id, sha));
    return (await this.ofCommit(em, repo, ref, read, (known) => known.hasStatuses)).version;
  }

  /**
   * `read` of the commit `ref` names. A full sha is read at once, and kept when `hasStatuses` says
   * it has statuses: each was checked to be a commit when posted, so there is no need to ask git.
   * Anything else is resolved first (NOT_FOUND when it names no commit).
   */
  private async ofCommit<T>(
    em: EntityManager,
    repo: Repository,
    ref: string,
    read: (sha: string) => Promise<T>,
    hasStatuses: (value: T) => boolean,
  ): Promise<T> {
    const lower = ref.toLowerCase();
    if (FULL_SHA.test(lower)) {
      const known = await read(lower);
      if (hasStatuses(known)) return known;
    }
    return read(await resolveCommit(em, this.deps.git, repo.id, ref));
  }

  /**
   * Posting a status needs write permission and a token with `repo` or `repo:status`. The status,
   * its context's latest pointer and count, and its `status` event are written by ONE statement
   * (`insertStatuses`), shared with the posts to the same repository that arrive meanwhile; inside a
   * caller's transaction the post goes alone at once.
   */
  async create(em: EntityManager, viewer: Principal, input: CreateCommitStatusInput): Promise<LatestStatus> {
    const repo = await this.deps.repositories.find(em, viewer, input.repositoryId, Permission.WRITE, 'repo:status', SEEN_WITH);
    const sha = input.sha.toLowerCase();
    const context = input.context ?? 'default';
    checkStatus(input, sha, context);

    const facts = await shaFacts(em, repo.id, sha);
    if (!(await isCommit(this.deps.git, repo.id, sha, facts))) throw invalid('sha', 'not_a_commit', `no commit ${sha} in this repository`);

    const now = new Date();
    const status: LatestStatus = {
      id: newId('sts'),
      state: input.state,
      context,
      description: input.description ?? null,
      targetUrl: input.targetUrl ?? null,
      creator: { id: viewer.userId, login: viewer.login },
      createdAt: now,
      updatedAt: now,
    };
    const posted: Posted = {
      em,
      events: this.deps.events,
      repositoryId: repo.id,
      status: { ...status, sha },
      // Nothing of the payload waits for the statement: the stand-in is a string no payload holds.
      event: {
        key: status.id,
        change: { type: 'status', repository: repo, actor: status.creator, fields: statusPayload(sha, status, facts.branches) },
        standIn: randomUUID(),
      },
    };
    const made = em.isInTransaction() ? (await insertStatuses([posted])).has(status.id) : await together.add(repo.id, posted);
    if (!made) throw await this.whyNotMade(em, repo.id, sha, context);
    return status;
  }

  /** A post the statement did not make: the context was full, or the repository is gone. */
  private async whyNotMade(em: EntityManager, repositoryId: string, sha: string, context: string): Promise<DomainError> {
    const [row] = await em.execute<{ count: number }[]>(
      'select count from commit_status_contexts where repository_id = ? and sha = ? and context = ?',
      [repositoryId, sha, context],
    );
    if (row && row.count >= MAX_STATUSES_PER_CONTEXT) {
      return invalid('context', 'too_many_statuses', `a commit holds at most ${MAX_STATUSES_PER_CONTEXT} statuses per context`);
    }
    return notFound('repository');
  }
}

/** A status to write, with its event; `em` is its request's (the first of a batch runs the statement). */
interface Posted {
  em: EntityManager;
  events: EventRecorder;
  repositoryId: string;
  status: LatestStatus & { sha: string };
  event: StatementEvent;
}

/** At most this many statuses share one statement (its text carries their payloads). */
const MOST_AT_ONCE = 64;

/**
 * Posts to one repository that arrive while a statement for it runs wait for it and go together in
 * the next (GroupCommit): a CI system reports many contexts at once, and each statement's commit
 * waits for the WAL to reach the disk, which costs one post as much as fifty. A batch names each
 * context once (one statement's upsert may touch a context's row only once): a second post to a
 * context goes in a later batch, so posts to one context count and take the latest pointer in
 * arrival order. Answers whether each was made.
 */
const together = new GroupCommit<Posted, boolean>(
  async (batch) => {
    const made = await insertStatuses(batch);
    return batch.map((posted) => made.has(posted.status.id));
  },
  MOST_AT_ONCE,
  { distinct: (posted) => `${posted.status.sha}\u0000${posted.status.context}` },
);

/**
 * ONE statement writes the statuses (of one repository, distinct contexts), each context's latest
 * pointer and count, and their `status` events: a context's row is locked only while PostgreSQL runs
 * it, and the cap is decided on that row, so concurrent posts to one context can never pass it.
 * Contexts are locked in (sha, context) order, so two statements cannot deadlock. Returns the made
 * statuses by id; a post the statement did not make (its context was full, or the repository is
 * gone) has none.
 */
function insertStatuses(batch: Posted[]) {
  const rows = batch.map(({ status }) => ({
    id: status.id,
    sha: status.sha,
    state: status.state,
    context: status.context,
    description: status.description,
    target_url: status.targetUrl,
    creator_id: status.creator.id,
    created_at: status.createdAt.toISOString(),
    updated_at: status.updatedAt.toISOString(),
  }));
  return batch[0]!.events.recordInStatement(
    batch[0]!.em,
    {
      // The context's row first, on its lock: it counts the status and names it the latest, unless
      // the context is full (then nothing is written). The repository's KEY SHARE lock is what the
      // foreign keys take anyway; a repository deleted meanwhile selects nothing.
      ctes: `posted as (
               select * from jsonb_to_recordset(?::jsonb) as t(id text, sha text, state text, context text, description text,
                                                               target_url text, creator_id text, created_at timestamptz, updated_at timestamptz)),
             latest as (
               insert into commit_status_contexts as c (repository_id, sha, context, latest_id, state, count)
               select r.id, p.sha, p.context, p.id, p.state, 1
                 from (select id from repositories where id = ? for key share) r, posted p
                order by p.sha, p.context
               on conflict (repository_id, sha, context) do update
                 set latest_id = excluded.latest_id, state = excluded.state, count = c.count + 1
                 where c.count < ${MAX_STATUSES_PER_CONTEXT}
               returning repository_id, latest_id),
             created as (
               insert into commit_statuses (id, repository_id, sha, state, context, description, target_url, creator_id, created_at, updated_at)
               select p.id, l.repository_id, p.sha, p.state, p.context, p.description, p.target_url, p.creator_id, p.created_at, p.updated_at
                 from latest l join posted p on p.id = l.latest_id
               returning id)`,
      params: [JSON.stringify(rows), batch[0]!.repositoryId],
      made: 'created',
      key: 'id',
      value: 'id',
    },
    batch.map((posted) => posted.event),
  );
}

/** Every problem of a status's input at once (VALIDATION_FAILED, 422 in REST). */
function checkStatus(input: CreateCommitStatusInput, sha: string, context: string): void {
  const problems = new Problems();
  if (!FULL_SHA.test(sha)) problems.add('sha', 'invalid', 'sha is the 40 hex digits of a commit');
  if (context.trim() === '') problems.add('context', 'missing', 'context cannot be empty');
  else if (context.length > MAX_CONTEXT) problems.add('context', 'too_long', `context is at most ${MAX_CONTEXT} characters`);
  if (input.description && input.description.length > MAX_DESCRIPTION) {
    problems.add('description', 'too_long', `description is at most ${MAX_DESCRIPTION} characters`);
  }
  if (input.targetUrl != null && !isWebUrl(input.targetUrl)) {
    problems.add('targetUrl', 'invalid', `targetUrl is an http or https URL of at most ${MAX_TARGET_URL} characters`);
  }
  problems.throwIfAny();
}

function isWebUrl(text: string): boolean {
  if (text.length > MAX_TARGET_URL || !URL.canParse(text)) return false;
  const { protocol, host } = new URL(text);
  return (protocol === 'http:' || protocol === 'https:') && host !== '';
}
