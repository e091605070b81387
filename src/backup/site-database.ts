import { existsSync } from 'node:fs';
import path from 'node:path';
import type { Config } from '../config.js';
import { startEmbeddedPostgres, useEmbeddedPostgres } from '../db/embedded-postgres.js';
import type { Logger } from '../logger.js';
import { Refusal } from './refusal.js';

/** The site's database for a backup or restore: its URL, and `stop()` for an embedded one this command started. */
export interface SiteDatabase {
  url: string;
  stop(): Promise<void>;
}

/** Where the data dir's embedded PostgreSQL keeps its files. */
export function embeddedDatabaseDir(config: Config): string {
  return path.join(config.dataDir, 'postgres');
}

/**
 * The database a backup reads: DATABASE_URL's, or the data dir's embedded one, the running
 * service's when it runs (this command then starts nothing) or started for the backup and stopped
 * after it. A data dir without a database is refused: starting the embedded PostgreSQL there would
 * make an empty one.
 */
export async function existingSiteDatabase(config: Config, log: Logger): Promise<SiteDatabase> {
  if (config.databaseUrl) return { url: config.databaseUrl, stop: async () => undefined };
  if (!existsSync(path.join(embeddedDatabaseDir(config), 'PG_VERSION'))) {
    throw new Refusal(
      `there is no Cairn database in ${config.dataDir}: pass the service's data dir with --data-dir (or CAIRN_DATA_DIR), or set DATABASE_URL`,
    );
  }
  return useEmbeddedPostgres(config.dataDir, log);
}

/** The database a restore fills: DATABASE_URL's, or a new embedded one in the data dir (its absence is checked before). */
export async function newSiteDatabase(config: Config, log: Logger): Promise<SiteDatabase> {
  if (config.databaseUrl) return { url: config.databaseUrl, stop: async () => undefined };
  return startEmbeddedPostgres(config.dataDir, log);
}
