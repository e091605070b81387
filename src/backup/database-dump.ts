import fs from 'node:fs/promises';
import path from 'node:path';
import type pg from 'pg';
import { copyToFile, inTransaction, openSession, quoted } from './database-session.js';
import { DATABASE_DIR, tableFile, type Manifest, type SequenceEntry, type TableEntry } from './manifest.js';
import { Refusal } from './refusal.js';

/**
 * Tables a backup leaves out: each holds the state of the processes running now, not of the site,
 * and a restored site starts without it.
 */
const NOT_BACKED_UP: ReadonlyMap<string, string> = new Map([
  ['git_push_journal', 'pushes in flight; the copied repositories have the recorded refs only, so no push is in flight in a backup'],
  ['repository_lock_leases', 'the repository locks held by running processes'],
  ['mikro_orm_migrations', 'the executed migrations: the manifest names them, and the restore executes them again'],
]);

/**
 * The job queue's tables (Agenda makes them at start, outside the migrations): its jobs are the
 * recurring ones every process schedules again when it starts, and their log.
 */
const JOB_QUEUE_TABLES = /^agenda_/;

function backedUp(table: string): boolean {
  return !NOT_BACKED_UP.has(table) && !JOB_QUEUE_TABLES.test(table);
}

export interface SnapshotRepository {
  id: string;
  defaultBranch: string;
  /** Its refs as `git_refs` recorded them: name and the object each points at. */
  refs: Array<{ name: string; sha: string }>;
  /** The heads its merged pull requests merged, which their `refs/pull/<n>/head` keep (no `git_refs` row records pull refs). */
  mergedPullHeads: Array<{ number: number; sha: string }>;
}

export interface DatabaseSnapshot extends Pick<Manifest, 'migrations' | 'tables' | 'sequences' | 'secretKey'> {
  repositories: SnapshotRepository[];
  /** The site's id, which its repositories directory's `.cairn-site` names (null before the service first started). */
  siteId: string | null;
}

/**
 * Dumps every table of the site (but those above) into `<backupDir>/database/`, one file each, and
 * reads what the repositories copy needs, all in ONE repeatable-read transaction: one snapshot of
 * the site, however long the dump takes and whatever the service commits meanwhile. So the rows
 * agree with each other, and the refs recorded for each repository are those of the same instant.
 */
export async function dumpDatabase(url: string, backupDir: string): Promise<DatabaseSnapshot> {
  const client = await openSession(url);
  try {
    return await inTransaction(client, 'isolation level repeatable read read only', async () => {
      const { rows: schema } = await client.query<{ migrations: string | null; repositories: string | null }>(
        `select to_regclass('public.mikro_orm_migrations')::text as migrations, to_regclass('public.repositories')::text as repositories`,
      );
      if (!schema[0]?.migrations || !schema[0].repositories)
        throw new Refusal('this database holds no Cairn site (it has no Cairn tables)');
      const { rows: migrations } = await client.query<{ name: string }>('select name from mikro_orm_migrations order by id');
      await fs.mkdir(path.join(backupDir, DATABASE_DIR), { mode: 0o700 });
      const tables: TableEntry[] = [];
      for (const { name, columns } of await tablesOf(client)) {
        const copy = `copy (select ${columns.map(quoted).join(', ')} from ${quoted(name)}) to stdout`;
        tables.push({ name, columns, rows: await copyToFile(client, copy, tableFile(backupDir, name)) });
      }
      return {
        migrations: migrations.map((row) => row.name),
        tables,
        sequences: await sequencesOf(client),
        repositories: await repositoriesOf(client),
        ...(await siteValuesOf(client)),
      };
    });
  } finally {
    await client.end();
  }
}

/** The tables of schema `public` to dump, each with its columns but the generated ones (PostgreSQL computes those). */
async function tablesOf(client: pg.Client): Promise<Array<{ name: string; columns: string[] }>> {
  const { rows } = await client.query<{ name: string; columns: string[] }>(`
    select c.relname as name,
           (select coalesce(json_agg(a.attname order by a.attnum), '[]')
              from pg_attribute a
             where a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped and a.attgenerated = '') as columns
      from pg_class c join pg_namespace n on n.oid = c.relnamespace
     where n.nspname = 'public' and c.relkind in ('r', 'p') and not c.relispartition
     order by c.relname`);
  return rows.filter((table) => backedUp(table.name));
}

/**
 * The sequences that feed columns (`bigserial`) and the last value each gave. Sequences are outside
 * transactions: this value is at least that of the snapshot, and restoring it keeps ids from being
 * given twice, even those of rows deleted since.
 */
async function sequencesOf(client: pg.Client): Promise<SequenceEntry[]> {
  const { rows } = await client.query<{ name: string; table: string; column: string; lastValue: string | null }>(`
    select s.relname as name, t.relname as table, a.attname as column, q.last_value::text as "lastValue"
      from pg_depend d
      join pg_class s on s.oid = d.objid and s.relkind = 'S'
      join pg_class t on t.oid = d.refobjid
      join pg_namespace n on n.oid = t.relnamespace and n.nspname = 'public'
      join pg_attribute a on a.attrelid = t.oid and a.attnum = d.refobjsubid
      left join pg_sequences q on q.schemaname = 'public' and q.sequencename = s.relname
     where d.classid = 'pg_class'::regclass and d.refclassid = 'pg_class'::regclass and d.deptype in ('a', 'i')
     order by s.relname`);
  return rows.filter((row) => backedUp(row.table)).map((row) => ({ ...row, lastValue: row.lastValue ?? '0' }));
}

/** Every repository with the refs recorded for it and the heads of its merged pull requests. */
async function repositoriesOf(client: pg.Client): Promise<SnapshotRepository[]> {
  const { rows: repositories } = await client.query<{ id: string; defaultBranch: string }>(
    'select id, default_branch as "defaultBranch" from repositories order by id',
  );
  const byId = new Map<string, SnapshotRepository>(
    repositories.map((repository) => [repository.id, { ...repository, refs: [], mergedPullHeads: [] }]),
  );
  const { rows: refs } = await client.query<{ repositoryId: string; name: string; sha: string }>(
    'select repository_id as "repositoryId", name, sha from git_refs order by repository_id, name',
  );
  for (const ref of refs) byId.get(ref.repositoryId)?.refs.push({ name: ref.name, sha: ref.sha });
  const { rows: merged } = await client.query<{ repositoryId: string; number: number; sha: string }>(
    `select repository_id as "repositoryId", number, head_sha as sha from pull_requests where state = 'merged' order by repository_id, number`,
  );
  for (const pull of merged) byId.get(pull.repositoryId)?.mergedPullHeads.push({ number: pull.number, sha: pull.sha });
  return [...byId.values()];
}

/**
 * What the site's values say (their names only, and the site's id): where the key of its webhook
 * secrets is — a site keyed by CAIRN_SECRET_KEY keeps the key's check value, and not the key.
 */
async function siteValuesOf(client: pg.Client): Promise<Pick<DatabaseSnapshot, 'secretKey' | 'siteId'>> {
  const { rows: table } = await client.query<{ name: string | null }>(`select to_regclass('public.site_values')::text as name`);
  if (!table[0]?.name) return { secretKey: 'in-backup', siteId: null };
  const { rows } = await client.query<{ name: string; siteId: string | null }>(
    `select name, case when name = 'site-id' then value end as "siteId" from site_values`,
  );
  const names = new Set(rows.map((row) => row.name));
  return {
    secretKey: names.has('secret-key-check') && !names.has('secret-key') ? 'CAIRN_SECRET_KEY' : 'in-backup',
    siteId: rows.find((row) => row.name === 'site-id')?.siteId ?? null,
  };
}
