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

/**
 * Runs inside the recording transaction, once the event row exists (the
 * webhook fan-out). It may return a callback to run after the commit.
 */
export type EventListener = (em: EntityManager, event: DomainEvent) => Promise<(() => void) | void>;

/**
 * The one path from a change to webhooks: every capability calls `record`
 * inside the transaction that makes the change, so the event commits or
 * rolls back with it. Listeners (the webhook fan-out) run in that same
 * transaction; their after-commit callbacks (waking the delivery worker)
 * run once `transaction` has committed.
 */
export class EventRecorder {
  private readonly listeners: EventListener[] = [];
  private readonly afterCommit = new WeakMap<EntityManager, Array<() => void>>();

  constructor(private readonly baseUrl: string) {}

  onRecord(listener: EventListener): void {
    this.listeners.push(listener);
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
      for (const listener of this.listeners) {
        const callback = await listener(em, event);
        if (callback) this.afterCommit.set(em, [...(this.afterCommit.get(em) ?? []), callback]);
      }
    }
    return event;
  }

  /**
   * Runs `work` in a transaction and, once it has committed, the listeners'
   * after-commit callbacks. Every change that records events goes through here.
   */
  async transaction<T>(em: EntityManager, work: (tx: EntityManager) => Promise<T>): Promise<T> {
    let callbacks: Array<() => void> = [];
    const result = await em.transactional(async (tx) => {
      const value = await work(tx);
      callbacks = this.afterCommit.get(tx) ?? [];
      return value;
    });
    for (const callback of callbacks) callback();
    return result;
  }
}
