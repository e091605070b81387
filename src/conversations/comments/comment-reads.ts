import type { EntityManager } from '@mikro-orm/postgresql';
import { asDate, fastRead } from '../../db/fast-read.js';
import { batchLoader, groupedBy } from '../../graphql/batch-loader.js';
import { connection, type Connection, type Page } from '../../graphql/pagination.js';
import { looksLikeId } from '../../ids.js';
import type { CommentRecord } from './comment.types.js';
import type { ConversationTarget } from '../conversation-target.js';

/** A comment's row with its author's login, as every read selects it. */
export interface CommentRow {
  id: string;
  body: string;
  user_id: string;
  user_login: string;
  number: number;
  created_at: string | Date;
  updated_at: string | Date;
}

export function commentOf(row: CommentRow): CommentRecord {
  return {
    id: row.id,
    body: row.body,
    user: { id: row.user_id, login: row.user_login },
    createdAt: asDate(row.created_at),
    updatedAt: asDate(row.updated_at),
    issueNumber: row.number,
  };
}

const COLUMNS = 'c.id, c.body, c.user_id, u.login as user_login, c.number, c.created_at, c.updated_at';

/**
 * A page of one conversation's comments, oldest first: the page's ids are chosen on the
 * (repository, number, created_at, id) index alone, so a deep offset walks the index, not the joins.
 * The total is the count the issue or pull request keeps (`target`, read just before).
 */
export async function listComments(em: EntityManager, target: ConversationTarget, page: Page): Promise<Connection<CommentRecord>> {
  if (page.limit === 0 || page.offset >= target.commentCount) return connection([], target.commentCount, page);
  const rows = await fastRead<CommentRow>(
    em,
    `select ${COLUMNS}
       from (select id, created_at from issue_comments where repository_id = ? and number = ?
              order by created_at, id limit ? offset ?) w
       join issue_comments c on c.id = w.id
       join users u on u.id = c.user_id
      order by w.created_at, w.id`,
    [target.repository.id, target.number, page.limit, page.offset],
  );
  return connection(rows.map(commentOf), target.commentCount, page);
}

/** One comment of a repository, or null (an id of another repository's comment is none of this one's). */
export async function readComment(em: EntityManager, repositoryId: string, id: string): Promise<CommentRecord | null> {
  if (!looksLikeId('cmt', id)) return null;
  const [row] = await fastRead<CommentRow>(
    em,
    `select ${COLUMNS} from issue_comments c join users u on u.id = c.user_id where c.id = ? and c.repository_id = ?`,
    [id, repositoryId],
  );
  return row ? commentOf(row) : null;
}

/** Comments by id, in the order of `ids` (null for one deleted since): the comments a page of timeline items shows, in one statement. */
export async function commentsById(em: EntityManager, ids: readonly string[]): Promise<Array<CommentRecord | null>> {
  const rows = await fastRead<CommentRow>(
    em,
    `select ${COLUMNS} from issue_comments c join users u on u.id = c.user_id where c.id in (select jsonb_array_elements_text(?::text::jsonb))`,
    [JSON.stringify(ids)],
  );
  const byId = new Map(rows.map((row) => [row.id, commentOf(row)]));
  return ids.map((id) => byId.get(id) ?? null);
}

/**
 * The same page of the comments of each conversation asked for in one request (the comments of
 * each issue of a listed page), read together in ONE statement once the page's resolvers have all
 * asked. `total` is the count the issue or pull request keeps, so no count is read.
 */
export async function commentsOf(
  scope: object,
  em: EntityManager,
  conversation: { repositoryId: string; number: number; total: number },
  page: Page,
): Promise<Connection<CommentRecord>> {
  if (page.limit === 0 || page.offset >= conversation.total) return connection([], conversation.total, page);
  const loader = batchLoader<string, CommentRecord[]>(scope, `issue-comments:${page.limit}:${page.offset}`, (keys) =>
    readPages(em, keys, page),
  );
  const nodes = await loader.load(JSON.stringify([conversation.repositoryId, conversation.number]));
  return connection(nodes, conversation.total, page);
}

async function readPages(em: EntityManager, keys: readonly string[], page: Page): Promise<CommentRecord[][]> {
  const wanted = keys.map((key) => JSON.parse(key) as [string, number]);
  const rows = await fastRead<CommentRow & { key: string }>(
    em,
    `select ${COLUMNS}, k.key
       from jsonb_to_recordset(?::text::jsonb) as k(key text, repository_id text, number int)
       cross join lateral (select w.id from issue_comments w where w.repository_id = k.repository_id and w.number = k.number
                            order by w.created_at, w.id limit ? offset ?) p
       join issue_comments c on c.id = p.id
       join users u on u.id = c.user_id
      order by c.created_at, c.id`,
    [JSON.stringify(wanted.map(([repository_id, number], i) => ({ key: keys[i], repository_id, number }))), page.limit, page.offset],
  );
  return groupedBy(keys, rows, (row) => row.key).map((group) => group.map(commentOf));
}
