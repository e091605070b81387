import { OptionalProps } from '@mikro-orm/core';
import { Entity, PrimaryKey, Property } from '@mikro-orm/decorators/legacy';
import { Field, ID, ObjectType } from 'type-graphql';
import { newId } from '../ids.js';

/** An account. `login` keeps its spelling; `loginKey` (lowercase) makes logins unique case-insensitively. */
@ObjectType('User', { description: 'An account, as seen by itself or a site admin.' })
@Entity({ tableName: 'users' })
export class User {
  [OptionalProps]?: 'id' | 'admin' | 'commitEmail' | 'createdAt';

  @Field(() => ID)
  @PrimaryKey({ type: 'text' })
  id: string = newId('usr');

  @Field()
  @Property({ type: 'text' })
  login!: string;

  @Property({ type: 'text', unique: true })
  loginKey!: string;

  /** Private: read only by the account itself and site admins, never written into commits or payloads. */
  @Field({ description: 'The account email: private, never written into commits or payloads.' })
  @Property({ type: 'text' })
  email!: string;

  /** The address the user chose to show in the commits Cairn writes for them; null: their no-reply address. */
  @Field(() => String, {
    nullable: true,
    description:
      'The public commit email, set with updateViewer: written into the commits Cairn makes for this user. Null: noreplyEmail is.',
  })
  @Property({ type: 'text', nullable: true })
  commitEmail: string | null = null;

  @Field({ description: 'Site administrator.' })
  @Property({ type: 'boolean' })
  admin: boolean = false;

  @Field()
  @Property({ type: 'datetime' })
  createdAt: Date = new Date();
}

/** A reference to a user inside other records: `{id, login}` only, never the email. */
@ObjectType('Actor', { description: 'A user as referenced from other records.' })
export class Actor {
  @Field(() => ID)
  id!: string;

  @Field()
  login!: string;
}
