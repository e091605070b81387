import { OptionalProps } from '@mikro-orm/core';
import { Entity, Index, ManyToOne, PrimaryKey, Property, Unique } from '@mikro-orm/decorators/legacy';
import { Field, ObjectType } from 'type-graphql';
import { Actor, User } from '../auth/user.entity.js';
import { newId } from '../ids.js';
import { Permission } from '../auth/permissions.js';
import { Repository } from '../repositories/repository.entity.js';

/** A user given `read`, `write` or `admin` on someone else's repository. */
@ObjectType('Collaborator')
@Entity({ tableName: 'collaborators' })
@Unique({ properties: ['repository', 'user'] })
export class Collaborator {
  [OptionalProps]?: 'id' | 'createdAt';

  @PrimaryKey({ type: 'text' })
  id: string = newId('col');

  @ManyToOne(() => Repository, { deleteRule: 'cascade' })
  repository!: Repository;

  @Field(() => Actor)
  @Index()
  @ManyToOne(() => User, { deleteRule: 'cascade' })
  user!: User;

  @Field(() => Permission)
  @Property({ type: 'text' })
  permission!: Permission;

  @Field()
  @Property({ type: 'datetime' })
  createdAt: Date = new Date();
}
