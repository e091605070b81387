import type { EntityManager } from '@mikro-orm/postgresql';
import { mayChangeAuthored, Permission, requireScope } from '../auth/permissions.js';
import { User } from '../auth/user.entity.js';
import { fastRead } from '../db/fast-read.js';
import { lockForUpdate } from '../db/lock-row.js';
import { mapRow, mapRowAndRelated } from '../db/read-only.js';
import { filterSql, type ConversationFilterArgs } from '../conversations/conversation-filter.js';
import { DomainError, invalid, notFound, Problems } from '../errors/domain-error.js';
import type { EventRecorder } from '../events/event-recorder.js';
import { connection, type Connection, type Page } from '../graphql/pagination.js';
import type { Principal } from '../principal.js';
import { applyTitleAndBody, checkTitleAndBody } from '../repositories/names.js';
import { countOpen, createNumbered } from '../repositories/numbering.js';
import type { Repository } from '../repositories/repository.entity.js';
import type { Repositories } from '../repositories/repository.service.js';
import { Issue, IssueState, IssueStateReason } from './issue.entity.js';
import { IssueStateFilter, type CreateIssueInput, type UpdateIssueInput } from './issue.inputs.js';
import { issuePayload, issueRecord } from './issue.payload.js';
import { NO_PARTS } from '../conversations/conversation-parts.js';

/** The issues use cases, callable by any transport with the request's entity manager and the acting user. */
export class Issues {
  constructor(private readonly deps: { events: EventRecorder; repositories: Repositories }) {}

  /**
   * A page of a repository's issues, filtered and ordered (newest first by default): one statement
   * for the page, its ids chosen first (so a deep offset walks the index only, not the join) and
   * the issues read with their authors; one for the total. The rows are mapped, not hydrated
   * through the ORM's find: for a request that only reads, plain instances, as the repository
   * itself is read (repository.service.ts). A page read that way costs a third of the CPU and
   * leaves a fraction of the garbage.
   */
  async list(
    em: EntityManager,
    repo: Repository,
    state: IssueStateFilter,
    filter: Partial<ConversationFilterArgs>,
    page: Page,
  ): Promise<Connection<Issue>> {
    const { where, params, order, column } = filterSql(filter, repo.id);
    const stateSql = state === IssueStateFilter.ALL ? '' : ' and a.state = ?';
    const head = state === IssueStateFilter.ALL ? [repo.id] : [repo.id, state];
    const from = `from issues a where a.repository_id = ?${stateSql}${where}`;
    // The open issues of a repository, unfiltered, are counted already (its counters row, read with it).
    const counting =
      state === IssueStateFilter.OPEN && !where
        ? Promise.resolve([{ total: repo.openIssuesCount }])
        : fastRead<{ total: number }>(em, `select count(*)::int as total ${from}`, [...head, ...params], true);
    const [counted, rows] = await Promise.all([
      counting,
      page.limit === 0
        ? Promise.resolve([])
        : fastRead<Record<string, unknown>>(
            em,
            `select i.*, to_jsonb(u) as user_row
               from (select a.id, a.${column} ${from} order by ${order('a')} limit ? offset ?) as wanted
               join issues i on i.id = wanted.id
               join users u on u.id = i.user_id
              order by ${order('wanted')}`,
            [...head, ...params, page.limit, page.offset],
            true, // only mapped into entities of this request's own, as the repository read (repository.service.ts)
          ),
    ]);
    const issues = rows.map((row) => {
      const [issue, user] = mapRowAndRelated(em, Issue, User, row, 'user_row');
      issue.repository = repo;
      issue.user = user;
      return issue;
    });
    return connection(issues, counted[0]!.total, page);
  }

  async find(em: EntityManager, repo: Repository, number: number): Promise<Issue> {
    const issue = await em.findOne(Issue, { repository: repo, number }, { populate: ['user'] });
    if (!issue) throw notFound('issue');
    return issue;
  }

  /**
   * Opening an issue needs read access to the repository (as on GitHub: anyone
   * who can see a repository can report on it) and a token with the repo scope.
   */
  async create(em: EntityManager, viewer: Principal, input: CreateIssueInput): Promise<Issue> {
    // Written by its own statement (createNumbered): nothing relates an entity to the repository.
    const repo = await this.deps.repositories.findUntracked(em, viewer, input.repositoryId, Permission.READ, 'repo');
    const problems = new Problems();
    checkTitleAndBody(problems, input.title, input.body);
    problems.throwIfAny();

    // No query when the author owns the repository (loaded with it).
    const author = repo.owner.id === viewer.userId ? repo.owner : await em.findOneOrFail(User, { id: viewer.userId });
    const issue = Object.assign(new Issue(), { repository: repo, title: input.title.trim(), body: input.body ?? null, user: author });
    const row = await createNumbered(em, this.deps.events, {
      table: 'issues',
      repositoryId: repo.id,
      row: issueRow(issue),
      change: (number) => ({
        type: 'issues',
        action: 'opened',
        repository: repo,
        actor: author,
        // A new issue has no labels or assignees: its answer says so unread too (openedNow, in the resolver).
        fields: { issue: issuePayload(Object.assign(issue, { number }), NO_PARTS) },
      }),
    });
    // Untracked like its repository: the issue as written, with the author and repository as loaded.
    return Object.assign(mapRow(em, Issue, row, true), { repository: repo, user: author });
  }

  /**
   * Editing, closing and reopening: the issue's author may do it, as may anyone
   * with write access. Each kind of change records its own event: `updated`
   * (title/body, with `changes`), then `closed` or `reopened`.
   */
  async update(em: EntityManager, viewer: Principal, input: UpdateIssueInput): Promise<Issue> {
    const repo = await this.deps.repositories.find(em, viewer, input.repositoryId, Permission.READ);
    const loaded = await this.find(em, repo, input.number);
    requireScope(viewer, 'repo');
    if (!(await mayChangeAuthored(em, viewer, repo, loaded.user.id))) {
      throw new DomainError('FORBIDDEN', 'only the author or a collaborator with write access may change this issue');
    }
    const problems = new Problems();
    checkTitleAndBody(problems, input.title, input.body);
    if (input.state === null) problems.add('state', 'missing', 'state cannot be null');
    if (input.stateReason === null) problems.add('stateReason', 'missing', 'state_reason cannot be null');
    problems.throwIfAny();

    const { events } = this.deps;
    const actor = { id: viewer.userId, login: viewer.login };
    return events.transaction(em, async (tx) => {
      // Decided on the locked row: of two concurrent closes, only the first is a transition.
      const issue = await lockForUpdate(tx, loaded, 'issue');
      const nextState = input.state ?? issue.state;
      const reason = input.stateReason ?? undefined;
      if (reason === IssueStateReason.REOPENED && nextState !== IssueState.OPEN) {
        throw invalid('stateReason', 'invalid', 'reopened applies to open issues only');
      }
      if ((reason === IssueStateReason.COMPLETED || reason === IssueStateReason.NOT_PLANNED) && nextState !== IssueState.CLOSED) {
        throw invalid('stateReason', 'invalid', `${reason} applies to closed issues only`);
      }

      const changes: Record<string, { from: unknown }> = {};
      applyTitleAndBody(issue, input, changes);
      let transition: 'closed' | 'reopened' | null = null;
      if (nextState !== issue.state) {
        transition = nextState === IssueState.CLOSED ? 'closed' : 'reopened';
        issue.state = nextState;
        issue.closedAt = nextState === IssueState.CLOSED ? new Date() : null;
        issue.stateReason = reason ?? (nextState === IssueState.CLOSED ? IssueStateReason.COMPLETED : IssueStateReason.REOPENED);
      } else if (reason !== undefined && reason !== issue.stateReason) {
        changes.state_reason = { from: issue.stateReason };
        issue.stateReason = reason;
      }
      if (!transition && Object.keys(changes).length === 0) return issue;
      issue.updatedAt = new Date();
      await tx.flush();
      if (Object.keys(changes).length) {
        await events.record(tx, {
          type: 'issues',
          action: 'updated',
          repository: repo,
          actor,
          fields: { issue: await issueRecord(tx, issue), changes },
        });
      }
      if (transition) {
        await events.record(tx, {
          type: 'issues',
          action: transition,
          repository: repo,
          actor,
          fields: { issue: await issueRecord(tx, issue) },
        });
        await countOpen(tx, repo.id, 'open_issues', transition === 'closed' ? -1 : 1); // last: it locks the counters that creation takes too
      }
      return issue;
    });
  }
}

/** An issue not yet numbered as a row of `issues`: its columns but `number`. */
function issueRow(issue: Issue) {
  return {
    id: issue.id,
    repository_id: issue.repository.id,
    title: issue.title,
    body: issue.body,
    state: issue.state,
    state_reason: issue.stateReason,
    user_id: issue.user.id,
    comments: issue.comments,
    created_at: issue.createdAt.toISOString(),
    updated_at: issue.updatedAt.toISOString(),
    closed_at: issue.closedAt?.toISOString() ?? null,
  };
}
