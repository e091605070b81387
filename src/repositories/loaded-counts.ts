import type { Repository } from './repository.entity.js';

/**
 * Counts other capabilities show on a repository (open pull requests, …), read by the same statement
 * that loads the repository: each capability adds its count here, from its own folder, as a
 * correlated subquery over the repository row, and its field resolver takes the loaded value. A
 * repository loaded another way (a listing) has none, and the resolver counts by itself.
 */
const counts = new Map<string, (alias: string) => string>();
/** countColumnsSql's texts by alias: every repository read asks for the same one. */
const columnsSql = new Map<string, string>();
/**
 * Where a loaded repository keeps its counts: a symbol-keyed property, which neither MikroORM's change
 * tracking nor serialisation sees (a WeakMap entry per read cost more, in the set and in the GC).
 */
const LOADED = Symbol('loaded counts');
type WithCounts = Repository & { [LOADED]?: Map<string, number> };

export function loadCountWithRepository(column: string, subquery: (alias: string) => string): void {
  if (!/^[a-z_]+$/.test(column)) throw new Error(`bad count column ${column}`);
  counts.set(column, subquery);
  columnsSql.clear();
}

/** The select-list items of every count, over the repository row aliased `alias` (an empty string when none). */
export function countColumnsSql(alias: string): string {
  let sql = columnsSql.get(alias);
  if (sql === undefined) {
    sql = [...counts].map(([column, subquery]) => `, ${subquery(alias)} as ${column}`).join('');
    columnsSql.set(alias, sql);
  }
  return sql;
}

/** Whether a column of a loaded row is one of the counts (the rest maps onto the entity). */
export function isCountColumn(column: string): boolean {
  return counts.has(column);
}

/** Keeps the counts of a loaded row beside the repository it was mapped to. */
export function keepCounts(repo: Repository, row: Record<string, unknown>): void {
  const taken = new Map<string, number>();
  for (const column of counts.keys()) if (column in row) taken.set(column, Number(row[column]));
  if (taken.size) (repo as WithCounts)[LOADED] = taken;
}

/** The count as loaded with the repository, or undefined when it was loaded without. */
export function loadedCount(repo: Repository, column: string): number | undefined {
  return (repo as WithCounts)[LOADED]?.get(column);
}
