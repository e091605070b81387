import type { EntityManager } from '@mikro-orm/postgresql';
import { executeBound } from '../db/bound-query.js';
import type { DomainEvent } from '../events/domain-event.entity.js';
import type { EventListener } from '../events/event-recorder.js';

/**
 * Turns domain events into one delivery per active webhook subscribed to
 * each event's type (repository webhooks of its repository, owner-level
 * webhooks of the repository's owner), with one statement in the events' own
 * transaction — or as part of the one statement that makes the change and
 * records its event: once the change has committed, its deliveries exist,
 * exactly once. The body is frozen here as the exact JSON text every attempt will send.
 */
export function webhookFanOut(wake: (webhookIds: string[]) => void): EventListener {
  const woken = (rows: unknown[]) => {
    if (rows.length === 0) return;
    const webhookIds = [...new Set((rows as Array<{ webhook_id: string }>).map((row) => row.webhook_id))];
    return () => wake(webhookIds);
  };
  return {
    inTransaction: async (em: EntityManager, events: DomainEvent[]) =>
      woken(
        await executeBound(em, insertDeliveries(`jsonb_to_recordset(?::jsonb) as e(${EVENT_COLUMNS})`), [
          JSON.stringify(events.map(deliveryFields)),
        ]),
      ),
    inStatement: { sql: insertDeliveries, done: woken },
  };
}

const EVENT_COLUMNS = 'id bigint, type text, action text, body text, repository_id text, owner_id text';

/** The one fan-out statement, over `source`: events aliased `e` with the columns of EVENT_COLUMNS. */
const insertDeliveries = (source: string) =>
  `insert into deliveries (id, webhook_id, event_id, event, action, status, body, next_attempt_at, created_at)
   select gen_random_uuid(), w.id, e.id, e.type, e.action, 'pending', e.body, now(), now()
     from ${source}
     join webhooks w
       on w.active
      and (w.repository_id = e.repository_id or (w.repository_id is null and w.user_id = e.owner_id))
      and (w.events @> array[e.type]::text[] or w.events @> array['*']::text[])
   returning webhook_id`;

function deliveryFields(event: DomainEvent) {
  return {
    id: event.id,
    type: event.type,
    action: event.action,
    body: JSON.stringify(event.payload),
    repository_id: event.repositoryId,
    owner_id: event.ownerId,
  };
}
