import type { EntityManager } from '@mikro-orm/postgresql';
import type { DomainEvent } from '../../events/domain-event.entity.js';
import type { EventListener } from '../../events/event-recorder.js';
import { executeBound } from '../../db/bound-query.js';

/**
 * The timeline of an issue or pull request is written from the events recorded about it, by a listener
 * on the one event path, in the transaction of the change: no use case writes it, so none can forget
 * to. What it keeps of each event, by `kind`: who (the event's sender) and when, the comment or review
 * it shows (comments deleted later leave with their item: a foreign key), and what changed —
 * `details` holds `label`, `assignee`, `requested_reviewer`, `before`/`after`/`forced` of a push to the
 * head, `state_reason`, `merge_commit_sha`, `title_from`/`title_to`, as the payload had them.
 */
export function timelineListener(): EventListener {
  return {
    inTransaction: async (em: EntityManager, events: DomainEvent[]) => {
      const kept = events.filter((event) => KEPT_TYPES.includes(event.type));
      if (!kept.length) return;
      // Bound, not written into the SQL text, and only what the statement reads of each payload: a
      // change recording many events about an issue with a long body (100 labels added) stays small.
      await executeBound(em, insertItems(`jsonb_to_recordset(?::jsonb) as e(${EVENT_COLUMNS})`), [
        JSON.stringify(
          kept.map((event) => ({
            type: event.type,
            action: event.action,
            body: JSON.stringify(readOf(event.payload)),
            repository_id: event.repositoryId,
          })),
        ),
      ]);
    },
    inStatement: { sql: insertItems, done: () => undefined },
  };
}

/**
 * A repository's timelines leave with it: its `repository` `deleted` event, recorded in the
 * transaction that deletes it, deletes them (an item of an issue changed in the same instant may
 * outlive it, kept like its events are, and never read: nothing is left to read it through).
 */
export function timelineSweep(): EventListener {
  return {
    inTransaction: async (em: EntityManager, events: DomainEvent[]) => {
      const gone = events.filter((event) => event.type === 'repository' && event.action === 'deleted').map((event) => event.repositoryId);
      if (!gone.length) return;
      await executeBound(em, deleteItems(`jsonb_to_recordset(?::jsonb) as e(${EVENT_COLUMNS})`), [
        JSON.stringify(gone.map((id) => ({ type: 'repository', action: 'deleted', body: '{}', repository_id: id }))),
      ]);
    },
    inStatement: { sql: deleteItems, done: () => undefined },
  };
}

const deleteItems = (source: string) =>
  `delete from timeline_items t
    where t.repository_id in (select e.repository_id from ${source} where e.type = 'repository' and e.action = 'deleted')
   returning t.id`;

/** What the statement reads of a payload (insertItems): the subject's id, number, title and state's parts, and the change. */
function readOf(payload: Record<string, unknown>): Record<string, unknown> {
  const subject = (record: unknown) => {
    if (!record || typeof record !== 'object') return undefined;
    const { id, number, title, state_reason, merge_commit_sha } = record as Record<string, unknown>;
    return { id, number, title, state_reason, merge_commit_sha };
  };
  const { sender, label, assignee, requested_reviewer, forced, changes, comment, review } = payload as Record<
    string,
    Record<string, unknown>
  >;
  return {
    sender,
    label,
    assignee,
    requested_reviewer,
    forced,
    changes: changes ? { head: changes.head, title: changes.title } : undefined,
    comment: comment ? { id: comment.id } : undefined,
    review: review ? { id: review.id } : undefined,
    issue: subject(payload.issue),
    pull_request: subject(payload.pull_request),
  };
}

const KEPT_TYPES = ['issues', 'pull_request', 'issue_comment', 'pull_request_review'];
const EVENT_COLUMNS = 'type text, action text, body text, repository_id text';
const ACTIONS_KEPT_AS_KINDS = [
  'closed',
  'reopened',
  'merged',
  'labeled',
  'unlabeled',
  'assigned',
  'unassigned',
  'review_requested',
  'review_request_removed',
];

/**
 * The one statement, over `source` (events aliased `e`: type, action, body as JSON text,
 * repository_id). The conversation is the payload's issue (issue events, comments) or pull request;
 * its id keys the timeline. The payload is parsed once a row: `OFFSET 0` keeps PostgreSQL from
 * inlining the subquery that parses it into each of the dozen uses of `b`, each of which would
 * then parse the text again.
 */
const insertItems = (source: string) =>
  `insert into timeline_items (repository_id, conversation_id, number, kind, actor, created_at, comment_id, review_id, details)
   select k.repository_id, k.subject->>'id', (k.subject->>'number')::int, k.kind, k.b->'sender', now(),
          case when k.kind = 'commented' then k.b->'comment'->>'id' end,
          case when k.kind = 'reviewed' then k.b->'review'->>'id' end,
          jsonb_strip_nulls(jsonb_build_object(
            'label', k.b->'label',
            'assignee', k.b->'assignee',
            'requested_reviewer', k.b->'requested_reviewer',
            'before', k.b->'changes'->'head'->'from_sha',
            'after', k.b->'changes'->'head'->'to_sha',
            'forced', case when k.kind = 'head_pushed' then k.b->'forced' end,
            'state_reason', case when k.kind in ('closed', 'reopened') then k.subject->'state_reason' end,
            'merge_commit_sha', case when k.kind = 'merged' then k.subject->'merge_commit_sha' end,
            'title_from', case when k.kind = 'renamed' then k.b->'changes'->'title'->'from' end,
            'title_to', case when k.kind = 'renamed' then k.subject->'title' end))
     from (select e.repository_id, b, s.subject,
                  case
                    when e.type = 'issue_comment' and e.action = 'created' then 'commented'
                    when e.type = 'pull_request_review' and e.action = 'submitted' then 'reviewed'
                    when e.type in ('issues', 'pull_request') and e.action in (${ACTIONS_KEPT_AS_KINDS.map((a) => `'${a}'`).join(', ')}) then e.action
                    when e.type = 'pull_request' and e.action = 'updated' and b->'changes'->'head' is not null then 'head_pushed'
                    when e.type in ('issues', 'pull_request') and e.action = 'updated' and b->'changes'->'title' is not null then 'renamed'
                  end as kind
             from ${source}
             cross join lateral (select e.body::jsonb as b offset 0) j
             cross join lateral (select case when e.type in ('issues', 'issue_comment') then b->'issue' else b->'pull_request' end as subject) s
            where e.type in (${KEPT_TYPES.map((t) => `'${t}'`).join(', ')})) k
    where k.kind is not null and k.subject->>'id' is not null
   returning id`;
