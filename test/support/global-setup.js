// One embedded PostgreSQL for the whole test run, unless CAIRN_TEST_DATABASE_URL names one (plain JS:
// it runs before any transform, and uses the service's own compiled code).
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { ENTITIES } from '../../dist/src/capabilities.js';
import { startEmbeddedPostgres } from '../../dist/src/db/embedded-postgres.js';
import { openDatabase } from '../../dist/src/db/orm.js';
import { createLogger } from '../../dist/src/logger.js';
import { CairnServer, onCluster } from '../../dist/test/support/server.js';

/** The database every test server's own database is copied from (test/support/server.ts): the schema, migrated once per run. */
const TEMPLATE = 'cairn_test_template';

export default async function globalSetup() {
  const log = createLogger('warn');
  // A cluster the caller already runs (CAIRN_TEST_DATABASE_URL, a superuser's URL): the run uses it.
  if (!process.env.CAIRN_TEST_DATABASE_URL) {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'cairn-test-cluster-'));
    await fs.chmod(dir, 0o755);
    const database = await startEmbeddedPostgres(dir, log);
    process.env.CAIRN_TEST_DATABASE_URL = database.url;
    globalThis.__cairnTestCluster = { database, dir };
    // The run's own cluster does not wait for the disk at each commit: it lives as long as the run.
    // Killing its processes (as fault tests do) loses nothing: a commit has handed its WAL to the
    // kernel before it answers, and crash recovery replays it. Tests of a database that must
    // survive a crash start their own (a data dir's embedded one), with PostgreSQL's defaults.
    await onCluster(database.url, 'ALTER SYSTEM SET fsync = off', 'SELECT pg_reload_conf()');
  }
  await migrateTemplate(process.env.CAIRN_TEST_DATABASE_URL, log);
  process.env.CAIRN_TEST_TEMPLATE = TEMPLATE;
  // One Cairn process for the files that need none of their own (CairnServer.sharedServer()), with
  // the one setting most of them need: webhooks to the tests' receivers on loopback.
  const shared = await CairnServer.start({ env: { CAIRN_WEBHOOK_ALLOWED_HOSTS: 'loopback' } });
  shared.copyOutputTo(path.join(shared.dataDir, 'shared-output.log'));
  globalThis.__cairnSharedServer = shared;
  process.env.CAIRN_TEST_SHARED_SERVER = JSON.stringify(shared.describe());
}

/**
 * Migrating a new database is a good part of a service's start; the template is migrated once
 * (afresh each run: an earlier run's may predate a migration) and every server's database is a copy.
 */
async function migrateTemplate(clusterUrl, log) {
  await onCluster(clusterUrl, `DROP DATABASE IF EXISTS ${TEMPLATE} WITH (FORCE)`, `CREATE DATABASE ${TEMPLATE}`);
  const orm = await openDatabase(clusterUrl.replace(/\/[^/]*$/, `/${TEMPLATE}`), log, ENTITIES);
  await orm.close(); // a template is copied only while nothing is connected to it
}
