import { AccessToken } from '../auth/access-token.entity.js';
import { User } from '../auth/user.entity.js';
import { DomainEvent } from '../events/domain-event.entity.js';
import { PushJournal } from '../git/push-journal.entity.js';
import { GitRef } from '../git/refs.entity.js';
import { Issue } from '../issues/issue.entity.js';
import { PullRequest } from '../pulls/pull-request.entity.js';
import { Review } from '../pulls/review.entity.js';
import { Collaborator } from '../repositories/collaborator.entity.js';
import { Repository } from '../repositories/repository.entity.js';
import { Delivery, DeliveryAttemptRecord } from '../webhooks/delivery.entity.js';
import { Webhook } from '../webhooks/webhook.entity.js';

/** Every MikroORM entity; a capability adds its entities here. */
export const ENTITIES = [
  User,
  AccessToken,
  Repository,
  Collaborator,
  Issue,
  PullRequest,
  Review,
  DomainEvent,
  GitRef,
  PushJournal,
  Webhook,
  Delivery,
  DeliveryAttemptRecord,
];
