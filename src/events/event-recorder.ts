import type { EntityManager } from '@mikro-orm/postgresql';
import { executeBound } from '../db/bound-query.js';
import { preparedWrite } from '../db/prepared-write.js';
import { DomainEvent } from './domain-event.entity.js';
import type { RecordedChange } from './event-map.js';
import { actorRef, repositoryRef } from './payloads.js';

export type { RecordedChange } from './event-map.js';

/**
 * Work that follows every recorded event in its own transaction (the webhook
 * fan-out), in two forms that must do the same:
 * - `inTransaction` runs once the event rows exist, with the events of one
 *   `record`/`recordAll` call in order;
 * - `inStatement` is that work as one data-modifying SQL statement over
 *   `source`, a relation aliased `e` with the columns `id`, `type`, `action`,
 *   `body` (the payload's JSON text), `repository_id`, `owner_id`: it becomes
 *   part of the single statement of `recordInStatement`, which hands it the
 *   rows the statement returned once committed.
 * Each may return a callback to run after the commit.
 */
export interface EventListener {
  inTransaction(em: EntityManager, events: DomainEvent[]): Promise<AfterCommit | void>;
  inStatement: { sql(source: string): string; done(rows: unknown[]): AfterCommit | void };
}

type AfterCommit = () => void;

/**
 * Changes as common table expressions (`name as (…), …`, no leading `with`), with their
 * parameters: `made` names the one among them that returns the made records, `key` its column
 * naming each record, `value` its column holding what only the statement knows (the number it
 * took), which replaces the record's event's stand-in.
 */
export interface StatementChange {
  ctes: string;
  params: unknown[];
  made: string;
  key: string;
  value: string;
}

/**
 * The event of the record `key` (in `made`), built before the statement runs: `standIn` (a JSON
 * number no payload can otherwise contain, unguessable so that no user text can forge it) stands
 * where its payload has the statement's value.
 */
export interface StatementEvent {
  key: string;
  change: RecordedChange;
  standIn: string;
}

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

  /** `baseUrl`: CAIRN_BASE_URL, for the links of payloads and the no-reply addresses of the users they name. */
  constructor(readonly baseUrl: string) {}

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
        const callback = await listener.inTransaction(em, batch);
        if (callback) this.afterCommit(em, callback);
      }
      recorded.push(...batch);
    }
    return recorded;
  }

  /**
   * Makes changes and records their events in ONE statement, which commits on
   * its own unless `em` is in a transaction: the changes' CTEs, then the events
   * of the records made (outbox ids in the order given), then each listener's
   * statement form over them. Whatever the changes lock (the repository's number
   * sequence) is then held only while PostgreSQL runs and commits the statement —
   * never across a round trip to this process, whose event loop may be busy with
   * other requests — and a statement that fails rolls back whole, the changes
   * with their events and deliveries. Returns the made records' rows (as JSON)
   * by key; a record the changes did not make has no row and no event.
   */
  async recordInStatement(
    em: EntityManager,
    change: StatementChange,
    events: StatementEvent[],
  ): Promise<Map<string, Record<string, unknown>>> {
    const rows = events.map(({ key, change: recorded, standIn }, position) => {
      const event = this.eventOf(recorded);
      return {
        key,
        position,
        type: event.type,
        action: event.action,
        repository_id: event.repositoryId,
        owner_id: event.ownerId,
        actor_id: event.actorId,
        created_at: event.createdAt.toISOString(),
        payload: JSON.stringify(event.payload),
        stand_in: standIn,
      };
    });
    // Outbox ids drawn in the order given (the subquery is ordered, nextval runs row by row over it),
    // so the listeners' rows can name them.
    const listened = this.listeners.map(
      (listener, i) =>
        `listened_${i} as (${listener.inStatement.sql(
          `(select b.id, b.type, b.action, b.body, b.repository_id, b.owner_id from event_body b join recorded r on r.id = b.id) as e`,
        )})`,
    );
    const [answer] = await preparedWrite<Record<string, unknown> & { records: Array<Record<string, unknown>> }>(
      em,
      `with ${change.ctes},
       event_body as (
         select nextval('domain_events_id_seq') as id, s.* from (
           select t.type, t.action, t.repository_id, t.owner_id, t.actor_id, t.created_at,
                  replace(t.payload, t.stand_in, m.${change.value}::text) as body
             from jsonb_to_recordset(?::jsonb) as t(key text, position int, type text, action text, repository_id text,
                                                     owner_id text, actor_id text, created_at timestamptz, payload text, stand_in text)
             join ${change.made} m on m.${change.key} = t.key
            order by t.position) s),
       recorded as (
         insert into domain_events (id, type, action, repository_id, owner_id, actor_id, payload, created_at)
         select b.id, b.type, b.action, b.repository_id, b.owner_id, b.actor_id, b.body::jsonb, b.created_at from event_body b
         returning id)
       ${listened.map((cte) => `, ${cte}`).join('\n')}
       select (select coalesce(jsonb_agg(to_jsonb(m)), '[]'::jsonb) from ${change.made} m) as records
              ${this.listeners.map((_, i) => `, (select coalesce(json_agg(l), '[]'::json) from listened_${i} l) as listened_${i}`).join('')}`,
      [...change.params, JSON.stringify(rows)],
    );
    const records = answer?.records ?? [];
    for (const [i, listener] of this.listeners.entries()) {
      const callback = listener.inStatement.done((answer?.[`listened_${i}`] as unknown[] | undefined) ?? []);
      if (!callback) continue;
      if (em.isInTransaction()) this.afterCommit(em, callback);
      else callback();
    }
    return new Map(records.map((record) => [String(record[change.key]), record]));
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
  const inserted = await executeBound<{ id: string }>(
    em,
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
