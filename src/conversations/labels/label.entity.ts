import { OptionalProps } from '@mikro-orm/core';
import { Entity, PrimaryKey, Property, Unique } from '@mikro-orm/decorators/legacy';
import { Field, ID, ObjectType } from 'type-graphql';
import { newId } from '../../ids.js';

/**
 * A label of a repository. Names are unique without regard to case (`nameKey`, lowercase) and keep
 * their spelling; the color is six lowercase hex digits.
 */
@ObjectType('Label')
@Entity({ tableName: 'labels' })
@Unique({ properties: ['repositoryId', 'nameKey'] })
export class Label {
  [OptionalProps]?: 'id' | 'description' | 'createdAt' | 'updatedAt';

  @Field(() => ID)
  @PrimaryKey({ type: 'text' })
  id: string = newId('lbl');

  @Property({ type: 'text' })
  repositoryId!: string;

  @Field()
  @Property({ type: 'text' })
  name!: string;

  @Property({ type: 'text' })
  nameKey!: string;

  @Field({ description: 'Six hex digits, without #.' })
  @Property({ type: 'text' })
  color!: string;

  @Field(() => String, { nullable: true })
  @Property({ type: 'text', nullable: true })
  description: string | null = null;

  @Property({ type: 'datetime' })
  createdAt: Date = new Date();

  @Property({ type: 'datetime' })
  updatedAt: Date = new Date();
}

/** A label on an issue or pull request, keyed by (repository, number) as every part of a conversation. */
@Entity({ tableName: 'conversation_labels' })
export class ConversationLabel {
  @PrimaryKey({ type: 'text' })
  repositoryId!: string;

  @PrimaryKey({ type: 'integer' })
  number!: number;

  @PrimaryKey({ type: 'text' })
  labelId!: string;

  @Property({ type: 'datetime' })
  createdAt: Date = new Date();
}
