import { randomInt } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { mayChangeAuthored, Permission, requireScope } from '../../auth/permissions.js';
import { DomainError, notFound, Problems } from '../../errors/domain-error.js';
import type { EventRecorder } from '../../events/event-recorder.js';
import type { Connection, Page } from '../../graphql/pagination.js';
import { newId } from '../../ids.js';
import type { Principal } from '../../principal.js';
import { checkTitleAndBody } from '../../repositories/names.js';
import type { Repository } from '../../repositories/repository.entity.js';
import type { Repositories } from '../../repositories/repository.service.js';
import { findConversation } from '../conversation-target.js';
import type { DescribeSubject } from './comment-subject.js';
import { commentFields } from './comment.payload.js';
import { commentOf, listComments, readComment } from './comment-reads.js';
import type { AddCommentInput, CommentRecord, DeleteCommentInput, UpdateCommentInput } from './comment.types.js';
import { countRemoved, deleteRow, insertComment, replaceBody } from './comment-writes.js';

/**
 * The comments use cases. Anyone who can read a repository may comment on its issues and pull
 * requests (with the repo scope, as opening an issue); the author or a writer may edit a comment;
 * the author, a writer or an admin may delete it. Each change records an `issue_comment` event.
 */
export class Comments {
  constructor(
    private readonly deps: {
      events: EventRecorder;
      repositories: Repositories;
      describeSubject: DescribeSubject;
    },
  ) {}

  /** The comments of issue or pull request `number`, oldest first; NOT_FOUND when the number is neither. */
  async list(em: EntityManager, repo: Repository, number: number, page: Page): Promise<Connection<CommentRecord>> {
    const target = await findConversation(em, repo, number);
    return listComments(em, target, page);
  }

  async find(em: EntityManager, repo: Repository, id: string): Promise<CommentRecord> {
    const comment = await readComment(em, repo.id, id);
    if (!comment) throw notFound('comment');
    return comment;
  }

  /**
   * Adding a comment: the comment, the conversation's count and the `created` event are written
   * by one statement (comment-writes.ts), shared with the comments on the same conversation that
   * arrive meanwhile.
   */
  async add(em: EntityManager, viewer: Principal, input: AddCommentInput): Promise<CommentRecord> {
    // Written by its own statement (comment-writes.ts): nothing relates an entity to the repository.
    const repo = await this.deps.repositories.findUntracked(em, viewer, input.repositoryId, Permission.READ, 'repo');
    checkBody(input.body);
    const subject = await this.deps.describeSubject(em, repo, input.number);
    const now = new Date();
    const comment: CommentRecord = {
      id: newId('cmt'),
      body: input.body,
      user: { id: viewer.userId, login: viewer.login },
      createdAt: now,
      updatedAt: now,
      issueNumber: subject.target.number,
    };
    // Stands where the payload has the count the statement reaches: negative, as no count is, and unguessable.
    const standIn = -randomInt(2 ** 47, 2 ** 48 - 1);
    const made = await insertComment({
      em,
      events: this.deps.events,
      target: subject.target,
      comment,
      event: {
        key: comment.id,
        standIn: String(standIn),
        change: {
          type: 'issue_comment',
          action: 'created',
          repository: repo,
          actor: comment.user,
          fields: commentFields(comment, subject, standIn),
        },
      },
    });
    if (!made) throw notFound('repository'); // deleted while this request ran
    return comment;
  }

  /** Editing the body: the author or a writer; `edited` carries the body before. */
  async update(em: EntityManager, viewer: Principal, input: UpdateCommentInput): Promise<CommentRecord> {
    const { repo, comment } = await this.changeable(em, viewer, input.repositoryId, input.commentId, 'edit');
    checkBody(input.body);
    if (input.body === comment.body) return comment;
    const { events } = this.deps;
    return events.transaction(em, async (tx) => {
      const row = await replaceBody(tx, repo.id, comment.id, input.body, new Date());
      if (!row) throw notFound('comment'); // deleted meanwhile
      const edited = commentOf(row);
      const subject = await this.deps.describeSubject(tx, repo, edited.issueNumber);
      await events.record(tx, {
        type: 'issue_comment',
        action: 'edited',
        repository: repo,
        actor: { id: viewer.userId, login: viewer.login },
        fields: { ...commentFields(edited, subject, subject.issue.comments), changes: { body: { from: row.old_body } } },
      });
      return edited;
    });
  }

  /** Deleting: the author, a writer or an admin; the conversation's count goes down in the same transaction. */
  async remove(em: EntityManager, viewer: Principal, input: DeleteCommentInput): Promise<boolean> {
    const { repo, comment } = await this.changeable(em, viewer, input.repositoryId, input.commentId, 'delete');
    const { events } = this.deps;
    await events.transaction(em, async (tx) => {
      const row = await deleteRow(tx, repo.id, comment.id);
      if (!row) throw notFound('comment'); // deleted meanwhile
      const deleted = commentOf(row);
      const subject = await this.deps.describeSubject(tx, repo, deleted.issueNumber);
      const count = await countRemoved(tx, subject.target);
      await events.record(tx, {
        type: 'issue_comment',
        action: 'deleted',
        repository: repo,
        actor: { id: viewer.userId, login: viewer.login },
        fields: commentFields(deleted, subject, count),
      });
    });
    return true;
  }

  /** The repository and the comment, if the viewer may change it: NOT_FOUND, then FORBIDDEN (scope, then authorship or write). */
  private async changeable(em: EntityManager, viewer: Principal, repositoryId: string, commentId: string, verb: string) {
    const repo = await this.deps.repositories.find(em, viewer, repositoryId, Permission.READ);
    const comment = await this.find(em, repo, commentId);
    requireScope(viewer, 'repo');
    if (!(await mayChangeAuthored(em, viewer, repo, comment.user.id))) {
      throw new DomainError('FORBIDDEN', `only the author or a collaborator with write access may ${verb} this comment`);
    }
    return { repo, comment };
  }
}

/** A comment's body: not blank, and bounded as an issue's body is. */
function checkBody(body: string): void {
  const problems = new Problems();
  if (body.trim() === '') problems.add('body', 'missing', 'body cannot be blank');
  else checkTitleAndBody(problems, undefined, body);
  problems.throwIfAny();
}
