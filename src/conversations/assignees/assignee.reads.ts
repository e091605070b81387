import { rowsOfConversation, type ConversationPart } from '../by-conversation.js';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { ActorRef } from '../../events/payloads.js';

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

/** The assignees of issues and pull requests, as a part of each that a page loads together. */
export const ASSIGNEES: ConversationPart = { name: 'conversation-assignees', sql: ASSIGNEES_OF };

/**
 * The assignees of an issue or pull request as a field of a listed item: those of a whole page
 * load together, in one statement (`scope`: the request's context).
 */
export async function assigneesOfConversation(scope: object, em: EntityManager, repositoryId: string, number: number): Promise<ActorRef[]> {
  const rows = await rowsOfConversation<AssigneeRow>(scope, ASSIGNEES, em, repositoryId, number);
  return rows.map(({ id, login }) => ({ id, login }));
}
