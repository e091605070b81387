import { OptionalProps } from '@mikro-orm/core';
import { Entity, Index, PrimaryKey, Property } from '@mikro-orm/decorators/legacy';
import type { EventType } from './event-types.js';

/**
 * The outbox: one row per change that can fire a webhook, written in the
 * same transaction as the change. The payload is the full webhook body, frozen at
 * the moment of the change. Repository and owner ids are plain columns, not
 * foreign keys, so events of a deleted repository survive it.
 */
@Entity({ tableName: 'domain_events' })
export class DomainEvent {
  [OptionalProps]?: 'id' | 'action' | 'repositoryId' | 'ownerId' | 'actorId' | 'createdAt';

  @PrimaryKey({ type: 'bigint', autoincrement: true })
  id!: string;

  @Property({ type: 'text' })
  type!: EventType;

  @Property({ type: 'text', nullable: true })
  action: string | null = null;

  @Index()
  @Property({ type: 'text', nullable: true })
  repositoryId: string | null = null;

  /** Owner of the repository: owner-level webhooks subscribe through it. */
  @Index()
  @Property({ type: 'text', nullable: true })
  ownerId: string | null = null;

  @Property({ type: 'text', nullable: true })
  actorId: string | null = null;

  @Property({ type: 'json' })
  payload!: Record<string, unknown>;

  @Property({ type: 'datetime' })
  createdAt: Date = new Date();
}
