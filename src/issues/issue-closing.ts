import type { EntityManager } from '@mikro-orm/postgresql';
import type { EventRecorder } from '../events/event-recorder.js';
import type { ActorRef } from '../events/payloads.js';
import { countOpen } from '../repositories/numbering.js';
import type { Repository } from '../repositories/repository.entity.js';
import { Issue, IssueState, IssueStateReason } from './issue.entity.js';
import { issueRecord } from './issue.payload.js';

/**
 * Closes the open issues among `numbers` as completed, by `actor`, in the caller's transaction: what a
 * merged pull request's closing keywords do. Each closed issue records `issues` `closed`; numbers that
 * are not open issues (closed already, pull requests, none at all) are passed over. The rows are
 * locked, so a concurrent edit of one of them decides on what this commits.
 */
export async function closeIssuesAsCompleted(
  events: EventRecorder,
  tx: EntityManager,
  repository: Repository,
  numbers: number[],
  actor: ActorRef,
): Promise<void> {
  if (!numbers.length) return;
  const rows = await tx.execute<Array<{ id: string }>>(
    `select id from issues where repository_id = ? and state = 'open' and number in (select jsonb_array_elements_text(?::jsonb)::int)
      order by number for update`,
    [repository.id, JSON.stringify(numbers)],
  );
  if (!rows.length) return;
  const issues = await tx.find(Issue, { id: { $in: rows.map((row) => row.id) } }, { populate: ['user'], orderBy: { number: 'asc' } });
  const now = new Date();
  for (const issue of issues) {
    issue.state = IssueState.CLOSED;
    issue.stateReason = IssueStateReason.COMPLETED;
    issue.closedAt = issue.updatedAt = now;
  }
  await tx.flush();
  const closed = [];
  for (const issue of issues)
    closed.push({ type: 'issues' as const, action: 'closed' as const, repository, actor, fields: { issue: await issueRecord(tx, issue) } });
  await events.recordAll(tx, closed);
  await countOpen(tx, repository.id, 'open_issues', -issues.length);
}
