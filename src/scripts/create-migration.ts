/**
 * Development tool: `npm run migration:create -- <name>` starts a throw-away
 * embedded PostgreSQL (or uses DATABASE_URL), applies the existing
 * migrations, and writes a new migration with the difference between the
 * entities and that schema into src/db/migrations. Add it to index.ts.
 */
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { ENTITIES } from '../capabilities.js';
import { openDatabase } from '../db/orm.js';
import { startEmbeddedPostgres } from '../db/embedded-postgres.js';
import { createLogger } from '../logger.js';

const log = createLogger('info');
const name = process.argv[2];
const tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'cairn-migration-'));
const embedded = process.env.DATABASE_URL ? null : await startEmbeddedPostgres(tmp, log);
try {
  const orm = await openDatabase(process.env.DATABASE_URL ?? embedded!.url, log, ENTITIES);
  const result = await orm.migrator.create(undefined, false, false, name);
  console.log(result.fileName ? `created ${result.fileName}` : 'no schema changes');
  await orm.close();
} finally {
  await embedded?.stop();
  await fs.rm(tmp, { recursive: true, force: true });
}
