import { Entity, PrimaryKey, Property } from '@mikro-orm/decorators/legacy';

/** A user assigned to an issue or pull request, keyed by (repository, number) as every part of a conversation. */
@Entity({ tableName: 'conversation_assignees' })
export class ConversationAssignee {
  @PrimaryKey({ type: 'text' })
  repositoryId!: string;

  @PrimaryKey({ type: 'integer' })
  number!: number;

  @PrimaryKey({ type: 'text' })
  userId!: string;

  @Property({ type: 'datetime' })
  createdAt: Date = new Date();
}
