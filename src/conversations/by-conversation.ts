import type { EntityManager } from '@mikro-orm/postgresql';
import { fastRead } from '../db/fast-read.js';
import { batchLoader, groupedBy } from '../graphql/batch-loader.js';

/**
 * The rows of one issue or pull request (its labels, its assignees) as a field of a listed item:
 * those of a whole page load together, in one statement, once its resolvers have all asked
 * (`scope`: the request's context). `sql` reads them for `?`, a JSON array of
 * `{repository_id, number}`, and returns `repository_id` and `number` with each row.
 */
export function rowsOfConversation<R extends { repository_id: string; number: number }>(
  scope: object,
  name: string,
  sql: string,
  em: EntityManager,
  repositoryId: string,
  number: number,
): Promise<R[]> {
  return batchLoader<string, R[]>(scope, name, async (keys) => {
    const wanted = keys.map((key) => JSON.parse(key) as [string, number]);
    const rows = await fastRead<R>(em, sql, [JSON.stringify(wanted.map(([repository_id, n]) => ({ repository_id, number: n })))]);
    return groupedBy(keys, rows, (row) => JSON.stringify([row.repository_id, row.number]));
  }).load(JSON.stringify([repositoryId, number]));
}
