import { childPages } from '../../db/child-pages.js';
import type { GraphQLResolveInfo } from 'graphql';
import { pageOf } from '../../graphql/batch-loader.js';
import type { ResolverContext } from '../../graphql/context.js';
import { connection, ConnectionType, resolvePage, type Connection, type PageArgs } from '../../graphql/pagination.js';
import { TimelineItem, type TimelineItemKind } from './timeline-item.js';

export const TimelineItemConnection = ConnectionType(TimelineItem, 'TimelineItemConnection');

interface TimelineRow {
  id: string;
  kind: TimelineItemKind;
  actor: { id: string; login: string };
  created_at: Date | string;
  comment_id: string | null;
  review_id: string | null;
  details: Record<string, unknown>;
}

const TIMELINE = { table: 'timeline_items', parent: 'conversation_id', order: 'id' };

/**
 * A page of the timeline of the issue or pull request `conversationId`, oldest first. The timelines
 * of a page of issues or pull requests load together, in one statement.
 */
export function timelineOf(
  ctx: ResolverContext<unknown>,
  conversationId: string,
  args: PageArgs,
  info: GraphQLResolveInfo,
): Promise<Connection<TimelineItem>> {
  return pageOf(ctx, 'timeline', conversationId, resolvePage(args), info, async (ids, page) =>
    (await childPages<TimelineRow>(ctx.em, TIMELINE, ids, page)).map(({ rows, total }) => connection(rows.map(itemOf), total, page)),
  );
}

function itemOf(row: TimelineRow): TimelineItem {
  const details = row.details as Partial<{
    label: { name: string; color: string };
    assignee: { id: string; login: string };
    requested_reviewer: { id: string; login: string };
    before: string;
    after: string;
    forced: boolean;
    state_reason: string;
    merge_commit_sha: string;
    title_from: string;
    title_to: string;
  }>;
  return Object.assign(new TimelineItem(), {
    id: String(row.id),
    kind: row.kind,
    actor: row.actor,
    createdAt: new Date(row.created_at),
    commentId: row.comment_id,
    reviewId: row.review_id,
    label: details.label ? { name: details.label.name, color: details.label.color } : null,
    assignee: details.assignee ? { id: details.assignee.id, login: details.assignee.login } : null,
    requestedReviewer: details.requested_reviewer ? { id: details.requested_reviewer.id, login: details.requested_reviewer.login } : null,
    beforeSha: details.before ?? null,
    afterSha: details.after ?? null,
    forced: details.forced ?? null,
    stateReason: details.state_reason ?? null,
    mergeCommitSha: details.merge_commit_sha ?? null,
    titleFrom: details.title_from ?? null,
    titleTo: details.title_to ?? null,
  });
}
