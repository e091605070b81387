import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import type { ConversationFilterArgs } from '../conversations/conversation-filter.js';
import { disableAutoMerge, enableAutoMerge } from './auto-merge.js';
import { AutoMerger } from './auto-merger.js';
import type { Principal } from '../principal.js';
import type { Repository } from '../repositories/repository.entity.js';
import type { Page } from '../graphql/pagination.js';
import { mergePullRequest } from './merge.js';
import type { PullDeps } from './pull-request.deps.js';
import type {
  AutoMergeInput,
  CreatePullRequestInput,
  MergePullRequestInput,
  PullRequestStateFilter,
  SubmitReviewInput,
  UpdatePullRequestInput,
} from './pull-request.inputs.js';
import { listPullRequests, pullRequestCommits, pullRequestFiles, readPullRequest } from './pull-request.reads.js';
import { createPullRequest, updatePullRequest } from './pull-request.writes.js';
import { pullRequestView, type PullRequestView } from './pull-request.view.js';
import { reviewPages, reviewsById, submitReview } from './review.service.js';
import type { ReviewRequestsInput } from './review-request.inputs.js';
import { removeReviewRequests, requestReviewers } from './review-requests.js';

/**
 * The pull request use cases with their collaborators bound, as transports
 * call them: (entity manager, acting user, input). Each is a function of its
 * own file (reads, writes, merge, reviews); changes answer with the view clients see.
 */
export class PullRequests {
  /** Merges pull requests with auto-merge enabled once they are ready (its jobs and wakes are wired at start-up). */
  readonly autoMerger: AutoMerger;

  constructor(
    private readonly deps: PullDeps,
    orm: MikroORM,
  ) {
    this.autoMerger = new AutoMerger(orm, deps);
  }

  async list(em: EntityManager, repo: Repository, state: PullRequestStateFilter, filter: Partial<ConversationFilterArgs>, page: Page) {
    const listed = await listPullRequests(em, repo, state, filter, page);
    await this.deps.requirements.refine(em, repo.id, listed.nodes);
    return listed;
  }

  async read(em: EntityManager, repo: Repository, number: number) {
    return this.refined(em, await readPullRequest(em, repo, number));
  }

  commits(viewer: Principal, pr: PullRequestView, page: Page) {
    return pullRequestCommits(this.deps.git, viewer, pr, page);
  }

  files(viewer: Principal, pr: PullRequestView, page: Page) {
    return pullRequestFiles(this.deps.git, viewer, pr, page);
  }

  async create(em: EntityManager, viewer: Principal, input: CreatePullRequestInput) {
    return this.refined(em, pullRequestView(await createPullRequest(this.deps, em, viewer, input)));
  }

  async update(em: EntityManager, viewer: Principal, input: UpdatePullRequestInput) {
    return this.refined(em, pullRequestView(await updatePullRequest(this.deps, em, viewer, input)));
  }

  /** The view with what the base branch's rule says of its `mergeable_state`. */
  private async refined(em: EntityManager, view: PullRequestView): Promise<PullRequestView> {
    await this.deps.requirements.refine(em, view.repositoryId, [view]);
    return view;
  }

  merge(em: EntityManager, viewer: Principal, input: MergePullRequestInput) {
    return mergePullRequest(this.deps, em, viewer, input);
  }

  async enableAutoMerge(em: EntityManager, viewer: Principal, input: AutoMergeInput) {
    const view = await this.refined(em, pullRequestView(await enableAutoMerge(this.deps, em, viewer, input)));
    this.autoMerger.wake(view.repositoryId);
    return view;
  }

  async disableAutoMerge(em: EntityManager, viewer: Principal, input: AutoMergeInput) {
    return this.refined(em, pullRequestView(await disableAutoMerge(this.deps, em, viewer, input)));
  }

  reviewsById(em: EntityManager, ids: readonly string[]) {
    return reviewsById(em, ids);
  }

  /** A page of the reviews of each pull request, newest first. */
  reviews(em: EntityManager, pullRequestIds: readonly string[], page: Page) {
    return reviewPages(em, pullRequestIds, page);
  }

  review(em: EntityManager, viewer: Principal, input: SubmitReviewInput) {
    return submitReview(this.deps, em, viewer, input);
  }

  async requestReviewers(em: EntityManager, viewer: Principal, input: ReviewRequestsInput) {
    return this.read(em, await requestReviewers(this.deps, em, viewer, input), input.number);
  }

  async removeReviewRequests(em: EntityManager, viewer: Principal, input: ReviewRequestsInput) {
    return this.read(em, await removeReviewRequests(this.deps, em, viewer, input), input.number);
  }
}
