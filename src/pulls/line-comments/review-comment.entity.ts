import { OptionalProps } from '@mikro-orm/core';
import { Entity, Index, ManyToOne, PrimaryKey, Property } from '@mikro-orm/decorators/legacy';
import { User } from '../../auth/user.entity.js';
import type { DiffSide } from '../../git/diff-positions.js';
import { newId } from '../../ids.js';
import { Repository } from '../../repositories/repository.entity.js';
import { PullRequest } from '../pull-request.entity.js';
import { Review } from '../review.entity.js';

/**
 * A conversation on lines of a pull request's diff: where it is (a path, a line or a range of one
 * side, the commit those numbers refer to), where it was first (`original_*`), whether the diff
 * moved on without it (`outdated`), and whether it is resolved. The place is the thread's, kept once
 * here: every comment of a thread is on the same lines, so a push that moves or outdates them
 * changes one row per thread, whatever the number of replies.
 */
@Entity({ tableName: 'review_threads' })
@Index({ properties: ['pullRequest', 'createdAt', 'id'] })
export class ReviewThread {
  [OptionalProps]?: 'id' | 'outdated' | 'resolved' | 'resolvedBy' | 'createdAt' | 'startLine' | 'startSide' | 'originalStartLine';

  @PrimaryKey({ type: 'text' })
  id: string = newId('rvt');

  @ManyToOne(() => Repository, { deleteRule: 'cascade' })
  repository!: Repository;

  @ManyToOne(() => PullRequest, { deleteRule: 'cascade' })
  pullRequest!: PullRequest;

  @Property({ type: 'text' })
  path!: string;

  @Property({ type: 'text' })
  side!: DiffSide;

  /** The line on `side` in the diff at `commitId`; null once outdated. */
  @Property({ type: 'integer', nullable: true })
  line!: number | null;

  @Property({ type: 'integer', nullable: true })
  startLine: number | null = null;

  @Property({ type: 'text', nullable: true })
  startSide: DiffSide | null = null;

  /** The commit whose diff `line` refers to: the head the thread was last carried to. */
  @Property({ type: 'text' })
  commitId!: string;

  @Property({ type: 'text' })
  originalCommitId!: string;

  @Property({ type: 'integer' })
  originalLine!: number;

  @Property({ type: 'integer', nullable: true })
  originalStartLine: number | null = null;

  /** The hunk's header through the commented line, as it was when the thread started. */
  @Property({ type: 'text' })
  diffHunk!: string;

  /** What identifies the commented hunk in a later diff (diff-positions.ts hunkDigest), and the lines' places in it. */
  @Property({ type: 'text' })
  hunkDigest!: string;

  @Property({ type: 'integer' })
  hunkIndex!: number;

  @Property({ type: 'integer' })
  hunkStartIndex!: number;

  @Property({ type: 'boolean' })
  outdated: boolean = false;

  @Property({ type: 'boolean' })
  resolved: boolean = false;

  @ManyToOne(() => User, { nullable: true, deleteRule: 'set null' })
  resolvedBy: User | null = null;

  @Property({ type: 'datetime' })
  createdAt: Date = new Date();
}

/** One comment of a thread: standalone, or one of a review's (`review`); a reply names the thread's first comment. */
@Entity({ tableName: 'pull_request_review_comments' })
@Index({ properties: ['pullRequest', 'createdAt', 'id'] })
@Index({ properties: ['thread', 'createdAt', 'id'] })
@Index({ properties: ['review', 'createdAt', 'id'] })
export class ReviewComment {
  [OptionalProps]?: 'id' | 'review' | 'inReplyToId' | 'createdAt' | 'updatedAt';

  @PrimaryKey({ type: 'text' })
  id: string = newId('rvc');

  @ManyToOne(() => Repository, { deleteRule: 'cascade' })
  repository!: Repository;

  @ManyToOne(() => PullRequest, { deleteRule: 'cascade' })
  pullRequest!: PullRequest;

  @ManyToOne(() => ReviewThread, { deleteRule: 'cascade' })
  thread!: ReviewThread;

  @ManyToOne(() => Review, { nullable: true, deleteRule: 'cascade' })
  review: Review | null = null;

  /** The thread's first comment; null for that comment itself. */
  @Property({ type: 'text', nullable: true })
  inReplyToId: string | null = null;

  @Property({ type: 'text' })
  body!: string;

  @ManyToOne(() => User)
  user!: User;

  @Property({ type: 'datetime' })
  createdAt: Date = new Date();

  @Property({ type: 'datetime' })
  updatedAt: Date = new Date();
}
