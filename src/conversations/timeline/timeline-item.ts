import { Field, ID, ObjectType, registerEnumType } from 'type-graphql';
import { Actor } from '../../auth/user.entity.js';

/** What happened, in the order an issue or pull request page shows it top to bottom. */
export enum TimelineItemKind {
  COMMENTED = 'commented',
  REVIEWED = 'reviewed',
  HEAD_PUSHED = 'head_pushed',
  RENAMED = 'renamed',
  LABELED = 'labeled',
  UNLABELED = 'unlabeled',
  ASSIGNED = 'assigned',
  UNASSIGNED = 'unassigned',
  REVIEW_REQUESTED = 'review_requested',
  REVIEW_REQUEST_REMOVED = 'review_request_removed',
  CLOSED = 'closed',
  REOPENED = 'reopened',
  MERGED = 'merged',
}
registerEnumType(TimelineItemKind, {
  name: 'TimelineItemKind',
  valuesConfig: {
    COMMENTED: { description: 'A comment (`comment`).' },
    REVIEWED: { description: 'A review of a pull request (`review`).' },
    HEAD_PUSHED: { description: "Commits pushed to a pull request's head branch (`beforeSha`, `afterSha`, `forced`)." },
    RENAMED: { description: 'The title changed (`titleFrom`, `titleTo`).' },
    LABELED: { description: '`label` added.' },
    UNLABELED: { description: '`label` removed.' },
    ASSIGNED: { description: '`assignee` assigned.' },
    UNASSIGNED: { description: '`assignee` unassigned.' },
    REVIEW_REQUESTED: { description: "`requestedReviewer`'s review requested." },
    REVIEW_REQUEST_REMOVED: { description: "`requestedReviewer`'s review request removed." },
    CLOSED: { description: 'Closed (`stateReason` for an issue).' },
    REOPENED: { description: 'Reopened.' },
    MERGED: { description: 'Merged (`mergeCommitSha`).' },
  },
});

@ObjectType('TimelineLabel', { description: 'A label as it was when added or removed.' })
export class TimelineLabel {
  @Field()
  name!: string;

  @Field()
  color!: string;
}

/**
 * One entry of an issue's or pull request's timeline. `kind` says which of the optional fields it
 * fills; the others are null.
 */
@ObjectType('TimelineItem')
export class TimelineItem {
  @Field(() => ID)
  id!: string;

  @Field(() => TimelineItemKind)
  kind!: TimelineItemKind;

  @Field(() => Actor, { description: 'Who did it.' })
  actor!: Actor;

  @Field()
  createdAt!: Date;

  /** The comment a `commented` item shows (its field resolver loads it). */
  commentId!: string | null;

  /** The review a `reviewed` item shows (its field resolver loads it). */
  reviewId!: string | null;

  @Field(() => TimelineLabel, { nullable: true })
  label!: TimelineLabel | null;

  @Field(() => Actor, { nullable: true })
  assignee!: Actor | null;

  @Field(() => Actor, { nullable: true })
  requestedReviewer!: Actor | null;

  @Field(() => String, { nullable: true })
  beforeSha!: string | null;

  @Field(() => String, { nullable: true })
  afterSha!: string | null;

  @Field(() => Boolean, { nullable: true })
  forced!: boolean | null;

  @Field(() => String, { nullable: true, description: 'Why an issue closed or reopened (completed, not_planned, reopened).' })
  stateReason!: string | null;

  @Field(() => String, { nullable: true })
  mergeCommitSha!: string | null;

  @Field(() => String, { nullable: true })
  titleFrom!: string | null;

  @Field(() => String, { nullable: true })
  titleTo!: string | null;
}
