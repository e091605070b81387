import 'reflect-metadata';
import { ReflectMetadataProvider } from '@mikro-orm/decorators/legacy';
import { Migrator } from '@mikro-orm/migrations';
import { defineConfig, MikroORM, type Options } from '@mikro-orm/postgresql';
import pg from 'pg';
import type { Logger } from '../logger.js';
import { MIGRATIONS } from './migrations/index.js';
import { noteStatement } from './statement-count.js';

const SCHEMA_LOCK = 0x6361_6972_6e00; // one schema change at a time across processes sharing a database

/** The ORM over these entities (the service's: every capability's, listed where the service is assembled). */
function ormConfig(clientUrl: string, entities: Options['entities'], log?: Logger): Options {
  return defineConfig({
    clientUrl,
    entities,
    metadataProvider: ReflectMetadataProvider,
    extensions: [Migrator],
    migrations: {
      migrationsList: MIGRATIONS,
      path: 'src/db/migrations',
      pathTs: 'src/db/migrations',
      snapshot: false,
      silent: true,
    },
    pool: { min: 0, max: 20 },
    forceUtcTimezone: true,
    // No entity has an inverse side to keep in step, so the per-property accessors this installs on
    // every loaded entity buy nothing, and defining them costs every read, row by row.
    propagationOnPrototype: false,
    debug: false,
    onQuery: (sql) => {
      noteStatement();
      return sql;
    },
    logger: (message) => log?.debug({ component: 'orm' }, message),
  });
}

/**
 * Connects and brings the schema up to date under the schema lock. Every connection of the pool
 * waits at most `timeoutMs` to connect and for each statement, so that a stalled database answers
 * requests with an error instead of holding them (unavailable.ts); pending migrations, which may
 * rightly take longer, run first on a connection of their own without that deadline.
 */
export async function openDatabase(clientUrl: string, log: Logger, entities: Options['entities'], timeoutMs?: number): Promise<MikroORM> {
  const orm = await MikroORM.init({
    ...ormConfig(clientUrl, entities, log),
    ...(timeoutMs ? { driverOptions: { connectionTimeoutMillis: timeoutMs, query_timeout: timeoutMs } } : {}),
  });
  await underSchemaLock(clientUrl, async () => {
    if (timeoutMs && (await orm.migrator.getPending()).length === 0) return;
    const migrating = timeoutMs ? await MikroORM.init(ormConfig(clientUrl, entities, log)) : orm;
    try {
      const applied = await migrating.migrator.up();
      if (applied.length) log.info({ migrations: applied.map((m) => m.name) }, 'database migrated');
    } finally {
      if (migrating !== orm) await migrating.close();
    }
  });
  return orm;
}

/**
 * Applies the migrations up to and including `last`, no further, under the schema lock: a restore
 * loads data into the schema it was dumped from (the service applies the later ones at its next
 * start). Returns every migration executed then, in order.
 */
export async function migrateTo(clientUrl: string, log: Logger, entities: Options['entities'], last: string): Promise<string[]> {
  const orm = await MikroORM.init(ormConfig(clientUrl, entities, log));
  try {
    return await underSchemaLock(clientUrl, async () => {
      await orm.migrator.up({ to: last });
      return (await orm.migrator.getExecuted()).map((migration) => migration.name);
    });
  } finally {
    await orm.close();
  }
}

/**
 * Runs `work` (a change of schema: migrations, the job queue's tables) while holding a session-wide
 * advisory lock, so processes starting at once on one database make their changes one after
 * another: PostgreSQL's `CREATE … IF NOT EXISTS` and `CREATE OR REPLACE` race each other ("tuple
 * concurrently updated").
 */
export async function underSchemaLock<T>(clientUrl: string, work: () => Promise<T>): Promise<T> {
  const lock = new pg.Client({ connectionString: clientUrl });
  await lock.connect();
  try {
    await lock.query('select pg_advisory_lock($1)', [SCHEMA_LOCK]);
    return await work();
  } finally {
    await lock.query('select pg_advisory_unlock($1)', [SCHEMA_LOCK]).catch(() => undefined);
    await lock.end();
  }
}
