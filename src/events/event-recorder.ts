import type { EntityManager } from '@mikro-orm/postgresql';
import type { Repository } from '../repositories/repository.entity.js';
import { DomainEvent } from './domain-event.entity.js';
import type { EventType } from './event-types.js';
import { actorRef, repositoryRef } from './payloads.js';

export interface RecordedChange {
  type: Exclude<EventType, 'ping'>;
  action?: string;
  repository: Repository;
  actor: { id: string; login: string };
  /** Event-specific fields, already in their §7 shape. */
  fields?: Record<string, unknown>;
}

/** Called inside the recording transaction, after the event row exists (webhook fan-out). */
export type EventListener = (em: EntityManager, event: DomainEvent) => Promise<void>;

/**
 * The one path from a change to webhooks: every capability calls `record`
 * inside the transaction that makes the change, so the event commits or
 * rolls back with it. Listeners (the webhook fan-out) run in that same
 * transaction; commit hooks run once it has committed.
 */
export class EventRecorder {
  private readonly listeners: EventListener[] = [];
  private readonly commitHooks: Array<() => void> = [];

  constructor(private readonly baseUrl: string) {}

  onRecord(listener: EventListener): void {
    this.listeners.push(listener);
  }

  onCommit(hook: () => void): void {
    this.commitHooks.push(hook);
  }

  async record(em: EntityManager, change: RecordedChange): Promise<DomainEvent> {
    const event = em.create(DomainEvent, {
      type: change.type,
      action: change.action ?? null,
      repositoryId: change.repository.id,
      ownerId: change.repository.owner.id,
      actorId: change.actor.id,
      payload: {
        event: change.type,
        ...(change.action ? { action: change.action } : {}),
        ...change.fields,
        repository: repositoryRef(change.repository, this.baseUrl),
        sender: actorRef(change.actor),
      },
      createdAt: new Date(),
    });
    if (this.listeners.length) {
      await em.flush();
      for (const listener of this.listeners) await listener(em, event);
    }
    return event;
  }

  /**
   * Runs `work` in a transaction and, once it has committed, tells the
   * commit hooks (the delivery worker wakes up instead of polling).
   * Every change that records events goes through here.
   */
  async transaction<T>(em: EntityManager, work: (tx: EntityManager) => Promise<T>): Promise<T> {
    const result = await em.transactional(work);
    for (const hook of this.commitHooks) hook();
    return result;
  }
}
