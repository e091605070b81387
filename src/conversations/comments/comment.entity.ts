import { Entity, Index, ManyToOne, PrimaryKey, Property } from '@mikro-orm/decorators/legacy';
import { User } from '../../auth/user.entity.js';
import { newId } from '../../ids.js';
import { Repository } from '../../repositories/repository.entity.js';

/**
 * A comment in the conversation of an issue or a pull request, which share the number: it is keyed
 * by (repository, number), whichever of the two the number is. The rows are written and read with
 * SQL (comment-writes.ts, comment-reads.ts); the entity declares the table.
 */
@Entity({ tableName: 'issue_comments' })
@Index({ properties: ['repository', 'number', 'createdAt', 'id'] })
export class IssueComment {
  @PrimaryKey({ type: 'text' })
  id: string = newId('cmt');

  @ManyToOne(() => Repository, { deleteRule: 'cascade' })
  repository!: Repository;

  /** The issue's or pull request's number. */
  @Property({ type: 'integer' })
  number!: number;

  @ManyToOne(() => User)
  user!: User;

  @Property({ type: 'text' })
  body!: string;

  @Property({ type: 'datetime' })
  createdAt: Date = new Date();

  @Property({ type: 'datetime' })
  updatedAt: Date = new Date();
}
