import { OptionalProps } from '@mikro-orm/core';
import { Entity, Index, ManyToOne, PrimaryKey, Property } from '@mikro-orm/decorators/legacy';
import { Field, ID, ObjectType } from 'type-graphql';
import { newId } from '../ids.js';
import { User } from './user.entity.js';

/** A personal access token. Only a SHA-256 of the secret is stored; the secret is shown once. */
@ObjectType('AccessToken')
@Entity({ tableName: 'access_tokens' })
export class AccessToken {
  [OptionalProps]?: 'id' | 'expiresAt' | 'lastUsedAt' | 'revokedAt' | 'createdAt';

  @Field(() => ID)
  @PrimaryKey({ type: 'text' })
  id: string = newId('tok');

  @Index()
  @ManyToOne(() => User, { deleteRule: 'cascade' })
  user!: User;

  @Field()
  @Property({ type: 'text' })
  name!: string;

  @Field(() => [String])
  @Property({ type: 'text[]' })
  scopes!: string[];

  @Property({ type: 'text', unique: true, hidden: true })
  tokenHash!: string;

  @Field(() => Date, { nullable: true })
  @Property({ type: 'datetime', nullable: true })
  expiresAt: Date | null = null;

  @Field(() => Date, { nullable: true, description: 'Updated at most once a minute.' })
  @Property({ type: 'datetime', nullable: true })
  lastUsedAt: Date | null = null;

  @Field(() => Date, { nullable: true })
  @Property({ type: 'datetime', nullable: true })
  revokedAt: Date | null = null;

  @Field()
  @Property({ type: 'datetime' })
  createdAt: Date = new Date();
}
