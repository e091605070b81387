import type { MikroORM } from '@mikro-orm/postgresql';
import type { Response } from 'express';
import type { Accounts } from './auth/accounts.service.js';
import type { TokenAuthenticator } from './auth/authenticate.js';
import type { Collaborators } from './collaborators/collaborator.service.js';
import type { Config } from './config.js';
import type { Comments } from './conversations/comments/comments.service.js';
import type { Assignees } from './conversations/assignees/assignee.service.js';
import type { Labels } from './conversations/labels/label.service.js';
import type { EventRecorder } from './events/event-recorder.js';
import type { RepositoryBrowser } from './git/browse.service.js';
import type { RefTransactions } from './git/refs/ref-transaction.js';
import type { GitStorage } from './git/storage.js';
import type { ResolverContext } from './graphql/context.js';
import { locals } from './http/request-context.js';
import type { Issues } from './issues/issue.service.js';
import type { Logger } from './logger.js';
import type { Mergeability } from './pulls/mergeability.js';
import type { BranchProtections } from './protection/branch-protection.service.js';
import type { PullRequests } from './pulls/pull-request.service.js';
import type { ReviewComments } from './pulls/line-comments/review-comments.service.js';
import type { RateLimits } from './ratelimit/rate-limits.js';
import type { Repositories } from './repositories/repository.service.js';
import type { CommitStatuses } from './statuses/commit-status.service.js';
import type { WebhookAdmin } from './webhooks/webhook-admin.service.js';
import type { WebhookDelivery } from './webhooks/webhook-delivery.js';

/**
 * The long-lived parts of a running service, built once at start-up
 * (server.ts): the use cases of every capability, with the collaborators
 * they were given, and the runtime parts transports and jobs use. Each
 * resolver names the part it uses; git over HTTP takes the parts it needs.
 */
export interface Services {
  config: Config;
  log: Logger;
  orm: MikroORM;
  git: GitStorage;
  /** The one way refs move (receive-pack, merges, auto_init, reconciliation). */
  refs: RefTransactions;
  events: EventRecorder;
  /** Reading a repository's git data: branches, tags, history, trees, files. */
  browse: RepositoryBrowser;
  auth: TokenAuthenticator;
  /** Webhook delivery: the fan-out of events, the delivery jobs, the secret box. */
  webhookDelivery: WebhookDelivery;
  /** Background mergeability checks of pull requests. */
  mergeability: Mergeability;
  accounts: Accounts;
  repositories: Repositories;
  collaborators: Collaborators;
  issues: Issues;
  /** Comments on issues and pull requests. */
  comments: Comments;
  /** A repository's labels, and the labels of its issues and pull requests. */
  labels: Labels;
  /** Who is assigned to issues and pull requests. */
  assignees: Assignees;
  pulls: PullRequests;
  /** Comments on lines of pull requests' diffs, their threads. */
  reviewComments: ReviewComments;
  /** Branch rules: managed here, enforced where refs move (protection/branch-rules.ts). */
  protections: BranchProtections;
  /** Commit statuses: posting them, listing them, their combined state. */
  statuses: CommitStatuses;
  /** The webhook use cases: managing webhooks, reading and redelivering their deliveries. */
  webhookAdmin: WebhookAdmin;
  /** Per-user and per-address budgets, shared by the processes on one database. */
  rateLimits: RateLimits;
}

/** The context of every resolver (GraphQL over HTTP and the REST facade alike). */
export type RequestContext = ResolverContext<Services>;

/** The context of an authenticated request; its entity manager is a fresh fork. */
export function requestContext(services: Services, res: Response): RequestContext {
  const { viewer, requestId } = locals(res);
  if (!viewer) throw new Error('requestContext before authentication');
  return { viewer, requestId, services, em: services.orm.em.fork() };
}
