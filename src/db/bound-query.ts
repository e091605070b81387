import type { EntityManager } from '@mikro-orm/postgresql';
import { CompiledQuery } from 'kysely';

/**
 * Runs SQL whose `?` placeholders take `params` as bind parameters, in the entity manager's
 * transaction when it has one, and returns the rows. For statements carrying large values — the
 * events of a push, their deliveries, a push's refs as one JSON document: `em.execute` writes every
 * value into the SQL text, escaping it a character at a time, which took some 35 bytes of heap per
 * byte of JSON and blocked the event loop ~120 ms per MB (a push whose events made 6 MB ran the
 * service's heap out). Bound, a value travels as it is.
 */
export async function executeBound<T>(em: EntityManager, sql: string, params: unknown[]): Promise<T[]> {
  let next = 0;
  const numbered = sql.replace(/\?/g, () => `$${++next}`);
  if (next !== params.length) throw new Error(`the statement has ${next} placeholders for ${params.length} values`);
  const result = await em.getKysely().executeQuery<T>(CompiledQuery.raw(numbered, params));
  return result.rows;
}
