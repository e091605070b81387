import { createReadStream, createWriteStream } from 'node:fs';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import pg from 'pg';
import { from as copyFrom, to as copyTo } from 'pg-copy-streams';

/**
 * A connection of its own for a backup's snapshot or a restore's load, each one transaction. COPY
 * goes through pg-copy-streams: postgres.js's COPY streams can hang for good, a COPY FROM the
 * server refuses never settling (porsager/postgres#1173) and a COPY TO that ends while its reader
 * lags leaving the connection paused (#499). The session's settings make COPY's text the same
 * whatever the server's defaults, so a dump loads alike into another server (ISO dates in UTC,
 * floats to their last digit), and lift the server's time limits: a backup may rightly take long.
 */
export async function openSession(url: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url, application_name: 'cairn backup' });
  client.on('error', () => undefined); // a dropped connection fails the statement in flight, which reports it
  await client.connect();
  await client.query(
    `set datestyle = 'ISO, YMD'; set intervalstyle = 'postgres'; set timezone = 'UTC'; set extra_float_digits = 3;
     set statement_timeout = 0; set idle_in_transaction_session_timeout = 0`,
  );
  return client;
}

/** Runs `work` in one transaction (`begin <mode>`), committed if it succeeds, rolled back if it throws. */
export async function inTransaction<T>(client: pg.Client, mode: string, work: () => Promise<T>): Promise<T> {
  await client.query(`begin ${mode}`);
  try {
    const result = await work();
    await client.query('commit');
    return result;
  } catch (error) {
    await client.query('rollback').catch(() => undefined);
    throw error;
  }
}

/** `COPY … TO STDOUT` into a new file (mode 0600); returns its number of rows (a row is a line of COPY's text format). */
export async function copyToFile(client: pg.Client, copy: string, file: string): Promise<number> {
  let rows = 0;
  const countLines = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      for (let at = chunk.indexOf(10); at !== -1; at = chunk.indexOf(10, at + 1)) rows++;
      done(null, chunk);
    },
  });
  await pipeline(client.query(copyTo(copy)), countLines, createWriteStream(file, { flags: 'wx', mode: 0o600 }));
  return rows;
}

/** `COPY … FROM STDIN` from a file; returns the number of rows PostgreSQL loaded. */
export async function copyFromFile(client: pg.Client, copy: string, file: string): Promise<number> {
  const target = client.query(copyFrom(copy));
  await pipeline(createReadStream(file), target);
  return target.rowCount;
}

/** An identifier quoted for SQL text (COPY takes no parameters, nor do names). */
export function quoted(identifier: string): string {
  return `"${identifier.replaceAll('"', '""')}"`;
}
