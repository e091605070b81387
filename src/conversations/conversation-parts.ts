import type { EntityManager } from '@mikro-orm/postgresql';
import type { ActorRef } from '../events/payloads.js';

/** The labels and assignees an issue's or pull request's record carries. */
export interface ConversationParts {
  labels: Array<{ name: string; color: string }>;
  assignees: ActorRef[];
}

/** What a record that has none carries (a new issue). */
export const NO_PARTS: ConversationParts = { labels: [], assignees: [] };

/**
 * The `labels` and `assignees` columns of the conversation (`repository`, `number`: SQL expressions,
 * columns of the row they are read with or placeholders), for a statement that reads them with
 * something else: labels by name, assignees by login, each as JSON.
 */
export const partsColumns = (repository: string, number: string) => `
       (select coalesce(json_agg(json_build_object('name', l.name, 'color', l.color) order by l.name_key), '[]'::json)
          from conversation_labels cl join labels l on l.id = cl.label_id
         where cl.repository_id = ${repository} and cl.number = ${number}) as labels,
       (select coalesce(json_agg(json_build_object('id', u.id, 'login', u.login) order by u.login_key), '[]'::json)
          from conversation_assignees a join users u on u.id = a.user_id
         where a.repository_id = ${repository} and a.number = ${number}) as assignees`;

/**
 * The labels and assignees of one issue or pull request, in ONE statement, read in `em`'s
 * transaction: what the record in an event recorded there carries.
 */
export async function conversationParts(em: EntityManager, repositoryId: string, number: number): Promise<ConversationParts> {
  const [row] = await em.execute<Array<{ labels: ConversationParts['labels']; assignees: ActorRef[] }>>(
    `select ${partsColumns('?', '?')}`,
    [repositoryId, number, repositoryId, number],
  );
  return { labels: row!.labels, assignees: row!.assignees };
}
