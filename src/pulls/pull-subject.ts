import type { EntityManager } from '@mikro-orm/postgresql';
import type { CommentSubject } from '../conversations/comments/comment-subject.js';
import { actorRef, iso } from '../events/payloads.js';
import type { Repository } from '../repositories/repository.entity.js';
import { PullRequest, PullRequestState } from './pull-request.entity.js';
import { pullRequestRecord } from './pull-request.payload.js';
import type { PullRecordFacts } from './pull-request.ports.js';

/**
 * The pull request `number` as the subject of a comment's event, or null when `number` is not a
 * pull request: as `issue`, the issue-shaped record of it (a merged one is closed) with
 * `pull_request: {number}`; as `pull_request`, its record as its own events carry it.
 */
export function pullSubject(facts: PullRecordFacts) {
  return async (em: EntityManager, repo: Repository, number: number): Promise<CommentSubject | null> => {
    const pr = await em.findOne(PullRequest, { repository: repo, number }, { populate: ['user', 'mergedBy', 'autoMergeEnabledBy'] });
    if (!pr) return null;
    const record = await pullRequestRecord(facts, em, pr);
    return {
      target: { kind: 'pull', id: pr.id, number, authorId: pr.user.id, commentCount: pr.commentCount, repository: repo },
      issue: {
        id: pr.id,
        number: pr.number,
        title: pr.title,
        body: pr.body,
        state: pr.state === PullRequestState.OPEN ? 'open' : 'closed',
        user: actorRef(pr.user),
        comments: pr.commentCount,
        created_at: iso(pr.createdAt),
        updated_at: iso(pr.updatedAt),
        closed_at: iso(pr.closedAt),
        repository_id: repo.id,
        labels: record.labels,
        assignees: record.assignees,
        pull_request: { number: pr.number },
      },
      pullRequest: record,
    };
  };
}
