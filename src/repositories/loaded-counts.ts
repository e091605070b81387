import type { Repository } from './repository.entity.js';

/**
 * Counts other capabilities show on a repository (open pull requests, …), read by the same statement
 * that loads the repository: each capability adds its count here, from its own folder, as a
 * correlated subquery over the repository row, and its field resolver takes the loaded value. A
 * repository loaded another way (a listing) has none, and the resolver counts by itself.
 */
const counts = new Map<string, (alias: string) => string>();
const loaded = new WeakMap<Repository, Map<string, number>>();

export function loadCountWithRepository(column: string, subquery: (alias: string) => string): void {
  if (!/^[a-z_]+$/.test(column)) throw new Error(`bad count column ${column}`);
  counts.set(column, subquery);
}

/** The select-list items of every count, over the repository row aliased `alias` (an empty string when none). */
export function countColumnsSql(alias: string): string {
  return [...counts].map(([column, subquery]) => `, ${subquery(alias)} as ${column}`).join('');
}

/** Takes the counts out of a loaded row (the rest maps onto the entity) and keeps them beside the repository. */
export function takeCounts(row: Record<string, unknown>): Map<string, number> {
  const taken = new Map<string, number>();
  for (const column of counts.keys()) {
    if (column in row) {
      taken.set(column, Number(row[column]));
      delete row[column];
    }
  }
  return taken;
}

export function keepCounts(repo: Repository, taken: Map<string, number>): void {
  if (taken.size) loaded.set(repo, taken);
}

/** The count as loaded with the repository, or undefined when it was loaded without. */
export function loadedCount(repo: Repository, column: string): number | undefined {
  return loaded.get(repo)?.get(column);
}
