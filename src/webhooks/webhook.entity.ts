import { OptionalProps } from '@mikro-orm/core';
import { Entity, Index, ManyToOne, PrimaryKey, Property } from '@mikro-orm/decorators/legacy';
import { Field, ID, Int, ObjectType } from 'type-graphql';
import { User } from '../auth/user.entity.js';
import { newId } from '../ids.js';
import { Repository } from '../repositories/repository.entity.js';

/** `last_response` of a webhook record: how its latest attempt ended. */
@ObjectType('WebhookLastResponse')
class WebhookLastResponse {
  @Field(() => Int, { nullable: true })
  statusCode!: number | null;

  @Field(() => String, { nullable: true })
  error!: string | null;

  @Field()
  at!: Date;
}

/**
 * A webhook: of one repository, or owner-level (no repository: every
 * repository of `user`). The secret is stored only encrypted (AES-256-GCM).
 */
@ObjectType('Webhook')
@Entity({ tableName: 'webhooks' })
@Index({ properties: ['user'], options: { where: 'repository_id is null' } })
export class Webhook {
  [OptionalProps]?:
    | 'id'
    | 'repository'
    | 'active'
    | 'createdAt'
    | 'updatedAt'
    | 'lastResponse'
    | 'failingSince'
    | 'disabledAt'
    | 'disabledReason'
    | 'hasSecret'
    | 'contentType'
    | 'repositoryId';

  @Field(() => ID)
  @PrimaryKey({ type: 'text' })
  id: string = newId('hook');

  @Index()
  @ManyToOne(() => Repository, { nullable: true, deleteRule: 'cascade' })
  repository: Repository | null = null;

  /** Owner-level hooks: whose repositories. Repository hooks: who created it. */
  @ManyToOne(() => User, { deleteRule: 'cascade' })
  user!: User;

  @Field()
  @Property({ type: 'text' })
  url!: string;

  @Field(() => [String], { description: 'Event types, or the single value "*".' })
  @Property({ type: 'text[]' })
  events!: string[];

  @Field()
  @Property({ type: 'boolean' })
  active: boolean = true;

  @Property({ type: 'text', hidden: true })
  secretCiphertext!: string;

  @Field()
  @Property({ type: 'datetime' })
  createdAt: Date = new Date();

  @Field()
  @Property({ type: 'datetime' })
  updatedAt: Date = new Date();

  @Field(() => WebhookLastResponse, { nullable: true })
  @Property({ type: 'json', nullable: true })
  lastResponse: { statusCode: number | null; error: string | null; at: string } | null = null;

  @Field(() => Date, { nullable: true, description: 'Start of the current streak of failed attempts.' })
  @Property({ type: 'datetime', nullable: true })
  failingSince: Date | null = null;

  @Field(() => Date, { nullable: true })
  @Property({ type: 'datetime', nullable: true })
  disabledAt: Date | null = null;

  @Field(() => String, { nullable: true, description: '"consistent_failure" when the service disabled it.' })
  @Property({ type: 'text', nullable: true })
  disabledReason: string | null = null;

  @Field({ description: 'Every delivery is signed: always true.' })
  get hasSecret(): boolean {
    return true;
  }

  @Field()
  get contentType(): string {
    return 'json';
  }

  @Field(() => ID, { nullable: true, description: 'Null for owner-level webhooks.' })
  get repositoryId(): string | null {
    return this.repository?.id ?? null;
  }
}
