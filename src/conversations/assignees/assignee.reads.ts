import type { EntityManager } from '@mikro-orm/postgresql';
import { fastRead } from '../../db/fast-read.js';
import type { ActorRef } from '../../events/payloads.js';
import { batchLoader, groupedBy } from '../../graphql/batch-loader.js';

interface AssigneeRow {
  repository_id: string;
  number: number;
  id: string;
  login: string;
}

/** The assignees of the issues or pull requests `keys` (`[repositoryId, number]`), by login: ONE statement for all. */
const ASSIGNEES_OF = `select k.repository_id, k.number, u.id, u.login
     from jsonb_to_recordset(?::text::jsonb) as k(repository_id text, number int)
     join conversation_assignees a on a.repository_id = k.repository_id and a.number = k.number
     join users u on u.id = a.user_id
    order by u.login_key`;

/**
 * The assignees of an issue or pull request as a field of a listed item: those of a whole page
 * load together, in one statement (`scope`: the request's context).
 */
export function assigneesOfConversation(scope: object, em: EntityManager, repositoryId: string, number: number): Promise<ActorRef[]> {
  return batchLoader<string, ActorRef[]>(scope, 'conversation-assignees', async (keys) => {
    const wanted = keys.map((key) => JSON.parse(key) as [string, number]);
    const rows = await fastRead<AssigneeRow>(em, ASSIGNEES_OF, [
      JSON.stringify(wanted.map(([repository_id, n]) => ({ repository_id, number: n }))),
    ]);
    return groupedBy(keys, rows, (row) => JSON.stringify([row.repository_id, row.number])).map((group) =>
      group.map(({ id, login }) => ({ id, login })),
    );
  }).load(JSON.stringify([repositoryId, number]));
}
