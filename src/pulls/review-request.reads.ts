import type { EntityManager } from '@mikro-orm/postgresql';
import { fastRead } from '../db/fast-read.js';
import type { ActorRef } from '../events/payloads.js';
import { batchLoader, groupedBy } from '../graphql/batch-loader.js';

/** The users whose review is requested on the pull requests `ids`, by login: ONE statement for all. */
const REQUESTED_OF = `select r.pull_request_id, u.id, u.login
     from review_requests r join users u on u.id = r.user_id
    where r.pull_request_id in (select jsonb_array_elements_text(?::text::jsonb))
    order by u.login_key`;

type Row = ActorRef & { pull_request_id: string };

/** The requested reviewers of one pull request (read in `em`'s transaction when it has one). */
export async function requestedReviewersOf(em: EntityManager, pullRequestId: string): Promise<ActorRef[]> {
  const rows = await fastRead<Row>(em, REQUESTED_OF, [JSON.stringify([pullRequestId])]);
  return rows.map(({ id, login }) => ({ id, login }));
}

/** The requested reviewers of a listed pull request: those of a whole page load in one statement (`scope`: the request's context). */
export function requestedReviewersOfListed(scope: object, em: EntityManager, pullRequestId: string): Promise<ActorRef[]> {
  return batchLoader<string, ActorRef[]>(scope, 'requested-reviewers', async (ids) => {
    const rows = await fastRead<Row>(em, REQUESTED_OF, [JSON.stringify(ids)]);
    return groupedBy(ids, rows, (row) => row.pull_request_id).map((group) => group.map(({ id, login }) => ({ id, login })));
  }).load(pullRequestId);
}
