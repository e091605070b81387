import fs from 'node:fs/promises';
import path from 'node:path';
import pg from 'pg';
import type { CairnServer } from '../support/server.js';

/** The embedded PostgreSQL of a server: its port from postmaster.pid (4th line), its password from the data dir. */
export async function databaseOf(server: CairnServer): Promise<pg.Client> {
  const pid = await fs.readFile(path.join(server.dataDir, 'postgres', 'postmaster.pid'), 'utf8');
  const port = Number(pid.split('\n')[3]);
  const password = (await fs.readFile(path.join(server.dataDir, 'postgres.password'), 'utf8')).trim();
  const client = new pg.Client({ host: '127.0.0.1', port, user: 'postgres', password, database: 'cairn' });
  client.on('error', () => undefined); // the service stopping ends this connection; a failed query still throws
  await client.connect();
  return client;
}
