import type { EntityManager } from '@mikro-orm/postgresql';
import { CompiledQuery } from 'kysely';
import { noteStatement } from './statement-count.js';

/**
 * Runs SQL whose `?` placeholders take `params` as bind parameters, in the entity manager's
 * transaction when it has one, and returns the rows. For statements carrying large values — the
 * events of a push, their deliveries, a push's refs as one JSON document: `em.execute` writes every
 * value into the SQL text, escaping it a character at a time, which took some 35 bytes of heap per
 * byte of JSON and blocked the event loop ~120 ms per MB (a push whose events made 6 MB ran the
 * service's heap out). Bound, a value travels as it is.
 */
export async function executeBound<T>(em: EntityManager, sql: string, params: unknown[]): Promise<T[]> {
  const text = boundText(sql, params);
  noteStatement(); // kysely's path, which the ORM's onQuery does not see
  const result = await em.getKysely().executeQuery<T>(CompiledQuery.raw(text, params));
  return result.rows;
}

/** `?` placeholders (as `em.execute` takes them) as PostgreSQL's `$1, $2, …`, and how many there are. */
function numberedPlaceholders(sql: string): { text: string; count: number } {
  let count = 0;
  const text = sql.replace(/\?/g, () => `$${++count}`);
  return { text, count };
}

/**
 * The text to send for `sql` with `params` bound: its placeholders numbered (memoised in `memo`, for
 * a fixed set of texts). A count that does not match is a bug, thrown here: PostgreSQL would answer
 * it with SQLSTATE 08P01, a code of a broken connection, read as the database being unavailable.
 */
export function boundText(sql: string, params: unknown[], memo?: Map<string, { text: string; count: number }>): string {
  let numbered = memo?.get(sql);
  if (numbered === undefined) {
    numbered = numberedPlaceholders(sql);
    memo?.set(sql, numbered);
  }
  if (numbered.count !== params.length) throw new Error(`the statement has ${numbered.count} placeholders for ${params.length} values`);
  return numbered.text;
}
