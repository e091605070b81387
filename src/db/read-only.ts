import type { EntityClass, EntityData, EntityDictionary, EntityManager } from '@mikro-orm/postgresql';

/**
 * Entity managers of requests that only read (which ones: src/graphql/read-only-queries.ts): what
 * they load needs neither the identity map nor a snapshot for change tracking, whose upkeep is a
 * noticeable share of a small read.
 */
const READ_ONLY = Symbol('read-only');
type Marked = EntityManager & { [READ_ONLY]?: true };

/** Marks the entity manager of a request that only reads (a property: a WeakSet entry per request cost more). */
export function markReadOnly(em: EntityManager): void {
  (em as Marked)[READ_ONLY] = true;
}

/**
 * A row (column names, database values) as an entity of `entity`: merged into `em` as MikroORM
 * maps it, or, for a request that only reads (outside any transaction) or when `untracked`, a
 * plain instance of the entity class with the same properties, which nothing will flush.
 * Timestamps that arrive as text (from `to_jsonb`) become Dates either way. To-one relations hold
 * the related row's id; the caller sets them to the related entity.
 */
export function mapRow<T extends object>(em: EntityManager, entity: EntityClass<T>, row: Record<string, unknown>, untracked = false): T {
  if (!untracked && (!(em as Marked)[READ_ONLY] || em.isInTransaction())) return em.map(entity, row as EntityDictionary<T>);
  const meta = em.getMetadata().get(entity);
  const data = em.getDriver().mapResult(row as EntityData<T>, meta) as Record<string, unknown>;
  for (const prop of meta.props) {
    const value = data[prop.name];
    if (prop.runtimeType === 'Date' && typeof value === 'string') data[prop.name] = new Date(value);
  }
  return Object.assign(Object.create(meta.prototype) as T, data);
}

/**
 * A row that carries one related row as JSON, read in the same statement (`to_jsonb(u) as
 * owner_row`): the entity from the other columns and the related entity from that one, each mapped
 * as `mapRow` maps it. The caller sets the relation to the related entity.
 */
export function mapRowAndRelated<T extends object, R extends object>(
  em: EntityManager,
  entity: EntityClass<T>,
  related: EntityClass<R>,
  row: Record<string, unknown>,
  column: string,
  untracked = false,
): [T, R] {
  const own: Record<string, unknown> = {};
  for (const key in row) if (key !== column) own[key] = row[key];
  return [mapRow(em, entity, own, untracked), mapRow(em, related, row[column] as Record<string, unknown>, untracked)];
}
