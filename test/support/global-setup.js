// One embedded PostgreSQL for the whole test run, unless CAIRN_TEST_DATABASE_URL names one (plain JS: it runs before
// any transform, and uses the service's own compiled embedded-postgres code).
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { startEmbeddedPostgres } from '../../dist/src/db/embedded-postgres.js';
import { createLogger } from '../../dist/src/logger.js';

export default async function globalSetup() {
  // A cluster the caller already runs (CAIRN_TEST_DATABASE_URL, a superuser's URL): the run uses it.
  if (process.env.CAIRN_TEST_DATABASE_URL) return;
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'cairn-test-cluster-'));
  await fs.chmod(dir, 0o755);
  const database = await startEmbeddedPostgres(dir, createLogger('warn'));
  process.env.CAIRN_TEST_DATABASE_URL = database.url;
  globalThis.__cairnTestCluster = { database, dir };
}
