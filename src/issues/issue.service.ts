import { Field, ID, InputType, Int, registerEnumType } from 'type-graphql';
import { mayChangeAuthored, Permission } from '../auth/permissions.js';
import { grants } from '../auth/scopes.js';
import { lockForUpdate } from '../db/lock-row.js';
import { User } from '../auth/user.entity.js';
import type { RequestContext } from '../context.js';
import { DomainError, invalid, notFound, Problems } from '../errors/domain-error.js';
import { connection, type Connection, type Page } from '../graphql/pagination.js';
import { applyTitleAndBody, checkTitleAndBody } from '../repositories/names.js';
import { allocateNumber } from '../repositories/numbering.js';
import type { Repository } from '../repositories/repository.entity.js';
import { repositoryFor } from '../repositories/repository.service.js';
import { Issue, IssueState, IssueStateReason } from './issue.entity.js';
import { issueRecord } from './issue.record.js';

export enum IssueStateFilter {
  OPEN = 'open',
  CLOSED = 'closed',
  ALL = 'all',
}
registerEnumType(IssueStateFilter, { name: 'IssueStateFilter' });

@InputType()
export class CreateIssueInput {
  @Field(() => ID)
  repositoryId!: string;

  @Field()
  title!: string;

  @Field(() => String, { nullable: true })
  body?: string | null;
}

@InputType()
export class UpdateIssueInput {
  @Field(() => ID)
  repositoryId!: string;

  @Field(() => Int)
  number!: number;

  @Field(() => String, { nullable: true })
  title?: string | null;

  @Field(() => String, { nullable: true, description: 'null clears it.' })
  body?: string | null;

  @Field(() => IssueState, { nullable: true })
  state?: IssueState | null;

  @Field(() => IssueStateReason, { nullable: true })
  stateReason?: IssueStateReason | null;
}

export async function listIssues(ctx: RequestContext, repo: Repository, state: IssueStateFilter, page: Page): Promise<Connection<Issue>> {
  const where = state === IssueStateFilter.ALL ? { repository: repo } : { repository: repo, state: state as string as IssueState };
  const [issues, total] = await ctx.em.findAndCount(Issue, where, {
    populate: ['user'],
    orderBy: { createdAt: 'desc', id: 'desc' },
    limit: page.limit,
    offset: page.offset,
  });
  return connection(issues, total, page);
}

export async function findIssue(ctx: RequestContext, repo: Repository, number: number): Promise<Issue> {
  const issue = await ctx.em.findOne(Issue, { repository: repo, number }, { populate: ['user'] });
  if (!issue) throw notFound('issue');
  return issue;
}

/**
 * Opening an issue needs read access to the repository (as on GitHub: anyone
 * who can see a repository can report on it) and a token with the repo scope.
 */
export async function createIssue(ctx: RequestContext, input: CreateIssueInput): Promise<Issue> {
  const repo = await repositoryFor(ctx, input.repositoryId, Permission.READ);
  if (!grants(ctx.viewer.scopes, 'repo')) throw new DomainError('FORBIDDEN', 'this token lacks the repo scope');
  const problems = new Problems();
  checkTitleAndBody(problems, input.title, input.body);
  problems.throwIfAny();

  const { events } = ctx.services;
  return events.transaction(ctx.em, async (em) => {
    const author = await em.findOneOrFail(User, { id: ctx.viewer.userId });
    const number = await allocateNumber(em, repo.id);
    const issue = em.create(Issue, { repository: repo, number, title: input.title.trim(), body: input.body ?? null, user: author });
    await events.record(em, { type: 'issues', action: 'opened', repository: repo, actor: author, fields: { issue: issueRecord(issue) } });
    return issue;
  });
}

/**
 * Editing, closing and reopening: the issue's author may do it, as may anyone
 * with write access. Each kind of change records its own event: `updated`
 * (title/body, with `changes`), then `closed` or `reopened`.
 */
export async function updateIssue(ctx: RequestContext, input: UpdateIssueInput): Promise<Issue> {
  const repo = await repositoryFor(ctx, input.repositoryId, Permission.READ);
  const loaded = await findIssue(ctx, repo, input.number);
  if (!grants(ctx.viewer.scopes, 'repo')) throw new DomainError('FORBIDDEN', 'this token lacks the repo scope');
  if (!(await mayChangeAuthored(ctx.em, ctx.viewer, repo, loaded.user.id))) {
    throw new DomainError('FORBIDDEN', 'only the author or a collaborator with write access may change this issue');
  }
  const problems = new Problems();
  checkTitleAndBody(problems, input.title, input.body);
  if (input.state === null) problems.add('state', 'missing', 'state cannot be null');
  if (input.stateReason === null) problems.add('stateReason', 'missing', 'state_reason cannot be null');
  problems.throwIfAny();

  const { events } = ctx.services;
  const actor = { id: ctx.viewer.userId, login: ctx.viewer.login };
  return events.transaction(ctx.em, async (em) => {
    // Decided on the locked row: of two concurrent closes, only the first is a transition.
    const issue = await lockForUpdate(em, loaded, 'issue');
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
    await em.flush();
    if (Object.keys(changes).length) {
      await events.record(em, {
        type: 'issues',
        action: 'updated',
        repository: repo,
        actor,
        fields: { issue: issueRecord(issue), changes },
      });
    }
    if (transition) {
      await events.record(em, { type: 'issues', action: transition, repository: repo, actor, fields: { issue: issueRecord(issue) } });
    }
    return issue;
  });
}
