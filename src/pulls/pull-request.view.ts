import { Extensions, Field, ID, Int, ObjectType } from 'type-graphql';
import { TEXT_FIELD_COST } from '../graphql/limits.js';
import { Actor } from '../auth/user.entity.js';
import type { ActorRef } from '../events/payloads.js';
import { actorRef } from '../events/payloads.js';
import { MergeMethod } from './merge-commits.js';
import { MergeableState, PullRequestState } from './pull-request.entity.js';

/** One side of a pull request: a branch and the commit it pointed at. */
@ObjectType('PullRequestBranch')
export class PullRequestBranch {
  @Field({ description: 'Branch name.' })
  ref!: string;

  @Field({ description: 'While open, the branch tip; once closed or merged, as it was then.' })
  sha!: string;
}

/** Auto-merge, while enabled: who enabled it (the merger) and how it will merge. */
@ObjectType('AutoMerge')
export class AutoMergeView {
  @Field(() => Actor)
  enabledBy!: ActorRef;

  @Field(() => MergeMethod)
  method!: MergeMethod;
}

/**
 * A pull request as clients see it (GraphQL, REST, webhook payloads): the
 * stored facts with what follows from them worked out once, here. Kept apart
 * from the ORM entity so that a list is read with one query into plain
 * objects, without hydrating entities it will never change.
 */
@ObjectType('PullRequest')
export class PullRequestView {
  @Field(() => ID)
  id!: string;

  @Field(() => Int, { description: 'Per repository, from the sequence shared with issues.' })
  number!: number;

  @Field()
  title!: string;

  @Extensions({ cost: TEXT_FIELD_COST })
  @Field(() => String, { nullable: true })
  body!: string | null;

  @Field(() => PullRequestState)
  state!: PullRequestState;

  @Field()
  draft!: boolean;

  @Field(() => PullRequestBranch)
  head!: PullRequestBranch;

  @Field(() => PullRequestBranch)
  base!: PullRequestBranch;

  @Field(() => Actor)
  user!: ActorRef;

  @Field()
  merged!: boolean;

  @Field(() => Date, { nullable: true })
  mergedAt!: Date | null;

  @Field(() => Actor, { nullable: true })
  mergedBy!: ActorRef | null;

  @Field(() => String, { nullable: true, description: 'The commit the merge left on the base branch (for rebase, the last one).' })
  mergeCommitSha!: string | null;

  @Field(() => Boolean, { nullable: true, description: 'null while unknown for the current head and base (computed in the background).' })
  mergeable!: boolean | null;

  @Field(() => MergeableState)
  mergeableState!: MergeableState;

  @Field(() => [String], { description: 'Paths that conflict between head and base; empty when clean or unknown.' })
  conflicts!: string[];

  @Field(() => Int, { description: 'Commits on head that base lacks.' })
  commitsCount!: number;

  @Field()
  createdAt!: Date;

  @Field()
  updatedAt!: Date;

  @Field(() => Date, { nullable: true })
  closedAt!: Date | null;

  @Field(() => AutoMergeView, { nullable: true, description: 'Set while auto-merge is enabled.' })
  autoMerge!: AutoMergeView | null;

  @Field(() => ID)
  repositoryId!: string;

  @Field(() => Int, { description: 'Number of comments.' })
  commentCount!: number;

  /** Whether the head contains the base tip (null: unknown); what `behind` is decided on, not a field. */
  baseInHead!: boolean | null;
}

/** What is stored of a pull request: the entity has these, and so does a row read for a list. */
export interface PullRequestFacts {
  id: string;
  number: number;
  title: string;
  body: string | null;
  state: PullRequestState;
  draft: boolean;
  headRef: string;
  headSha: string;
  baseRef: string;
  baseSha: string;
  user: ActorRef;
  mergedAt: Date | null;
  mergedBy: ActorRef | null;
  mergeCommitSha: string | null;
  commitsCount: number;
  /** The last mergeability result and the (base, head) pair it was computed for. */
  storedMergeable: boolean | null;
  mergeableBaseSha: string | null;
  mergeableHeadSha: string | null;
  storedConflicts: string[];
  baseInHead: boolean | null;
  createdAt: Date;
  updatedAt: Date;
  closedAt: Date | null;
  autoMerge: { enabledBy: ActorRef; method: string } | null;
  repositoryId: string;
  commentCount: number;
}

/**
 * The view of a pull request. Mergeability is reported only when the stored
 * result is for the branches as they are now and the pull request is open:
 * a result computed for an older pair is never shown.
 */
export function pullRequestView(facts: PullRequestFacts): PullRequestView {
  const current =
    facts.state === PullRequestState.OPEN && facts.mergeableBaseSha === facts.baseSha && facts.mergeableHeadSha === facts.headSha;
  const mergeable = current ? facts.storedMergeable : null;
  const mergeableState =
    facts.state === PullRequestState.OPEN && facts.draft
      ? MergeableState.DRAFT
      : mergeable === null
        ? MergeableState.UNKNOWN
        : mergeable
          ? MergeableState.CLEAN
          : MergeableState.CONFLICTING;
  return Object.assign(new PullRequestView(), {
    id: facts.id,
    number: facts.number,
    title: facts.title,
    body: facts.body,
    state: facts.state,
    draft: facts.draft,
    head: { ref: facts.headRef, sha: facts.headSha },
    base: { ref: facts.baseRef, sha: facts.baseSha },
    user: actorRef(facts.user),
    merged: facts.state === PullRequestState.MERGED,
    mergedAt: facts.mergedAt,
    mergedBy: facts.mergedBy ? actorRef(facts.mergedBy) : null,
    mergeCommitSha: facts.mergeCommitSha,
    mergeable,
    mergeableState,
    conflicts: current ? facts.storedConflicts : [],
    commitsCount: facts.commitsCount,
    createdAt: facts.createdAt,
    updatedAt: facts.updatedAt,
    closedAt: facts.closedAt,
    autoMerge: facts.autoMerge ? { enabledBy: actorRef(facts.autoMerge.enabledBy), method: facts.autoMerge.method as MergeMethod } : null,
    repositoryId: facts.repositoryId,
    commentCount: facts.commentCount,
    baseInHead: current ? facts.baseInHead : null,
  });
}
