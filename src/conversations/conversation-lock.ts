import type { EntityManager } from '@mikro-orm/postgresql';
import { notFound } from '../errors/domain-error.js';
import { TABLE_OF, type ConversationTarget } from './conversation-target.js';

/**
 * Locks the issue or pull request until `tx` ends, before anything the change writes: changes to
 * one conversation's labels and assignees then run one at a time, each deciding a cap (100 labels,
 * 10 assignees) on what the previous one committed.
 *
 * The order is the one a repository's deletion takes: its pull requests' rows first, then the
 * repository's row, whose deletion then reaches its issues. So a pull request's row is locked
 * before anything takes the repository's KEY SHARE lock (the foreign keys of what the change
 * inserts), and an issue's after it. NOT_FOUND (`issue`) when the repository or the row is gone.
 */
export async function lockConversation(tx: EntityManager, target: ConversationTarget): Promise<void> {
  if (target.kind === 'issue') {
    const repository = await tx.execute('select 1 from repositories where id = ? for key share', [target.repository.id]);
    if (repository.length === 0) throw notFound('issue');
  }
  const row = await tx.execute(`select 1 from ${TABLE_OF[target.kind]} where id = ? for update`, [target.id]);
  if (row.length === 0) throw notFound('issue');
}
