import { existsSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import type pg from 'pg';
import { ENTITIES } from '../capabilities.js';
import type { Config } from '../config.js';
import { MIGRATIONS } from '../db/migrations/index.js';
import { migrateTo } from '../db/orm.js';
import type { Logger } from '../logger.js';
import { openSession } from './database-session.js';
import { loadDatabase } from './database-load.js';
import { readManifest, REPOSITORIES_DIR, tableFile, type Manifest } from './manifest.js';
import { Refusal } from './refusal.js';
import { embeddedDatabaseDir, newSiteDatabase, type SiteDatabase } from './site-database.js';

export interface RestoreSummary {
  tables: number;
  rows: number;
  repositories: number;
  seconds: number;
  manifest: Manifest;
}

/**
 * `cairn restore <dir>`: a backup into an empty site, the configured data dir (its embedded
 * PostgreSQL, made here) or DATABASE_URL's empty database, and an empty repositories directory.
 * Everything that could refuse is checked before anything changes. The schema is migrated to the
 * backup's last migration exactly, its rows loaded in one transaction, then its repositories
 * copied; the service applies any later migration at its next start.
 */
export async function restore(config: Config, source: string, log: Logger): Promise<RestoreSummary> {
  const started = performance.now();
  const dir = path.resolve(source);
  const manifest = await readManifest(dir);
  refuseUnknownMigrations(manifest);
  await refuseMissingParts(dir, manifest);
  await refuseOccupiedTargets(config);

  const passwordFile = path.join(config.dataDir, 'postgres.password');
  const undo = {
    embedded: !config.databaseUrl,
    passwordFile: !config.databaseUrl && !existsSync(passwordFile) ? passwordFile : null,
    repositoriesDir: !existsSync(config.repositoriesDir),
    migratedExternal: false,
  };
  let database: SiteDatabase | undefined;
  try {
    database = await newSiteDatabase(config, log);
    if (config.databaseUrl) await refuseNonEmptyDatabase(database.url);
    undo.migratedExternal = !!config.databaseUrl; // from the first statement: a migration that failed halfway leaves tables too
    const executed = await migrateTo(database.url, log, ENTITIES, manifest.migrations.at(-1)!);
    if (executed.join('\n') !== manifest.migrations.join('\n')) {
      throw new Error(`the migrations executed (${executed.join(', ')}) are not the backup's (${manifest.migrations.join(', ')})`);
    }
    // The repositories first, the rows last: their commit is the restore's, so a restore cut off
    // before it leaves no site whose records name repositories it lacks.
    await copyRepositories(dir, config.repositoriesDir, manifest);
    await loadDatabase(database.url, dir, manifest, checkOpenPullsAgain);
  } catch (error) {
    if (error instanceof Refusal) throw error; // refused before any change
    await database?.stop();
    database = undefined;
    await undoRestore(config, manifest, undo);
    if (undo.migratedExternal) {
      (error as Error).message +=
        "\nThe database DATABASE_URL names may now have Cairn's tables: drop and create it again before the next attempt.";
    }
    throw error;
  } finally {
    await database?.stop();
  }
  return {
    tables: manifest.tables.length,
    rows: manifest.tables.reduce((sum, table) => sum + table.rows, 0),
    repositories: manifest.repositories.length,
    seconds: (performance.now() - started) / 1000,
    manifest,
  };
}

/** The backup's migrations must be this Cairn's first ones, in order: a migration it does not know comes from a newer Cairn. */
function refuseUnknownMigrations(manifest: Manifest): void {
  const known = MIGRATIONS.map((migration) => migration.name); // each migration's name is its class's
  const unknown = manifest.migrations.filter((name) => !known.includes(name));
  if (unknown.length) {
    throw new Refusal(
      `this backup was made by a newer Cairn: its database has migrations this Cairn does not know (${unknown.join(', ')}); restore it with that version or a later one`,
    );
  }
  if (manifest.migrations.some((name, i) => known[i] !== name)) {
    throw new Refusal(`this backup's migrations (${manifest.migrations.join(', ')}) are not this Cairn's, in its order`);
  }
}

async function refuseMissingParts(dir: string, manifest: Manifest): Promise<void> {
  for (const table of manifest.tables) {
    if (!existsSync(tableFile(dir, table.name)))
      throw new Refusal(`${dir} is not a whole backup: the rows of table ${table.name} are missing`);
  }
  for (const repository of manifest.repositories) {
    if (!existsSync(path.join(dir, REPOSITORIES_DIR, `${repository.id}.git`, 'HEAD'))) {
      throw new Refusal(`${dir} is not a whole backup: repository ${repository.id} is missing`);
    }
  }
}

/** A restore makes a site, never merges into one: the data dir has no database yet, the repositories directory nothing. */
async function refuseOccupiedTargets(config: Config): Promise<void> {
  if (!config.databaseUrl && existsSync(embeddedDatabaseDir(config))) {
    throw new Refusal(
      `${config.dataDir} already holds a database (${embeddedDatabaseDir(config)}): restore into a new data dir (--data-dir or CAIRN_DATA_DIR)`,
    );
  }
  const entries = await fs.readdir(config.repositoriesDir).catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return [];
    throw error;
  });
  if (entries.length) {
    throw new Refusal(
      `the repositories directory ${config.repositoriesDir} is not empty: restore into an empty one (CAIRN_REPOSITORIES_DIR, or a new data dir)`,
    );
  }
}

async function refuseNonEmptyDatabase(url: string): Promise<void> {
  const client = await openSession(url);
  try {
    const { rows: tables } = await client.query<{ name: string }>(`
      select c.relname as name from pg_class c join pg_namespace n on n.oid = c.relnamespace
       where n.nspname = 'public' and c.relkind in ('r', 'p') order by 1 limit 5`);
    if (tables.length) {
      throw new Refusal(
        `the database DATABASE_URL names is not empty (it has tables: ${tables.map((t) => t.name).join(', ')}): restore into an empty database`,
      );
    }
  } finally {
    await client.end();
  }
}

/** Copies the backup's repositories into the (empty) repositories directory; the service marks it as the site's at start. */
/**
 * The pull refs of open pull requests are not in a backup: their test merges are commits no record
 * names, made again for the restored heads. Forgetting which pair each was last checked for makes
 * the restored site's first mergeability pass check every open pull request again, and that check
 * links `refs/pull/<n>/head` and writes `refs/pull/<n>/merge` (src/pulls/mergeability.ts).
 */
async function checkOpenPullsAgain(client: pg.Client): Promise<void> {
  await client.query(`update pull_requests set mergeable_base_sha = null, mergeable_head_sha = null where state = 'open'`);
}

async function copyRepositories(dir: string, repositoriesDir: string, manifest: Manifest): Promise<void> {
  await fs.mkdir(repositoriesDir, { recursive: true });
  for (const { id } of manifest.repositories) {
    await fs.cp(path.join(dir, REPOSITORIES_DIR, `${id}.git`), path.join(repositoriesDir, `${id}.git`), {
      recursive: true,
      errorOnExist: true,
      force: false,
      verbatimSymlinks: true,
    });
  }
}

/** After a failure: what the restore made goes, so that the next attempt starts from the same empty targets. */
async function undoRestore(
  config: Config,
  manifest: Manifest,
  made: { embedded: boolean; passwordFile: string | null; repositoriesDir: boolean },
): Promise<void> {
  if (made.embedded) await fs.rm(embeddedDatabaseDir(config), { recursive: true, force: true });
  if (made.passwordFile) await fs.rm(made.passwordFile, { force: true });
  if (made.repositoriesDir) await fs.rm(config.repositoriesDir, { recursive: true, force: true });
  else {
    for (const { id } of manifest.repositories)
      await fs.rm(path.join(config.repositoriesDir, `${id}.git`), { recursive: true, force: true });
  }
}
