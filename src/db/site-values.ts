import type { MikroORM } from '@mikro-orm/postgresql';

/** A value every process of the site shares, or undefined while none has stored it. */
export async function storedSiteValue(orm: MikroORM, name: string): Promise<string | undefined> {
  return (await orm.em.fork().execute<Array<{ value: string }>>(`select value from site_values where name = ?`, [name]))[0]?.value;
}

/**
 * A value every process of the site shares: the one in the database, or — the first time any
 * process asks — `initial()`, stored then. Processes starting at once agree on whichever insert
 * came first.
 */
export async function siteValue(orm: MikroORM, name: string, initial: () => string | Promise<string>): Promise<string> {
  const stored = await storedSiteValue(orm, name);
  if (stored !== undefined) return stored;
  await orm.em.fork().execute(`insert into site_values (name, value) values (?, ?) on conflict (name) do nothing`, [name, await initial()]);
  return (await storedSiteValue(orm, name))!;
}
