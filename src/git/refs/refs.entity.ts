import { PrimaryKeyProp } from '@mikro-orm/core';
import { Entity, ManyToOne, PrimaryKey, Property } from '@mikro-orm/decorators/legacy';
import { Repository } from '../../repositories/repository.entity.js';

/**
 * The refs of a repository as the events last recorded them: what the outbox
 * "knows" is on disk. A push updates these rows in the same transaction as its
 * events, so after a crash between a ref update on disk and the event write,
 * the difference between this table and `git for-each-ref` is exactly the set
 * of changes whose events are missing (start-up reconciliation records them).
 */
@Entity({ tableName: 'git_refs' })
export class GitRef {
  [PrimaryKeyProp]?: ['repository', 'name'];

  @ManyToOne(() => Repository, { primary: true, deleteRule: 'cascade' })
  repository!: Repository;

  /** Full ref name, `refs/heads/main`. */
  @PrimaryKey({ type: 'text' })
  name!: string;

  /** What the ref points at directly (for an annotated tag, the tag object). */
  @Property({ type: 'text' })
  sha!: string;
}
