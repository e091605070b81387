import { LockMode } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { User } from '../../auth/user.entity.js';
import { conflict, notFound, Problems } from '../../errors/domain-error.js';
import type { RecordedChange } from '../../events/event-map.js';
import type { Principal } from '../../principal.js';
import { checkTitleAndBody } from '../../repositories/names.js';
import { Repository } from '../../repositories/repository.entity.js';
import type { PullDeps } from '../pull-request.deps.js';
import { PullRequest } from '../pull-request.entity.js';
import { pullRequestRecord } from '../pull-request.payload.js';
import type { Review } from '../review.entity.js';
import type { DraftReviewCommentInput } from './review-comment.inputs.js';
import { reviewCommentRecord } from './review-comment.payload.js';
import { ReviewComment, ReviewThread } from './review-comment.entity.js';
import { ReviewCommentView } from './review-comment.view.js';
import { placementOf, placeThreads, type PlacedThread } from './line-placement.js';

/** Problems of a shared rule, reported under another field (a review's `comments[0].body`). */
class UnderField extends Problems {
  constructor(
    private readonly into: Problems,
    private readonly field: string,
  ) {
    super();
  }
  override add(_field: string, code: string, message: string): void {
    this.into.add(this.field, code, message);
  }
}

/** A comment's body: required, not blank, and bounded as an issue's body is (the issues' rule, shared). */
export function checkCommentBody(problems: Problems, body: string | null | undefined, field = 'body'): void {
  if (!body?.trim()) problems.add(field, 'missing', 'body cannot be empty');
  else checkTitleAndBody(new UnderField(problems, field), undefined, body);
}

/** The view of a comment just written, from its thread and itself (nothing read back). */
function viewOf(thread: ReviewThread, comment: ReviewComment, user: { id: string; login: string }): ReviewCommentView {
  return Object.assign(new ReviewCommentView(), {
    id: comment.id,
    reviewId: comment.review?.id ?? null,
    threadId: thread.id,
    path: thread.path,
    line: thread.line,
    side: thread.side,
    startLine: thread.startLine,
    startSide: thread.startSide,
    commitId: thread.commitId,
    originalCommitId: thread.originalCommitId,
    originalLine: thread.originalLine,
    originalStartLine: thread.originalStartLine,
    diffHunk: thread.diffHunk,
    body: comment.body,
    user: { id: user.id, login: user.login },
    inReplyToId: comment.inReplyToId,
    createdAt: comment.createdAt,
    updatedAt: comment.updatedAt,
    outdated: thread.outdated,
    pullRequestId: thread.pullRequest.id,
    repositoryId: thread.repository.id,
  });
}

/** A thread to start: its place, and its first comment's body. */
export interface ThreadDraft {
  placed: PlacedThread;
  body: string;
}

/** The most comments one review carries: each is placed in the diff and written in the review's transaction. */
const MAX_REVIEW_COMMENTS = 100;

/**
 * The comments of a review, every one checked (body, place in the diff at the head) with the
 * review's other problems, before anything is written. Fields are `comments[i].line` and so on;
 * more than MAX_REVIEW_COMMENTS is `comments` `too_many`, and none of them is looked at.
 */
export async function planReviewComments(
  deps: PullDeps,
  viewer: Principal,
  pr: PullRequest,
  comments: DraftReviewCommentInput[] | null | undefined,
  problems: Problems,
): Promise<ThreadDraft[]> {
  if (!comments?.length) return [];
  if (comments.length > MAX_REVIEW_COMMENTS) {
    problems.add('comments', 'too_many', `a review carries at most ${MAX_REVIEW_COMMENTS} comments`);
    return [];
  }
  const field = (i: number, name: string) => `comments[${i}].${name}`;
  comments.forEach((comment, i) => checkCommentBody(problems, comment.body, field(i, 'body')));
  const placements = comments.map((comment) => placementOf(comment));
  const sides = { number: pr.number, repositoryId: pr.repository.id, baseSha: pr.baseSha, headSha: pr.headSha };
  const placed = await placeThreads(deps.git, viewer, sides, pr.headSha, placements, problems, field);
  // placeThreads keeps the order of the placements it could place: all of them when nothing is wrong.
  return placed.length === comments.length ? placed.map((thread, i) => ({ placed: thread, body: comments[i]!.body })) : [];
}

/**
 * Starts threads, each with its first comment, in `tx` (the pull request's row locked by the caller),
 * and records `pull_request_review_comment` `created` for each. Threads checked against an older head
 * than the pull request's now are refused (CONFLICT): the head moved while they were checked, and
 * the push that moved it could not carry threads it did not see.
 */
export async function startThreads(
  deps: PullDeps,
  tx: EntityManager,
  at: { repo: Repository; pr: PullRequest; user: User; review: Review | null },
  drafts: ThreadDraft[],
): Promise<ReviewCommentView[]> {
  if (!drafts.length) return [];
  if (drafts.some((draft) => draft.placed.headSha !== at.pr.headSha)) {
    throw conflict(`the head of the pull request moved while ${at.review ? 'its review' : 'the comment'} was being checked: send it again`);
  }
  const now = Date.now();
  const views = drafts.map((draft, i) => {
    const { placed } = draft;
    const createdAt = new Date(now + i); // a review's comments keep their order
    const thread = tx.create(ReviewThread, {
      repository: tx.getReference(Repository, at.repo.id),
      pullRequest: tx.getReference(PullRequest, at.pr.id),
      path: placed.path,
      side: placed.side,
      line: placed.current.line,
      startLine: placed.current.startLine,
      startSide: placed.startSide,
      commitId: placed.current.commitId,
      outdated: placed.current.outdated,
      originalCommitId: placed.commitId,
      originalLine: placed.line,
      originalStartLine: placed.startLine,
      diffHunk: placed.diffHunk,
      hunkDigest: placed.hunkDigest,
      hunkIndex: placed.hunkIndex,
      hunkStartIndex: placed.hunkStartIndex,
      createdAt,
    });
    const comment = tx.create(ReviewComment, {
      repository: tx.getReference(Repository, at.repo.id),
      pullRequest: tx.getReference(PullRequest, at.pr.id),
      thread,
      review: at.review,
      body: draft.body,
      user: at.user,
      createdAt,
      updatedAt: createdAt,
    });
    return viewOf(thread, comment, at.user);
  });
  await recordComments(deps, tx, at, 'created', views);
  return views;
}

/** Adds a reply to a thread in `tx` (the thread's row locked here), with its `created` event. NOT_FOUND when the thread is gone. */
export async function addReply(
  deps: PullDeps,
  tx: EntityManager,
  at: { repo: Repository; pr: PullRequest; user: User },
  threadId: string,
  body: string,
): Promise<ReviewCommentView> {
  const thread = await tx.findOne(ReviewThread, { id: threadId }, { lockMode: LockMode.PESSIMISTIC_WRITE });
  if (!thread) throw notFound('review thread');
  const [first] = await tx.execute<Array<{ id: string }>>(
    'select id from pull_request_review_comments where thread_id = ? and in_reply_to_id is null limit 1',
    [thread.id],
  );
  const comment = tx.create(ReviewComment, {
    repository: tx.getReference(Repository, at.repo.id),
    pullRequest: tx.getReference(PullRequest, at.pr.id),
    thread,
    body,
    user: at.user,
    inReplyToId: first?.id ?? null,
  });
  const view = viewOf(thread, comment, at.user);
  await recordComments(deps, tx, at, 'created', [view]);
  return view;
}

/** Records one event per comment, each with the pull request's record as it is in `tx`. */
export async function recordComments(
  deps: PullDeps,
  tx: EntityManager,
  at: { repo: Repository; pr: PullRequest; user: { id: string; login: string } },
  action: 'created' | 'deleted',
  views: ReviewCommentView[],
): Promise<void> {
  const pullRequest = await pullRequestRecord(deps, tx, at.pr);
  const changes: RecordedChange[] = views.map((view) => ({
    type: 'pull_request_review_comment',
    action,
    repository: at.repo,
    actor: at.user,
    fields: { comment: reviewCommentRecord(view), pull_request: pullRequest },
  }));
  await deps.events.recordAll(tx, changes);
}
