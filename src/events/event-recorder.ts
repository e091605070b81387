import type { EntityManager } from '@mikro-orm/postgresql';
import { DomainEvent } from './domain-event.entity.js';
import type { RecordedChange } from './event-map.js';
import { actorRef, repositoryRef } from './payloads.js';

export type { RecordedChange } from './event-map.js';

/**
 * Runs inside the recording transaction, once the event rows exist (the
 * webhook fan-out), with the events of one `record`/`recordAll` call in
 * order. It may return a callback to run after the commit.
 */
export type EventListener = (em: EntityManager, events: DomainEvent[]) => Promise<(() => void) | void>;

/** Events written by one INSERT: bounds the statement's parameter (a mirror push may record thousands). */
const INSERT_BATCH = 500;

/**
 * The one path from a change to webhooks: every capability calls `record`
 * inside the transaction that makes the change, so the event commits or
 * rolls back with it. Listeners (the webhook fan-out) run in that same
 * transaction; their after-commit callbacks (waking the delivery worker)
 * run once `transaction` has committed.
 */
export class EventRecorder {
  private readonly listeners: EventListener[] = [];
  private readonly committed = new WeakMap<EntityManager, Array<() => void>>();

  constructor(private readonly baseUrl: string) {}

  onRecord(listener: EventListener): void {
    this.listeners.push(listener);
  }

  async record(em: EntityManager, change: RecordedChange): Promise<DomainEvent> {
    const [event] = await this.recordAll(em, [change]);
    return event!;
  }

  /**
   * Records changes in order: their outbox ids follow the order given. Event
   * rows are written by INSERT statements of their own rather than through
   * the unit of work: an event never changes afterwards, and keeping
   * thousands of them managed (a mirror push records two per ref) would make
   * every later flush slower than the last. Pending changes are flushed
   * first, so a change reaches the database before its event.
   */
  async recordAll(em: EntityManager, changes: RecordedChange[]): Promise<DomainEvent[]> {
    await em.flush();
    const recorded: DomainEvent[] = [];
    for (let start = 0; start < changes.length; start += INSERT_BATCH) {
      const batch = changes.slice(start, start + INSERT_BATCH).map((change) => this.eventOf(change));
      await insertEvents(em, batch);
      for (const listener of this.listeners) {
        const callback = await listener(em, batch);
        if (callback) this.afterCommit(em, callback);
      }
      recorded.push(...batch);
    }
    return recorded;
  }

  /**
   * Runs `callback` once the transaction `em` (opened by `transaction`) has
   * committed: work that must not happen for a change that rolls back, such
   * as waking a worker for it.
   */
  afterCommit(em: EntityManager, callback: () => void): void {
    const callbacks = this.committed.get(em);
    if (callbacks) callbacks.push(callback);
    else this.committed.set(em, [callback]);
  }

  /** The payload: `event`, `action`, the event's own fields, then `repository` and `sender`, built here for every event. */
  private eventOf(change: RecordedChange): DomainEvent {
    return Object.assign(new DomainEvent(), {
      type: change.type,
      action: (change.action as string | undefined) ?? null,
      repositoryId: change.repository.id,
      ownerId: change.repository.owner.id,
      actorId: change.actor.id,
      payload: {
        event: change.type,
        ...(change.action ? { action: change.action as string } : {}),
        ...change.fields,
        repository: repositoryRef(change.repository, this.baseUrl),
        sender: actorRef(change.actor),
      },
      createdAt: new Date(),
    });
  }

  /**
   * Runs `work` in a transaction and, once it has committed, the listeners'
   * after-commit callbacks. Every change that records events goes through here.
   */
  async transaction<T>(em: EntityManager, work: (tx: EntityManager) => Promise<T>): Promise<T> {
    let callbacks: Array<() => void> = [];
    const result = await em.transactional(async (tx) => {
      const value = await work(tx);
      callbacks = this.committed.get(tx) ?? [];
      return value;
    });
    for (const callback of callbacks) callback();
    return result;
  }
}

/**
 * One INSERT for a batch of events, rows in the order given (the select is
 * ordered, and the id sequence is drawn row by row as they are inserted);
 * sorting the returned ids restores that order whatever order RETURNING uses.
 */
async function insertEvents(em: EntityManager, events: DomainEvent[]): Promise<void> {
  const rows = events.map((event) => ({
    type: event.type,
    action: event.action,
    repository_id: event.repositoryId,
    owner_id: event.ownerId,
    actor_id: event.actorId,
    payload: event.payload,
    created_at: event.createdAt.toISOString(),
  }));
  const inserted = await em.execute<{ id: string }[]>(
    `insert into domain_events (type, action, repository_id, owner_id, actor_id, payload, created_at)
     select e.doc->>'type', e.doc->>'action', e.doc->>'repository_id', e.doc->>'owner_id', e.doc->>'actor_id',
            e.doc->'payload', (e.doc->>'created_at')::timestamptz
       from jsonb_array_elements(?::jsonb) with ordinality as e(doc, position)
      order by e.position
     returning id`,
    [JSON.stringify(rows)],
  );
  const ids = inserted.map((row) => BigInt(row.id)).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  events.forEach((event, i) => (event.id = String(ids[i])));
}
