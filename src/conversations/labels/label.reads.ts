import { rowsOfConversation, type ConversationPart } from '../by-conversation.js';
import type { EntityManager } from '@mikro-orm/postgresql';
import { fastRead } from '../../db/fast-read.js';
import { Label } from './label.entity.js';

interface LabelRow {
  id: string;
  repository_id: string;
  number: number;
  name: string;
  name_key: string;
  color: string;
  description: string | null;
  created_at: Date;
  updated_at: Date;
}

/** A label read: built on its prototype, not its constructor, which would make a new id and dates to throw away. */
const labelOf = (row: LabelRow): Label =>
  Object.assign(Object.create(Label.prototype) as Label, {
    id: row.id,
    repositoryId: row.repository_id,
    name: row.name,
    nameKey: row.name_key,
    color: row.color,
    description: row.description,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  });

/** The labels of the issues or pull requests `keys` (`[repositoryId, number]`), by name: ONE statement for all. */
const LABELS_OF = `select l.*, k.number
     from jsonb_to_recordset(?::text::jsonb) as k(repository_id text, number int)
     join conversation_labels cl on cl.repository_id = k.repository_id and cl.number = k.number
     join labels l on l.id = cl.label_id
    order by l.name_key`;

/** The labels of issues and pull requests, as a part of each that a page loads together. */
export const LABELS: ConversationPart = { name: 'conversation-labels', sql: LABELS_OF };

/** The labels of one issue or pull request, by name (read in `em`'s transaction when it has one). */
export async function labelsOn(em: EntityManager, repositoryId: string, number: number): Promise<Label[]> {
  const rows = await fastRead<LabelRow>(em, LABELS_OF, [JSON.stringify([{ repository_id: repositoryId, number }])]);
  return rows.map(labelOf);
}

/**
 * The labels of an issue or pull request as a field of a listed item: the labels of a whole page
 * load together, in one statement, once its resolvers have all asked (`scope`: the request's context).
 */
export async function labelsOfConversation(scope: object, em: EntityManager, repositoryId: string, number: number): Promise<Label[]> {
  return (await rowsOfConversation<LabelRow>(scope, LABELS, em, repositoryId, number)).map(labelOf);
}
