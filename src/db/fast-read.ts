import { createHash } from 'node:crypto';
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
 * PostgreSQL's `?` jsonb operators. Each distinct text is prepared on every pooled connection that
 * runs it, so the texts must be a fixed set (never built from values).
 */
export async function fastRead<T extends object>(em: EntityManager, sql: string, params: unknown[]): Promise<T[]> {
  if (em.isInTransaction()) return em.execute<T[]>(sql, params);
  const pool = await poolOf(em);
  const result = await pool.query<T>({ ...prepared(sql), values: params });
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

const statements = new Map<string, { name: string; text: string }>();

/** The statement of a text: `?` → `$1, $2, …`, named after its hash; memoised, the texts are a fixed set. */
function prepared(sql: string): { name: string; text: string } {
  let statement = statements.get(sql);
  if (statement === undefined) {
    let n = 0;
    const text = sql.replace(/\?/g, () => `$${++n}`);
    statement = { name: `cairn_${createHash('sha1').update(text).digest('hex').slice(0, 20)}`, text };
    statements.set(sql, statement);
  }
  return statement;
}
