import type { EntityManager } from '@mikro-orm/postgresql';
import { executeBound } from './bound-query.js';
import { runPrepared } from './prepared-statements.js';

/**
 * A statement that makes a change on its own (its own transaction), with bound parameters: prepared,
 * on postgres.js's write connections. The statements that make a change and record its events in one
 * go (event-recorder.ts) are some dozen common table expressions: planning one took PostgreSQL as
 * long as running it, at every run, while a prepared one is planned once per connection. Inside a
 * caller's transaction the statement runs on that transaction's connection, unprepared, as
 * `executeBound` runs it. Its text must be one of a fixed set (prepared-statements.ts).
 */
export function preparedWrite<T>(em: EntityManager, sql: string, params: unknown[]): Promise<T[]> {
  if (em.isInTransaction()) return executeBound<T>(em, sql, params);
  return runPrepared<T>(em, 'write', sql, params);
}
