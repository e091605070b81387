import type { EntityManager } from '@mikro-orm/postgresql';
import type { DomainEvent } from '../events/domain-event.entity.js';
import type { EventListener } from '../events/event-recorder.js';

/**
 * Turns a domain event into one delivery per active webhook subscribed to
 * its type (repository webhooks of its repository, owner-level webhooks of
 * the repository's owner), in the event's own transaction: once the change
 * has committed, its deliveries exist, exactly once. The body is frozen
 * here as the exact JSON text every attempt will send.
 */
export function webhookFanOut(wake: (webhookIds: string[]) => void): EventListener {
  return async (em: EntityManager, event: DomainEvent) => {
    const rows = await em.execute<{ webhook_id: string }[]>(
      `insert into deliveries (id, webhook_id, event_id, event, action, status, body, next_attempt_at, created_at)
       select gen_random_uuid(), w.id, ?, ?, ?, 'pending', ?, now(), now()
         from webhooks w
        where w.active
          and (w.repository_id = ? or (w.repository_id is null and w.user_id = ?))
          and (w.events @> array[?]::text[] or w.events @> array['*']::text[])
       returning webhook_id`,
      [event.id, event.type, event.action, JSON.stringify(event.payload), event.repositoryId, event.ownerId, event.type],
    );
    if (rows.length === 0) return;
    const webhookIds = rows.map((row) => row.webhook_id);
    return () => wake(webhookIds);
  };
}
