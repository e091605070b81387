import { invalid } from '../errors/domain-error.js';
import { ArgsType, Field, registerEnumType } from 'type-graphql';

export enum ConversationSort {
  CREATED = 'created',
  UPDATED = 'updated',
}
registerEnumType(ConversationSort, { name: 'ConversationSort' });

export enum SortDirection {
  ASC = 'asc',
  DESC = 'desc',
}
registerEnumType(SortDirection, { name: 'SortDirection' });

/** The filters and order the lists of issues and of pull requests take alike. */
@ArgsType()
export class ConversationFilterArgs {
  @Field(() => [String], {
    nullable: true,
    description:
      'Only those having every one of these labels (names, any case; an entry may hold several separated by commas); at most 100.',
  })
  labels?: string[] | null;

  @Field(() => String, { nullable: true, description: 'Only those assigned to this login; `none`: only those assigned to nobody.' })
  assignee?: string | null;

  @Field(() => String, { nullable: true, description: 'Only those opened by this login.' })
  creator?: string | null;

  @Field(() => ConversationSort, { defaultValue: ConversationSort.CREATED })
  sort!: ConversationSort;

  @Field(() => SortDirection, { defaultValue: SortDirection.DESC, description: 'Ties are ordered by id, the same way.' })
  direction!: SortDirection;
}

/** At most this many label names in one filter. */
const MOST_LABELS = 100;

/**
 * The distinct label names of a filter, lowercase: each entry may itself hold several separated by
 * commas (`labels=a,b` as the REST lists take it; a label name cannot hold a comma). More than
 * MOST_LABELS: 422.
 */
function labelKeys(labels: string[] | null | undefined): string[] {
  const keys = new Set<string>();
  for (const entry of labels ?? []) {
    for (const name of entry.split(',')) {
      const key = name.trim().toLowerCase();
      if (key !== '') keys.add(key);
      if (keys.size > MOST_LABELS) throw invalid('labels', 'too_many', `a list filters by at most ${MOST_LABELS} labels`);
    }
  }
  return [...keys];
}

/** A filter as SQL over the rows aliased `a` (issues or pull requests): conditions to AND in, their parameters, and the order. */
export interface FilterSql {
  where: string;
  params: unknown[];
  /** The order over the rows aliased `alias`: `a.created_at desc, a.id desc`. */
  order(alias: string): string;
  /** The sort column (`created_at` or `updated_at`), for a query that selects it to order an outer one. */
  column: string;
}

/**
 * The SQL of a filter over one repository's issues or pull requests. Every condition reads an
 * index: a label's numbers (`conversation_labels (label_id, number)`), an assignee's
 * (`conversation_assignees (repository_id, user_id, number)`), a creator's rows
 * (`(repository_id, user_id, created_at)`); the orders have `(repository_id, [state,] created_at|updated_at, id)`.
 * The text depends only on which filters are given, so it is one of a fixed set.
 */
export function filterSql(filter: Partial<ConversationFilterArgs>, repositoryId: string): FilterSql {
  const where: string[] = [];
  const params: unknown[] = [];
  const labels = labelKeys(filter.labels);
  if (labels.length) {
    where.push(`a.number in (
      select cl.number from conversation_labels cl
       where cl.label_id in (select id from labels where repository_id = ? and name_key in (select jsonb_array_elements_text(?::text::jsonb)))
       group by cl.number having count(*) = ?)`);
    params.push(repositoryId, JSON.stringify(labels), labels.length);
  }
  if (filter.assignee != null && filter.assignee.toLowerCase() === 'none') {
    where.push('a.number not in (select ca.number from conversation_assignees ca where ca.repository_id = ?)');
    params.push(repositoryId);
  } else if (filter.assignee != null) {
    where.push(`a.number in (select ca.number from conversation_assignees ca
                               where ca.repository_id = ? and ca.user_id = (select id from users where login_key = ?))`);
    params.push(repositoryId, filter.assignee.toLowerCase());
  }
  if (filter.creator != null) {
    where.push('a.user_id = (select id from users where login_key = ?)');
    params.push(filter.creator.toLowerCase());
  }
  const column = filter.sort === ConversationSort.UPDATED ? 'updated_at' : 'created_at';
  const direction = filter.direction === SortDirection.ASC ? 'asc' : 'desc';
  return {
    where: where.map((condition) => ` and ${condition}`).join(''),
    params,
    order: (alias) => `${alias}.${column} ${direction}, ${alias}.id ${direction}`,
    column,
  };
}
