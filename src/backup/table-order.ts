/** A foreign key: rows of `from` reference rows of `to`. */
export interface Reference {
  from: string;
  to: string;
}

/**
 * The tables in an order that loads each after the tables it references, so every foreign key
 * holds as rows arrive (a restore loads into the schema with its constraints in place). A table
 * referencing itself loads in one COPY: PostgreSQL checks those keys at the end of the statement.
 * References to tables outside `tables` do not order anything. Ties go by name, so the order is
 * the same on every run.
 */
export function loadOrder(tables: string[], references: Reference[]): string[] {
  const pending = new Set(tables);
  const needs = new Map(tables.map((table) => [table, new Set<string>()]));
  for (const { from, to } of references) {
    if (from !== to && pending.has(from) && pending.has(to)) needs.get(from)!.add(to);
  }
  const order: string[] = [];
  while (pending.size) {
    const ready = [...pending].filter((table) => [...needs.get(table)!].every((needed) => !pending.has(needed))).sort();
    if (!ready.length) {
      throw new Error(`the foreign keys between ${[...pending].sort().join(', ')} form a cycle: no order loads them one after another`);
    }
    for (const table of ready) {
      order.push(table);
      pending.delete(table);
    }
  }
  return order;
}
