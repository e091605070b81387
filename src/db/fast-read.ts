import type { EntityManager } from '@mikro-orm/postgresql';
import type pg from 'pg';

/**
 * Reads on the hot path (a repository with its owner and counts, nearly every request's first
 * statement) as named prepared statements on the ORM's own pg pool: PostgreSQL parses and plans
 * each once per connection, and no query builder, query formatting or identity map sits between
 * the row and the caller. Inside a transaction the read must see the transaction's own writes, so
 * it goes through the entity manager as before.
 *
 * `sql` uses `?` placeholders (in the order of `params`), like `em.execute`; it must not use
 * PostgreSQL's `?` jsonb operators.
 */
export async function fastRead<T extends object>(em: EntityManager, name: string, sql: string, params: unknown[]): Promise<T[]> {
  if (em.isInTransaction()) return em.execute<T[]>(sql, params);
  const pool = await poolOf(em);
  const result = await pool.query<T>({ name, text: positional(sql), values: params });
  return result.rows;
}

const pools = new WeakMap<object, Promise<pg.Pool>>();

function poolOf(em: EntityManager): Promise<pg.Pool> {
  const connection = em.getConnection();
  let pool = pools.get(connection);
  if (!pool) {
    pool = connection.getNativeClient() as Promise<pg.Pool>;
    pools.set(connection, pool);
  }
  return pool;
}

const texts = new Map<string, string>();

/** `?` → `$1, $2, …`, memoised: the texts are a fixed set. */
function positional(sql: string): string {
  let text = texts.get(sql);
  if (text === undefined) {
    let n = 0;
    text = sql.replace(/\?/g, () => `$${++n}`);
    texts.set(sql, text);
  }
  return text;
}
