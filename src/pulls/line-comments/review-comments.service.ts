import { LockMode } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import { mayChangeAuthored, Permission } from '../../auth/permissions.js';
import { User } from '../../auth/user.entity.js';
import { DomainError, notFound, Problems } from '../../errors/domain-error.js';
import type { Page } from '../../graphql/pagination.js';
import type { Principal } from '../../principal.js';
import type { Repository } from '../../repositories/repository.entity.js';
import type { PullDeps } from '../pull-request.deps.js';
import { PullRequest } from '../pull-request.entity.js';
import { pullRequestRecord } from '../pull-request.payload.js';
import { findPullRequest } from '../pull-request.reads.js';
import { lockPullRequest } from '../pull-request.writes.js';
import { reviewCommentRecord } from './review-comment.payload.js';
import { commentPages, readComment, readThread } from './review-comment.reads.js';
import type {
  CreateReviewCommentInput,
  DeleteReviewCommentInput,
  ReplyToReviewThreadInput,
  UpdateReviewCommentInput,
} from './review-comment.inputs.js';
import { ReviewComment } from './review-comment.entity.js';
import type { ReviewCommentView, ReviewThreadView } from './review-comment.view.js';
import { commentCommit, placementOf, placeThreads } from './line-placement.js';
import { addReply, checkCommentBody, recordComments, startThreads } from './review-comments.writes.js';

/**
 * The use cases of comments on lines: making one (a new thread, or a reply), editing and deleting
 * one, resolving a thread, and reading them. Permissions are those of comments on issues: anyone
 * who can read the repository comments (with the `repo` scope), the author or a writer edits, the
 * author, a writer or an admin deletes; a thread is resolved by the pull request's author or a writer.
 */
export class ReviewComments {
  constructor(private readonly deps: PullDeps) {}

  /** A comment of a readable repository; NOT_FOUND when the repository has none by that id. */
  async read(em: EntityManager, repo: Repository, id: string): Promise<ReviewCommentView> {
    const comment = await readComment(em, repo.id, id);
    if (!comment) throw notFound('review comment');
    return comment;
  }

  /** A pull request's comments on lines, oldest first. */
  async listOfPull(em: EntityManager, pullRequestId: string, page: Page) {
    return (await commentPages(em, 'pull_request_id', [pullRequestId], page))[0]!;
  }

  /**
   * A comment on lines of the pull request's diff at `commitId` (default: its head), starting a
   * thread; or, with `inReplyTo` (any comment of the same pull request), a reply joining that
   * comment's thread, on its place. Every problem is reported at once, before anything is written.
   * On an older commit than the head, the thread is at once carried to the head or outdated, as a
   * push would do; the head moved while the comment was checked, CONFLICT (send it again).
   */
  async create(em: EntityManager, viewer: Principal, input: CreateReviewCommentInput): Promise<ReviewCommentView> {
    const repo = await this.deps.repositories.find(em, viewer, input.repositoryId, Permission.READ, 'repo');
    const pr = await findPullRequest(em, repo, input.number);
    const problems = new Problems();
    checkCommentBody(problems, input.body);
    if (input.inReplyTo != null) {
      const parent = await readComment(em, repo.id, input.inReplyTo);
      if (!parent || parent.pullRequestId !== pr.id) {
        problems.add('inReplyTo', 'not_found', `no comment ${input.inReplyTo.slice(0, 64)} on pull request #${pr.number}`);
      }
      problems.throwIfAny();
      return this.replyOn(em, viewer, repo, pr, parent!.threadId, input.body);
    }
    const sides = { number: pr.number, repositoryId: repo.id, baseSha: pr.baseSha, headSha: pr.headSha };
    const commitId = await commentCommit(this.deps.git, sides, input.commitId, problems);
    const placed = !commitId
      ? []
      : await placeThreads(this.deps.git, viewer, sides, commitId, [placementOf(input)], problems, (_, name) => name);
    problems.throwIfAny();
    return this.deps.events.transaction(em, async (tx) => {
      // Locked, the head cannot move before the thread is written (a push then carries it); moved since
      // the diff was read, startThreads refuses it.
      const locked = await lockPullRequest(tx, pr);
      const user = await tx.findOneOrFail(User, { id: viewer.userId });
      const at = { repo, pr: locked, user, review: null };
      const [view] = await startThreads(this.deps, tx, at, [{ placed: placed[0]!, body: input.body }]);
      return view!;
    });
  }

  /** A reply to a thread, by the thread's id (GraphQL's way to reply). */
  async reply(em: EntityManager, viewer: Principal, input: ReplyToReviewThreadInput): Promise<ReviewCommentView> {
    const thread = await readThread(em, input.threadId);
    if (!thread) throw notFound('review thread');
    const repo = await this.deps.repositories.find(em, viewer, thread.repositoryId, Permission.READ, 'repo');
    const problems = new Problems();
    checkCommentBody(problems, input.body);
    problems.throwIfAny();
    const pr = await em.findOneOrFail(PullRequest, { id: thread.pullRequestId }, { populate: ['user', 'mergedBy'] });
    return this.replyOn(em, viewer, repo, pr, thread.id, input.body);
  }

  private replyOn(em: EntityManager, viewer: Principal, repo: Repository, pr: PullRequest, threadId: string, body: string) {
    return this.deps.events.transaction(em, async (tx) => {
      const user = await tx.findOneOrFail(User, { id: viewer.userId });
      return addReply(this.deps, tx, { repo, pr: pr, user }, threadId, body);
    });
  }

  /** A new body, by its author or a writer; `edited` with `changes.body.from`. */
  async update(em: EntityManager, viewer: Principal, input: UpdateReviewCommentInput): Promise<ReviewCommentView> {
    const { repo, comment, pr } = await this.changeable(em, viewer, input.repositoryId, input.commentId);
    const problems = new Problems();
    checkCommentBody(problems, input.body);
    problems.throwIfAny();
    if (input.body === comment.body) return comment;
    return this.deps.events.transaction(em, async (tx) => {
      const stored = await tx.findOne(ReviewComment, { id: comment.id }, { lockMode: LockMode.PESSIMISTIC_WRITE });
      if (!stored) throw notFound('review comment');
      const from = stored.body;
      stored.body = input.body;
      stored.updatedAt = new Date();
      const view = { ...comment, body: stored.body, updatedAt: stored.updatedAt } as ReviewCommentView;
      const actor = { id: viewer.userId, login: viewer.login };
      const pullRequest = await pullRequestRecord(this.deps, tx, pr);
      await this.deps.events.record(tx, {
        type: 'pull_request_review_comment',
        action: 'edited',
        repository: repo,
        actor,
        fields: { comment: reviewCommentRecord(view), pull_request: pullRequest, changes: { body: { from } } },
      });
      return view;
    });
  }

  /**
   * Deletes a comment (its author, a writer or an admin), with its `deleted` event. A thread's first
   * comment deleted, the next oldest becomes the first (replies name it); its last deleted, the
   * thread goes too. Decided under the thread's lock on what the delete itself removed: a concurrent
   * delete in the thread may have made this comment the first since it was read.
   */
  async delete(em: EntityManager, viewer: Principal, input: DeleteReviewCommentInput): Promise<boolean> {
    const { repo, comment, pr } = await this.changeable(em, viewer, input.repositoryId, input.commentId);
    await this.deps.events.transaction(em, async (tx) => {
      await tx.execute('select id from review_threads where id = ? for update', [comment.threadId]);
      const [deleted] = await tx.execute<Array<{ in_reply_to_id: string | null }>>(
        'delete from pull_request_review_comments where id = ? returning in_reply_to_id',
        [comment.id],
      );
      if (!deleted) throw notFound('review comment');
      const [next] = await tx.execute<Array<{ id: string }>>(
        'select id from pull_request_review_comments where thread_id = ? order by created_at, id limit 1',
        [comment.threadId],
      );
      if (!next) await tx.execute('delete from review_threads where id = ?', [comment.threadId]);
      else if (deleted.in_reply_to_id === null) {
        await tx.execute(
          'update pull_request_review_comments set in_reply_to_id = case when id = ? then null else ? end where thread_id = ?',
          [next.id, next.id, comment.threadId],
        );
      }
      const gone = { ...comment, inReplyToId: deleted.in_reply_to_id } as ReviewCommentView;
      await recordComments(this.deps, tx, { repo, pr: pr, user: { id: viewer.userId, login: viewer.login } }, 'deleted', [gone]);
    });
    return true;
  }

  /** Resolves or unresolves a thread: the pull request's author or a writer; NOT_FOUND once the thread is gone. */
  async resolve(em: EntityManager, viewer: Principal, threadId: string, resolved: boolean): Promise<ReviewThreadView> {
    const thread = await readThread(em, threadId);
    if (!thread) throw notFound('review thread');
    const repo = await this.deps.repositories.find(em, viewer, thread.repositoryId, Permission.READ, 'repo');
    const [pr] = await em.execute<Array<{ user_id: string }>>('select user_id from pull_requests where id = ?', [thread.pullRequestId]);
    if (!pr || !(await mayChangeAuthored(em, viewer, repo, pr.user_id))) {
      throw new DomainError('FORBIDDEN', "only the pull request's author or a writer may resolve its threads");
    }
    // The thread may have gone with its last comment since it was read: no row changed, no thread.
    const changed = await em.execute('update review_threads set resolved = ?, resolved_by_id = ? where id = ? returning id', [
      resolved,
      resolved ? viewer.userId : null,
      thread.id,
    ]);
    const now = changed.length ? await readThread(em, thread.id) : null;
    if (!now) throw notFound('review thread');
    return now;
  }

  /** The comment, its repository and pull request, if the viewer may change it (FORBIDDEN otherwise). */
  private async changeable(em: EntityManager, viewer: Principal, repositoryId: string, commentId: string) {
    const repo = await this.deps.repositories.find(em, viewer, repositoryId, Permission.READ, 'repo');
    const comment = await this.read(em, repo, commentId);
    if (!(await mayChangeAuthored(em, viewer, repo, comment.user.id))) {
      throw new DomainError('FORBIDDEN', 'only its author or a writer may change this comment');
    }
    const pr = await em.findOneOrFail(PullRequest, { id: comment.pullRequestId }, { populate: ['user', 'mergedBy'] });
    return { repo, comment, pr };
  }
}
