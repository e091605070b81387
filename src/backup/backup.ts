import fs from 'node:fs/promises';
import path from 'node:path';
import type { Config } from '../config.js';
import { configureGitBounds, LONG_WORK_FACTOR } from '../git/git-bounds.js';
import { RepositoryLocks } from '../git/refs/repository-lock.js';
import type { Logger } from '../logger.js';
import { VERSION } from '../version.js';
import { dumpDatabase, type DatabaseSnapshot } from './database-dump.js';
import { REPOSITORIES_DIR, writeManifest, type Manifest } from './manifest.js';
import { Refusal } from './refusal.js';
import { copyRepository } from './repository-copy.js';
import { existingSiteDatabase } from './site-database.js';

export interface BackupSummary {
  dir: string;
  tables: number;
  rows: number;
  repositories: number;
  bytes: number;
  seconds: number;
  secretKey: Manifest['secretKey'];
}

/**
 * `cairn backup <dir>`: the site's database and repositories, consistent with each other, while
 * the service runs or not. The database is dumped from one snapshot; then each repository is
 * copied, and its copy given exactly the refs the snapshot recorded. A push recorded in the
 * snapshot is in both halves of the backup; one that was not (refs moved on disk, events not yet
 * written) is in neither. The manifest is written last: a backup without one is not whole.
 *
 * The backup holds the site's secrets (the key of its webhook secrets, unless CAIRN_SECRET_KEY is
 * set; the signed-push seed): its directory is made readable by its owner only.
 */
export async function backup(config: Config, target: string, log: Logger): Promise<BackupSummary> {
  const started = performance.now();
  configureGitBounds(config.gitBounds, log); // the copies' git runs within the service's bounds
  const dir = path.resolve(target);
  const existed = await refuseUnlessEmpty(dir);
  const database = await existingSiteDatabase(config, log);
  try {
    await fs.mkdir(dir, { recursive: true, mode: 0o700 });
    await fs.chmod(dir, 0o700);
    try {
      const snapshot = await dumpDatabase(database.url, dir);
      await copyRepositories(config, database.url, snapshot, dir);
      await writeManifest(dir, {
        createdAt: new Date().toISOString(),
        cairnVersion: VERSION,
        migrations: snapshot.migrations,
        tables: snapshot.tables,
        sequences: snapshot.sequences,
        repositories: snapshot.repositories.map(({ id, defaultBranch, refs }) => ({ id, defaultBranch, refs: refs.length })),
        secretKey: snapshot.secretKey,
      });
      return {
        dir,
        tables: snapshot.tables.length,
        rows: snapshot.tables.reduce((sum, table) => sum + table.rows, 0),
        repositories: snapshot.repositories.length,
        bytes: await sizeOf(dir),
        seconds: (performance.now() - started) / 1000,
        secretKey: snapshot.secretKey,
      };
    } catch (error) {
      // Nothing half-made is left to be taken for a backup.
      if (existed) await emptyDirectory(dir);
      else await fs.rm(dir, { recursive: true, force: true });
      throw error;
    }
  } finally {
    await database.stop();
  }
}

/** Refuses a target that holds anything; whether it exists (empty). */
async function refuseUnlessEmpty(dir: string): Promise<boolean> {
  let entries: string[];
  try {
    entries = await fs.readdir(dir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false;
    if ((error as NodeJS.ErrnoException).code === 'ENOTDIR') throw new Refusal(`${dir} is a file, not a directory`);
    throw error;
  }
  if (entries.length) throw new Refusal(`${dir} is not empty: back up into a new or empty directory`);
  return true;
}

/**
 * Copies each repository of the snapshot under its maintenance lock (the one Cairn's garbage
 * collection takes), one at a time: the service keeps serving meanwhile, and a backup should not
 * take the disk from it. A repository under maintenance is waited for as long as maintenance may run.
 */
async function copyRepositories(config: Config, databaseUrl: string, snapshot: DatabaseSnapshot, dir: string): Promise<void> {
  await checkRepositoriesDir(config.repositoriesDir, snapshot);
  await fs.mkdir(path.join(dir, REPOSITORIES_DIR), { mode: 0o700 });
  // A maintenance lock taken from a holder whose lease lapsed needs no fence: only push locks' holders move refs.
  const locks = new RepositoryLocks(databaseUrl, config.databaseTimeoutMs, config.lockLeaseMs, async () => undefined);
  const waitMs = config.gitBounds.timeoutMs * LONG_WORK_FACTOR;
  try {
    for (const repository of snapshot.repositories) {
      // Never taken over: the git of a paused service's maintenance may still be at work on the files.
      const lock = await locks.acquire('maintenance', repository.id, { waitMs, takeOver: false });
      if (!lock) throw new Error(`repository ${repository.id} stayed under maintenance for ${waitMs / 1000} s: run the backup again later`);
      try {
        const name = `${repository.id}.git`;
        await copyRepository(path.join(config.repositoriesDir, name), path.join(dir, REPOSITORIES_DIR, name), repository);
      } finally {
        await lock.release();
      }
    }
  } finally {
    await locks.close();
  }
}

/**
 * The repositories directory is this site's: its `.cairn-site` names the database's site id. Run
 * with another CAIRN_REPOSITORIES_DIR than the service's, the backup would otherwise find every
 * repository gone.
 */
async function checkRepositoriesDir(repositoriesDir: string, snapshot: DatabaseSnapshot): Promise<void> {
  const marker = path.join(repositoriesDir, '.cairn-site');
  const named = (await fs.readFile(marker, 'utf8').catch(() => null))?.trim();
  if (named === snapshot.siteId || (named === undefined && !snapshot.repositories.length)) return;
  throw new Error(
    named === undefined
      ? `${repositoriesDir} is not this site's repositories directory (it has no .cairn-site): give the CAIRN_REPOSITORIES_DIR the service has`
      : `${repositoriesDir} belongs to another site than this database's (.cairn-site names ${named}, the database ${snapshot.siteId}): check DATABASE_URL and CAIRN_REPOSITORIES_DIR`,
  );
}

async function emptyDirectory(dir: string): Promise<void> {
  for (const entry of await fs.readdir(dir).catch(() => [])) await fs.rm(path.join(dir, entry), { recursive: true, force: true });
}

/** The bytes of the files under `dir`. */
async function sizeOf(dir: string): Promise<number> {
  let bytes = 0;
  for (const entry of await fs.readdir(dir, { recursive: true, withFileTypes: true })) {
    if (entry.isFile()) bytes += (await fs.stat(path.join(entry.parentPath, entry.name))).size;
  }
  return bytes;
}
