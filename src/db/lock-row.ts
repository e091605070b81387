import { LockMode } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import { notFound } from '../errors/domain-error.js';

/**
 * Re-reads a loaded entity under a row lock (SELECT … FOR UPDATE) inside the
 * caller's transaction. Concurrent changes of one row then queue up and each
 * decides — what changed, which event to record — on the state the previous
 * one committed, so two requests cannot both close an issue or delete a
 * repository and record the event twice. NOT_FOUND when the row is gone.
 */
export async function lockForUpdate<T extends object>(em: EntityManager, entity: T, what: string): Promise<T> {
  const fresh = await em.refresh(entity, { lockMode: LockMode.PESSIMISTIC_WRITE });
  if (!fresh) throw notFound(what);
  return entity;
}

/**
 * Takes a record's row lock for the rest of the transaction without loading
 * it: check-then-insert on its children (a membership, the webhook limit)
 * then runs one request at a time per record.
 */
export async function lockRow(em: EntityManager, table: 'repositories' | 'users', id: string): Promise<void> {
  await em.execute(`select 1 from ${table} where id = ? for update`, [id]);
}
