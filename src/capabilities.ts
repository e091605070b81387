import { AccessToken } from './auth/access-token.entity.js';
import { AuthResolver } from './auth/auth.resolver.js';
import { User } from './auth/user.entity.js';
import { UserFieldsResolver } from './auth/user.resolver.js';
import { Collaborator } from './collaborators/collaborator.entity.js';
import { CollaboratorResolver } from './collaborators/collaborator.resolver.js';
import { IssueComment } from './conversations/comments/comment.entity.js';
import { CommentResolver, RepositoryCommentsResolver } from './conversations/comments/comment.resolver.js';
import { IssueCommentsResolver } from './issues/issue-comments.resolver.js';
import { PullRequestCommentsResolver } from './pulls/pull-comments.resolver.js';
import { ConversationAssignee } from './conversations/assignees/assignee.entity.js';
import { AssigneeResolver } from './conversations/assignees/assignee.resolver.js';
import { ConversationLabel, Label } from './conversations/labels/label.entity.js';
import { ConversationLabelsResolver, LabelResolver, RepositoryLabelsResolver } from './conversations/labels/label.resolver.js';
import { DomainEvent } from './events/domain-event.entity.js';
import { GitResolver } from './git/git.resolver.js';
import { PushJournal } from './git/refs/push-journal.entity.js';
import { GitRef } from './git/refs/refs.entity.js';
import { Issue } from './issues/issue.entity.js';
import { BranchProtection } from './protection/branch-protection.entity.js';
import { BranchProtectionResolver, RepositoryProtectionResolver } from './protection/branch-protection.resolver.js';
import { IssueResolver, RepositoryIssuesResolver } from './issues/issue.resolver.js';
import { IssueTimelineResolver } from './issues/issue-timeline.resolver.js';
import { TimelineCommentResolver } from './conversations/timeline/timeline-comment.resolver.js';
import { PullRequestTimelineResolver, TimelineReviewResolver } from './pulls/pull-timeline.resolver.js';
import { IssueConversationResolver } from './issues/issue-conversation.resolver.js';
import { PullRequest } from './pulls/pull-request.entity.js';
import { PullRequestResolver, RepositoryPullsResolver } from './pulls/pull-request.resolver.js';
import { Review } from './pulls/review.entity.js';
import { ReviewRequest } from './pulls/review-request.entity.js';
import { PullConversationResolver } from './pulls/pull-conversation.resolver.js';
import { ReviewComment, ReviewThread } from './pulls/line-comments/review-comment.entity.js';
import {
  PullRequestReviewCommentsResolver,
  RepositoryReviewCommentResolver,
  ReviewCommentResolver,
  ReviewCommentsOfReviewResolver,
  ReviewThreadResolver,
} from './pulls/line-comments/review-comment.resolver.js';
import { Repository } from './repositories/repository.entity.js';
import { CommitStatus } from './statuses/commit-status.entity.js';
import { CommitStatusFieldsResolver, CommitStatusResolver, PullRequestStatusResolver } from './statuses/commit-status.resolver.js';
import { RepositoryResolver } from './repositories/repository.resolver.js';
import { Delivery, DeliveryAttemptRecord } from './webhooks/delivery.entity.js';
import { Webhook } from './webhooks/webhook.entity.js';
import { DeliveryResolver, RepositoryWebhooksResolver, WebhookResolver } from './webhooks/webhook.resolver.js';

/** What every capability contributes to the one database and the one schema; a new capability adds itself here. */

export const ENTITIES = [
  User,
  AccessToken,
  Repository,
  Collaborator,
  Label,
  ConversationLabel,
  ConversationAssignee,
  Issue,
  PullRequest,
  Review,
  ReviewRequest,
  ReviewThread,
  ReviewComment,
  BranchProtection,
  CommitStatus,
  IssueComment,
  DomainEvent,
  GitRef,
  PushJournal,
  Webhook,
  Delivery,
  DeliveryAttemptRecord,
];

export const RESOLVERS = [
  AuthResolver,
  UserFieldsResolver,
  RepositoryResolver,
  CollaboratorResolver,
  LabelResolver,
  RepositoryLabelsResolver,
  ConversationLabelsResolver,
  AssigneeResolver,
  IssueResolver,
  RepositoryIssuesResolver,
  IssueTimelineResolver,
  TimelineCommentResolver,
  PullRequestResolver,
  RepositoryPullsResolver,
  PullRequestTimelineResolver,
  TimelineReviewResolver,
  IssueConversationResolver,
  PullRequestResolver,
  RepositoryPullsResolver,
  PullConversationResolver,
  ReviewCommentResolver,
  ReviewThreadResolver,
  PullRequestReviewCommentsResolver,
  ReviewCommentsOfReviewResolver,
  RepositoryReviewCommentResolver,
  BranchProtectionResolver,
  RepositoryProtectionResolver,
  GitResolver,
  CommitStatusResolver,
  CommitStatusFieldsResolver,
  PullRequestStatusResolver,
  WebhookResolver,
  RepositoryWebhooksResolver,
  DeliveryResolver,
  CommentResolver,
  RepositoryCommentsResolver,
  IssueCommentsResolver,
  PullRequestCommentsResolver,
] as const;
