import { OptionalProps } from '@mikro-orm/core';
import { Entity, Index, ManyToOne, PrimaryKey, Property } from '@mikro-orm/decorators/legacy';
import { GraphQLJSONObject } from 'graphql-scalars';
import { Field, ID, Int, ObjectType, registerEnumType } from 'type-graphql';
import { Webhook } from './webhook.entity.js';

export enum DeliveryStatus {
  PENDING = 'pending',
  SUCCEEDED = 'succeeded',
  FAILED = 'failed',
  CANCELLED = 'cancelled',
}
registerEnumType(DeliveryStatus, { name: 'DeliveryStatus' });

export enum AttemptTrigger {
  INITIAL = 'initial',
  RETRY = 'retry',
  REDELIVERY = 'redelivery',
}
registerEnumType(AttemptTrigger, { name: 'DeliveryTrigger' });

/** The request as sent on the latest attempt (the body is the same on every attempt). */
@ObjectType('DeliveryRequest')
export class DeliveryRequest {
  @Field()
  url!: string;

  @Field(() => GraphQLJSONObject)
  headers!: Record<string, string>;

  @Field({ description: 'The exact body bytes (UTF-8) that were signed and sent.' })
  body!: string;
}

/** The latest response; the body is kept up to 64 KiB. */
@ObjectType('DeliveryResponse')
export class DeliveryResponse {
  @Field(() => Int)
  statusCode!: number;

  @Field(() => GraphQLJSONObject)
  headers!: Record<string, string>;

  @Field()
  body!: string;

  @Field({ description: 'True when the body was longer than 64 KiB and was cut.' })
  truncated!: boolean;
}

/**
 * One delivery: an event for one webhook, with a fixed body. It keeps
 * its UUID through retries and redeliveries; each redelivery starts a new
 * series of attempts.
 */
@ObjectType('Delivery')
@Entity({ tableName: 'deliveries' })
@Index({ properties: ['webhook', 'createdAt', 'id'] })
@Index({ properties: ['createdAt'] })
@Index({
  name: 'deliveries_due_index',
  expression: `create index "deliveries_due_index" on "deliveries" ("webhook_id", "next_attempt_at", "id") where "status" = 'pending'`,
})
export class Delivery {
  [OptionalProps]?:
    | 'eventId'
    | 'action'
    | 'status'
    | 'attemptsCount'
    | 'seriesAttempts'
    | 'series'
    | 'nextAttemptAt'
    | 'claimedUntil'
    | 'statusCode'
    | 'durationMs'
    | 'createdAt'
    | 'completedAt'
    | 'lastRequestHeaders'
    | 'lastRequestUrl'
    | 'lastResponse'
    | 'redelivery'
    | 'webhookId';

  @Field(() => ID, { description: 'UUID, sent as X-Cairn-Delivery.' })
  @PrimaryKey({ type: 'uuid' })
  id!: string;

  @ManyToOne(() => Webhook, { deleteRule: 'cascade' })
  webhook!: Webhook;

  /** The domain event it delivers (null for pings). */
  @Property({ type: 'bigint', nullable: true })
  eventId: string | null = null;

  @Field()
  @Property({ type: 'text' })
  event!: string;

  @Field(() => String, { nullable: true })
  @Property({ type: 'text', nullable: true })
  action: string | null = null;

  @Field(() => DeliveryStatus)
  @Property({ type: 'text' })
  status: DeliveryStatus = DeliveryStatus.PENDING;

  /** The exact JSON text sent on every attempt. */
  @Property({ type: 'text', lazy: true })
  body!: string;

  @Field(() => Int)
  @Property({ type: 'integer' })
  attemptsCount: number = 0;

  /** Attempts in the current series (the first delivery or the latest redelivery). */
  @Property({ type: 'integer' })
  seriesAttempts: number = 0;

  /** 0 for the first series, n after n redeliveries. */
  @Property({ type: 'integer' })
  series: number = 0;

  @Field(() => Date, { nullable: true })
  @Property({ type: 'datetime', nullable: true })
  nextAttemptAt: Date | null = null;

  /** A worker holds the delivery until then; an expired claim (crashed worker) can be taken over. */
  @Property({ type: 'datetime', nullable: true })
  claimedUntil: Date | null = null;

  @Field(() => Int, { nullable: true, description: 'Status code of the latest response.' })
  @Property({ type: 'integer', nullable: true })
  statusCode: number | null = null;

  @Field(() => Int, { nullable: true, description: 'Duration of the latest attempt.' })
  @Property({ type: 'integer', nullable: true })
  durationMs: number | null = null;

  @Field()
  @Property({ type: 'datetime' })
  createdAt: Date = new Date();

  @Field(() => Date, { nullable: true })
  @Property({ type: 'datetime', nullable: true })
  completedAt: Date | null = null;

  @Property({ type: 'text', nullable: true })
  lastRequestUrl: string | null = null;

  @Property({ type: 'json', nullable: true, lazy: true })
  lastRequestHeaders: Record<string, string> | null = null;

  @Property({ type: 'json', nullable: true, lazy: true })
  lastResponse: { statusCode: number; headers: Record<string, string>; body: string; truncated: boolean } | null = null;

  @Field({ description: 'Whether it has been redelivered.' })
  get redelivery(): boolean {
    return this.series > 0;
  }

  @Field(() => ID)
  get webhookId(): string {
    return this.webhook.id;
  }
}

@ObjectType('DeliveryAttempt')
@Entity({ tableName: 'delivery_attempts' })
export class DeliveryAttemptRecord {
  [OptionalProps]?: 'id' | 'durationMs' | 'statusCode' | 'error';

  @PrimaryKey({ type: 'bigint', autoincrement: true })
  id!: string;

  @Index()
  @ManyToOne(() => Delivery, { deleteRule: 'cascade' })
  delivery!: Delivery;

  @Field(() => Int)
  @Property({ type: 'integer' })
  number!: number;

  @Field()
  @Property({ type: 'datetime' })
  startedAt!: Date;

  @Field(() => Int, { nullable: true })
  @Property({ type: 'integer', nullable: true })
  durationMs: number | null = null;

  @Field(() => Int, { nullable: true })
  @Property({ type: 'integer', nullable: true })
  statusCode: number | null = null;

  @Field(() => String, { nullable: true })
  @Property({ type: 'text', nullable: true })
  error: string | null = null;

  @Field(() => AttemptTrigger)
  @Property({ type: 'text' })
  trigger!: AttemptTrigger;
}
