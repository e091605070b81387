import type { MikroORM } from '@mikro-orm/postgresql';

/**
 * A value every process of the site shares: the one in the database, or — the first time any
 * process asks — `initial()`, stored then. Processes starting at once agree on whichever insert
 * came first.
 */
export async function siteValue(orm: MikroORM, name: string, initial: () => string | Promise<string>): Promise<string> {
  const em = orm.em.fork();
  const read = async () => (await em.execute<Array<{ value: string }>>(`select value from site_values where name = ?`, [name]))[0]?.value;
  const stored = await read();
  if (stored !== undefined) return stored;
  await em.execute(`insert into site_values (name, value) values (?, ?) on conflict (name) do nothing`, [name, await initial()]);
  return (await read())!;
}
