import type { EntityManager } from '@mikro-orm/postgresql';
import { fastRead } from '../db/fast-read.js';
import { batchLoader, groupedBy } from '../graphql/batch-loader.js';

/**
 * Rows that belong to one issue or pull request (its labels, its assignees): `name` tells the
 * request's batch loaders apart, `sql` reads them for `?`, a JSON array of
 * `{repository_id, number}`, and returns `repository_id` and `number` with each row.
 */
export interface ConversationPart {
  name: string;
  sql: string;
}

/**
 * The rows of `part` of one issue or pull request as a field of a listed item: those of a whole
 * page load together, in one statement, once its resolvers have all asked (`scope`: the request's context).
 * The rows may be shared with other requests reading the same: map them, never change them.
 */
export function rowsOfConversation<R extends { repository_id: string; number: number }>(
  scope: object,
  part: ConversationPart,
  em: EntityManager,
  repositoryId: string,
  number: number,
): Promise<R[]> {
  return loaderOf<R>(scope, part, em).load(keyOf(repositoryId, number));
}

/**
 * An issue or pull request the request has just created has no rows of `parts` yet: its fields
 * answer so without a statement.
 */
export function noneYet(scope: object, parts: ConversationPart[], em: EntityManager, repositoryId: string, number: number): void {
  for (const part of parts) loaderOf(scope, part, em).prime(keyOf(repositoryId, number), []);
}

const keyOf = (repositoryId: string, number: number) => JSON.stringify([repositoryId, number]);

function loaderOf<R extends { repository_id: string; number: number }>(scope: object, part: ConversationPart, em: EntityManager) {
  return batchLoader<string, R[]>(scope, part.name, async (keys) => {
    const wanted = keys.map((key) => JSON.parse(key) as [string, number]);
    // Only read: each part's reader maps its rows into objects of its own (label.reads.ts, assignee.reads.ts).
    const rows = await fastRead<R>(
      em,
      part.sql,
      [JSON.stringify(wanted.map(([repository_id, n]) => ({ repository_id, number: n })))],
      true,
    );
    return groupedBy(keys, rows, (row) => keyOf(row.repository_id, row.number));
  });
}
