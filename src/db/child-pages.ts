import type { EntityManager } from '@mikro-orm/postgresql';

/** Where the children of a parent are: their table, the column naming the parent, their order (an index's columns). */
export interface Children {
  table: string;
  parent: string;
  order: string;
}

/**
 * A page of the children of each of many parents (the last 5 reviews of each of 30 pull requests),
 * with each parent's count of children, in ONE statement: a lateral page per parent, each an index
 * range scan. `children`' names are the caller's constants, never values. Rows come back as the
 * table's columns, in the order of `parents`.
 */
export async function childPages<Row extends object>(
  em: EntityManager,
  children: Children,
  parents: readonly string[],
  page: { limit: number; offset: number },
): Promise<Array<{ rows: Row[]; total: number }>> {
  const { table, parent, order } = children;
  const found = await em.execute<Array<Row & { parent_key: string; parent_total: number; child_present: boolean }>>(
    `select p.key as parent_key, c.total as parent_total, r.id is not null as child_present, r.*
       from jsonb_array_elements_text(?::jsonb) with ordinality as p(key, position)
       cross join lateral (select count(*)::int as total from ${table} where ${parent} = p.key) c
       left join lateral (select * from ${table} where ${parent} = p.key order by ${order} limit ? offset ?) r on true
      order by p.position`,
    [JSON.stringify(parents), page.limit, page.offset],
  );
  const pages = new Map(parents.map((key) => [key, { rows: [] as Row[], total: 0 }]));
  for (const { parent_key, parent_total, child_present, ...row } of found) {
    const into = pages.get(parent_key)!;
    into.total = parent_total;
    if (child_present) into.rows.push(row as unknown as Row);
  }
  return parents.map((key) => pages.get(key)!);
}
