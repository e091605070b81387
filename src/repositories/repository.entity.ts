import { OptionalProps } from '@mikro-orm/core';
import { Entity, Formula, Index, ManyToOne, PrimaryKey, Property, Unique } from '@mikro-orm/decorators/legacy';
import { Field, ID, Int, ObjectType } from 'type-graphql';
import { Actor, User } from '../auth/user.entity.js';
import { newId } from '../ids.js';

/** A column of the counters row of the repository row aliased `alias`, as a subquery. */
const counterSql = (column: string) => (alias: string) =>
  `(select c.${column} from repository_counters c where c.repository_id = ${alias}.id)`;

@ObjectType('Repository')
@Entity({ tableName: 'repositories' })
@Unique({ properties: ['owner', 'nameKey'] })
@Index({ properties: ['createdAt', 'id'] })
export class Repository {
  [OptionalProps]?:
    | 'id'
    | 'description'
    | 'private'
    | 'defaultBranch'
    | 'empty'
    | 'createdAt'
    | 'updatedAt'
    | 'pushedAt'
    | 'openIssuesCount'
    | 'openPullsCount'
    | 'fullName';

  @Field(() => ID)
  @PrimaryKey({ type: 'text' })
  id: string = newId('repo');

  @Field()
  @Property({ type: 'text' })
  name!: string;

  /** Lowercase name: names are unique per owner case-insensitively. */
  @Property({ type: 'text' })
  nameKey!: string;

  @Field(() => Actor)
  @ManyToOne(() => User, { deleteRule: 'cascade' })
  owner!: User;

  @Field(() => String, { nullable: true })
  @Property({ type: 'text', nullable: true })
  description: string | null = null;

  @Field()
  @Property({ type: 'boolean' })
  private: boolean = false;

  @Field()
  @Property({ type: 'text' })
  defaultBranch: string = 'main';

  @Field({ description: 'True until the repository has its first ref.' })
  @Property({ type: 'boolean' })
  empty: boolean = true;

  @Field()
  @Property({ type: 'datetime' })
  createdAt: Date = new Date();

  @Field()
  @Property({ type: 'datetime' })
  updatedAt: Date = new Date();

  @Field(() => Date, { nullable: true })
  @Property({ type: 'datetime', nullable: true })
  pushedAt: Date | null = null;

  @Field(() => Int)
  @Formula((_cols, table) => counterSql('open_issues')(table.alias), { type: 'integer' })
  openIssuesCount: number = 0;

  /** Open pull requests, kept in the counters row as open issues are; the pulls capability shows it. */
  @Formula((_cols, table) => counterSql('open_pulls')(table.alias), { type: 'integer' })
  openPullsCount: number = 0;

  get fullName(): string {
    return `${this.owner.login}/${this.name}`;
  }
}
