import { Kind, type GraphQLResolveInfo, type SelectionSetNode } from 'graphql';
import { ArgsType, Field, Int, ObjectType } from 'type-graphql';
import type { ClassType } from 'type-graphql';
import { DomainError } from '../errors/domain-error.js';

export const DEFAULT_LIMIT = 30;
export const MAX_LIMIT = 100;

@ArgsType()
export class PageArgs {
  @Field(() => Int, { nullable: true, description: `Page size; default ${DEFAULT_LIMIT}, larger values are clamped to ${MAX_LIMIT}.` })
  limit?: number | null;

  @Field(() => Int, { nullable: true, description: 'Items to skip; default 0.' })
  offset?: number | null;
}

export interface Page {
  limit: number;
  offset: number;
}

/** Pages: default 30, clamp to 100, negative values are an error (400 invalid_pagination in REST). */
export function resolvePage(args: PageArgs): Page {
  const limit = args.limit ?? DEFAULT_LIMIT;
  const offset = args.offset ?? 0;
  if (limit < 0 || offset < 0) {
    throw new DomainError('INVALID_PAGINATION', 'limit and offset must be non-negative integers');
  }
  return { limit: Math.min(limit, MAX_LIMIT), offset };
}

export interface Connection<T> {
  nodes: T[];
  totalCount: number;
  limit: number;
  offset: number;
  hasMore: boolean;
}

export function connection<T>(nodes: T[], totalCount: number, page: Page): Connection<T> {
  return { nodes, totalCount, limit: page.limit, offset: page.offset, hasMore: page.offset + nodes.length < totalCount };
}

/** Whether a connection field's selection asks for its items (`nodes`), directly or through fragments (whatever their directives say). */
export function selectsNodes(info: GraphQLResolveInfo): boolean {
  return info.fieldNodes.some((field) => selects(field.selectionSet, 'nodes', info));
}

/** Whether a selection set selects the field `name`, directly or through fragments (whatever their directives say). */
function selects(set: SelectionSetNode | undefined, name: string, info: GraphQLResolveInfo): boolean {
  return (set?.selections ?? []).some((selection) => {
    if (selection.kind === Kind.FIELD) return selection.name.value === name;
    if (selection.kind === Kind.INLINE_FRAGMENT) return selects(selection.selectionSet, name, info);
    return selects(info.fragments[selection.name.value]?.selectionSet, name, info);
  });
}

/** Builds the GraphQL type of a paginated list of `T` (the REST envelope's source). */
export function ConnectionType<T extends object>(itemType: ClassType<T>, name: string) {
  @ObjectType(name)
  class ConnectionClass implements Connection<T> {
    @Field(() => [itemType])
    nodes!: T[];

    @Field(() => Int, { description: 'Total number of items across all pages.' })
    totalCount!: number;

    @Field(() => Int, { description: 'Page size applied.' })
    limit!: number;

    @Field(() => Int, { description: 'Offset applied.' })
    offset!: number;

    @Field({ description: 'Whether more items follow this page.' })
    hasMore!: boolean;
  }
  return ConnectionClass;
}
