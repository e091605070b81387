import type pg from 'pg';
import { copyFromFile, inTransaction, openSession, quoted } from './database-session.js';
import { tableFile, type Manifest, type SequenceEntry, type TableEntry } from './manifest.js';
import { loadOrder, type Reference } from './table-order.js';

/**
 * Loads a backup's tables into a database whose schema the migrations just brought to the
 * backup's, in one transaction: the site appears whole or not at all. Tables go in foreign-key
 * order (each after those it references); each must be empty before and take exactly the
 * manifest's count of rows. Then every sequence is set past the ids in use and those it had given,
 * and `afterLoad` adjusts what the restored site must make again, in the same transaction.
 */
export async function loadDatabase(
  url: string,
  backupDir: string,
  manifest: Manifest,
  afterLoad: (client: pg.Client) => Promise<void>,
): Promise<void> {
  const client = await openSession(url);
  try {
    await inTransaction(client, 'isolation level read committed', async () => {
      const byName = new Map(manifest.tables.map((table) => [table.name, table]));
      await checkColumns(client, manifest.tables);
      for (const name of loadOrder([...byName.keys()], await referencesOf(client))) {
        await loadTable(client, byName.get(name)!, tableFile(backupDir, name));
      }
      await setSequences(client, manifest.sequences);
      await afterLoad(client);
    });
  } finally {
    await client.end();
  }
}

/** Every table and column of the backup is in the migrated schema: the same migrations made both. */
async function checkColumns(client: pg.Client, tables: TableEntry[]): Promise<void> {
  const { rows } = await client.query<{ table: string; column: string }>(`
    select c.relname as table, a.attname as column
      from pg_attribute a join pg_class c on c.oid = a.attrelid join pg_namespace n on n.oid = c.relnamespace
     where n.nspname = 'public' and c.relkind in ('r', 'p') and a.attnum > 0 and not a.attisdropped and a.attgenerated = ''`);
  const present = new Set(rows.map((row) => `${row.table}.${row.column}`));
  const missing = tables.flatMap((table) => table.columns.map((column) => `${table.name}.${column}`)).filter((name) => !present.has(name));
  if (missing.length) throw new Error(`the migrated schema lacks what the backup has: ${missing.slice(0, 10).join(', ')}`);
}

async function referencesOf(client: pg.Client): Promise<Reference[]> {
  const { rows } = await client.query<Reference>(`
    select f.relname as from, t.relname as to
      from pg_constraint c
      join pg_class f on f.oid = c.conrelid
      join pg_class t on t.oid = c.confrelid
      join pg_namespace n on n.oid = f.relnamespace
     where c.contype = 'f' and n.nspname = 'public'`);
  return rows;
}

async function loadTable(client: pg.Client, table: TableEntry, file: string): Promise<void> {
  const { rows } = await client.query<{ any: boolean }>(`select exists (select 1 from ${quoted(table.name)}) as any`);
  if (rows[0]?.any) throw new Error(`table ${table.name} is not empty after the migrations: the database was not empty`);
  const copy = `copy ${quoted(table.name)} (${table.columns.map(quoted).join(', ')}) from stdin`;
  const loaded = await copyFromFile(client, copy, file).catch((error: Error) => {
    throw new Error(`the rows of table ${table.name} did not load: ${error.message}`);
  });
  if (loaded !== table.rows)
    throw new Error(`table ${table.name}: the backup's file holds ${loaded} rows, its manifest says ${table.rows}`);
}

/** setval to the larger of the column's largest value and the sequence's last value at the backup (when either is one). */
async function setSequences(client: pg.Client, sequences: SequenceEntry[]): Promise<void> {
  for (const sequence of sequences) {
    const { rows: found } = await client.query<{ oid: string | null }>('select to_regclass($1)::text as oid', [
      `public.${quoted(sequence.name)}`,
    ]);
    if (!found[0]?.oid) throw new Error(`sequence ${sequence.name} of the backup is not in the migrated schema`);
    const { rows: used } = await client.query<{ max: string | null }>(
      `select max(${quoted(sequence.column)})::text as max from ${quoted(sequence.table)}`,
    );
    const value = [BigInt(used[0]?.max ?? 0), BigInt(sequence.lastValue)].reduce((a, b) => (a > b ? a : b));
    if (value > 0n) await client.query('select setval($1::regclass, $2::bigint)', [`public.${quoted(sequence.name)}`, value.toString()]);
  }
}
