import type { EntityManager } from '@mikro-orm/postgresql';
import type { DomainEvent } from '../events/domain-event.entity.js';
import type { EventListener } from '../events/event-recorder.js';

/**
 * Turns domain events into one delivery per active webhook subscribed to
 * each event's type (repository webhooks of its repository, owner-level
 * webhooks of the repository's owner), with one statement in the events' own
 * transaction: once the change has committed, its deliveries exist, exactly
 * once. The body is frozen here as the exact JSON text every attempt will send.
 */
export function webhookFanOut(wake: (webhookIds: string[]) => void): EventListener {
  return async (em: EntityManager, events: DomainEvent[]) => {
    const rows = await em.execute<{ webhook_id: string }[]>(
      `insert into deliveries (id, webhook_id, event_id, event, action, status, body, next_attempt_at, created_at)
       select gen_random_uuid(), w.id, e.id, e.type, e.action, 'pending', e.body, now(), now()
         from jsonb_to_recordset(?::jsonb) as e(id bigint, type text, action text, body text, repository_id text, owner_id text)
         join webhooks w
           on w.active
          and (w.repository_id = e.repository_id or (w.repository_id is null and w.user_id = e.owner_id))
          and (w.events @> array[e.type]::text[] or w.events @> array['*']::text[])
       returning webhook_id`,
      [JSON.stringify(events.map(deliveryFields))],
    );
    if (rows.length === 0) return;
    const webhookIds = [...new Set(rows.map((row) => row.webhook_id))];
    return () => wake(webhookIds);
  };
}

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
