import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { appendFileSync, readFileSync, writeFileSync } from 'node:fs';
import fs from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { treeOf } from './process-tree.js';

/** The project root, whether this file runs from test/ (jest) or from dist/test/ (benchmarks). */
const up = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const ROOT = path.basename(up) === 'dist' ? path.dirname(up) : up;
const MAIN = path.join(ROOT, 'dist/rest-facade/main.js');
const START_SCRIPT = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')).scripts.start as string;
/** The node flags `npm start` gives the service (package.json), so tests and benchmarks run it alike. */
const START_FLAGS: string[] = (/\bnode (.*?)dist\//.exec(START_SCRIPT)?.[1] ?? '').split(/\s+/).filter(Boolean);
/** ...and the environment it sets (`exec env NAME=value … node …`). */
const START_ENV: Record<string, string> = Object.fromEntries(
  (/\benv ((?:\w+=\S*\s+)+)node\b/.exec(START_SCRIPT)?.[1] ?? '')
    .split(/\s+/)
    .filter(Boolean)
    .map((assignment) => [assignment.slice(0, assignment.indexOf('=')), assignment.slice(assignment.indexOf('=') + 1)]),
);

export interface StartOptions {
  /** Run on the service's own embedded PostgreSQL in its data dir, instead of a database of the shared test cluster. */
  embedded?: boolean;
  /** Extra environment (CAIRN_* settings). */
  env?: Record<string, string>;
  /** Reuse a data dir (and database) of an earlier server: a restart. */
  reuse?: CairnServer;
  /** Own process group, so `killAll` can SIGKILL the service and its embedded PostgreSQL together. */
  detached?: boolean;
  /** Discard the service's output instead of keeping it (benchmarks: keeping it costs the measuring process). */
  discardOutput?: boolean;
  /** Another process on this server's database (own data dir and port): several processes, one database. */
  shareDatabaseWith?: CairnServer;
  /** The data dir to use (a file system the test made, say a small tmpfs) instead of a new temporary one. */
  dataDir?: string;
  /** The port to try first instead of a free one (a test of the start that finds its port taken). */
  port?: number;
}

/**
 * A real Cairn process for a test file: its own port, data dir and database.
 * Output is kept and shown when start-up fails.
 */
export class CairnServer {
  process?: ChildProcess;
  private kept = '';
  readonly adminToken: string;
  /** Started by the run for many files (sharedServer()): its process and output are the run's, not this file's. */
  private shared = false;
  /** Where the output is copied as it comes (the shared server's, for the files on it to read). */
  private outputFile?: string;
  /** How many log lines of each message the process has written in its life (`output` keeps only the tail). */
  private readonly messageCounts = new Map<string, number>();
  /** Whether this process said it listens on this server's port (so /readyz answering is this process, not another's). */
  private listening = false;

  private constructor(
    readonly port: number,
    readonly dataDir: string,
    readonly databaseUrl: string | undefined,
    readonly env: Record<string, string>,
    readonly detached: boolean,
    adminToken?: string,
  ) {
    this.adminToken = adminToken ?? `cairn_pat_admin_${randomBytes(16).toString('hex')}`;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  static async start(options: StartOptions = {}): Promise<CairnServer> {
    const previous = options.reuse;
    const dataDir = previous?.dataDir ?? options.dataDir ?? (await makeDataDir());
    const shared = options.shareDatabaseWith?.databaseUrl;
    const databaseUrl = previous ? previous.databaseUrl : (shared ?? (options.embedded ? undefined : await createTestDatabase()));
    const env = { ...previous?.env, ...options.env };
    const detached = options.detached ?? previous?.detached ?? false;
    const port = previous?.port ?? options.port ?? (await freePort()); // a restart keeps its address, clients keep working
    const adminToken = previous?.adminToken ?? options.shareDatabaseWith?.adminToken;
    let server = new CairnServer(port, dataDir, databaseUrl, env, detached, adminToken);
    try {
      for (let attempt = 1; ; attempt++) {
        try {
          await server.spawn(options.discardOutput ?? false);
          break;
        } catch (error) {
          // Another file's server took the port between freePort() and this one's listen: a new
          // port (a restart keeps its address, and fails instead). The failed attempt had already
          // made the site admin with its token, so the next one keeps that token.
          if (!(error instanceof PortTaken) || previous || attempt === 3) throw error;
          server = new CairnServer(await freePort(), dataDir, databaseUrl, env, detached, server.adminToken);
        }
      }
    } catch (error) {
      // A start that failed leaves nothing behind: no data dir or database of its own making.
      if (!previous) {
        if (!options.dataDir) await fs.rm(dataDir, { recursive: true, force: true }).catch(() => undefined);
        if (databaseUrl && !shared) await dropTestDatabase(databaseUrl).catch(() => undefined);
      }
      throw error;
    }
    return server;
  }

  /**
   * The run's shared server: one Cairn process the global setup starts for every file that needs
   * no server of its own (default settings but webhooks to loopback allowed; no restart, signal or
   * log assertions). Starting a server
   * costs a few seconds of CPU, most of a light file's. A file on it keeps to its own users (logins
   * no other file uses) and their repositories, and asserts nothing about site-wide totals.
   */
  static sharedServer(): CairnServer {
    const described = process.env.CAIRN_TEST_SHARED_SERVER;
    if (!described) throw new Error('CAIRN_TEST_SHARED_SERVER is not set: run the tests with `npm test`');
    const { port, dataDir, databaseUrl, adminToken, outputFile } = JSON.parse(described) as SharedServerDescription;
    const server = new CairnServer(port, dataDir, databaseUrl, {}, false, adminToken);
    server.shared = true;
    server.outputFile = outputFile;
    return server;
  }

  /** What the global setup passes to the files about the shared server. */
  describe(): SharedServerDescription {
    return {
      port: this.port,
      dataDir: this.dataDir,
      databaseUrl: this.databaseUrl,
      adminToken: this.adminToken,
      outputFile: this.outputFile,
    };
  }

  private notShared(what: string): void {
    if (this.shared) throw new Error(`${what} needs a server of the file's own (CairnServer.start()), not the shared one`);
  }

  /** A second process on the same data dir and database (after stop or kill). */
  restart(env: Record<string, string> = {}): Promise<CairnServer> {
    this.notShared('restart');
    return CairnServer.start({ reuse: this, env });
  }

  private async spawn(discardOutput: boolean): Promise<void> {
    // Source-mapped stacks serve whoever reads the output; a benchmark discards it and runs the
    // service exactly as `npm start` does (source maps cost it several per cent of throughput).
    const sourceMaps = discardOutput ? [] : ['--enable-source-maps'];
    const child = spawn(process.execPath, [...sourceMaps, ...START_FLAGS, MAIN], {
      cwd: ROOT,
      env: {
        ...START_ENV,
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        PORT: String(this.port),
        HOST: '127.0.0.1',
        CAIRN_DATA_DIR: this.dataDir,
        CAIRN_BASE_URL: this.url,
        CAIRN_ADMIN_TOKEN: this.adminToken,
        LOG_LEVEL: 'info',
        // Test files and benchmarks are heavy users of one admin token; test/rate-limits.test.ts tests the limits.
        CAIRN_RATE_LIMIT: '10000000',
        CAIRN_RATE_LIMIT_CREATE: '1000000',
        CAIRN_RATE_LIMIT_GIT_ANONYMOUS: '1000000',
        ...(this.databaseUrl ? { DATABASE_URL: this.databaseUrl } : {}),
        ...this.env,
      },
      stdio: ['ignore', discardOutput ? 'ignore' : 'pipe', 'pipe'],
      detached: this.detached,
    });
    this.process = child;
    // Lines are split per stream: a chunk of one may arrive in the middle of a line of the other.
    for (const stream of [child.stdout, child.stderr]) {
      let partialLine = '';
      stream?.on('data', (chunk: Buffer) => {
        const text = chunk.toString();
        this.append(text);
        const lines = (partialLine + text).split('\n');
        partialLine = lines.pop()!;
        for (const line of lines) this.countMessage(line);
      });
    }
    const deadline = Date.now() + 60_000;
    while (Date.now() < deadline) {
      if (child.exitCode !== null) {
        const message = `Cairn exited with ${child.exitCode} during start-up:\n${this.output}`;
        throw /cannot listen on .*EADDRINUSE/.test(this.output) ? new PortTaken(message) : new Error(message);
      }
      // Files run in parallel: until the process says it listens, what answers on the port may be
      // another file's server (its port was free when chosen). Discarded output cannot say it.
      if (!this.listening && !discardOutput) {
        await sleep(50);
        continue;
      }
      try {
        const response = await fetch(`${this.url}/readyz`);
        if (response.status === 200) return;
      } catch {
        /* not listening yet */
      }
      await sleep(100);
    }
    child.kill('SIGKILL');
    throw new Error(`Cairn did not become ready within 60 s:\n${this.output}`);
  }

  private append(text: string): void {
    this.kept += text;
    if (this.kept.length > 2_000_000) this.kept = this.kept.slice(-1_000_000);
    if (this.outputFile) appendFileSync(this.outputFile, text);
  }

  /**
   * What the process has written, its last megabyte or more. The shared server's is every file's
   * (read from the copy the global setup keeps): for showing what a failure was about, not for
   * asserting on — hence logs() and logCount() refuse it.
   */
  get output(): string {
    if (!this.shared || !this.outputFile) return this.kept;
    try {
      return readFileSync(this.outputFile, 'utf8').slice(-2_000_000);
    } catch {
      return '';
    }
  }

  /** Copies the output, from now on and what came so far, to `file` (the global setup, for the shared server). */
  copyOutputTo(file: string): void {
    writeFileSync(file, this.kept);
    this.outputFile = file;
  }

  private countMessage(line: string): void {
    const parsed = parseLine(line);
    const msg = parsed.msg;
    if (msg === 'Cairn is listening' && parsed.port === this.port) this.listening = true;
    if (typeof msg === 'string') this.messageCounts.set(msg, (this.messageCounts.get(msg) ?? 0) + 1);
  }

  /** How many lines with this `msg` the process has logged so far, however much output came since. */
  logCount(msg: string): number {
    this.notShared('reading the log');
    return this.messageCounts.get(msg) ?? 0;
  }

  /** Parsed JSON log lines of the output's tail (the last megabyte or more). */
  logs(): Array<Record<string, unknown>> {
    this.notShared('reading the log');
    return this.output
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map(parseLine);
  }

  /** Throws, with the process's last output, when it has exited: a test during which the service died fails with its last words. */
  assertRunning(): void {
    const { exitCode, signalCode } = this.process!;
    if (exitCode !== null || signalCode !== null)
      throw new Error(`the service exited (${exitCode ?? signalCode}):\n${this.output.slice(-3000)}`);
  }

  /** SIGTERM and wait for the exit; returns the exit code. */
  async stop(): Promise<number | null> {
    this.notShared('stopping');
    const child = this.process;
    if (!child || child.exitCode !== null || child.signalCode !== null) return child?.exitCode ?? null;
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    child.kill('SIGTERM');
    return exited;
  }

  /** Sends `signal` to the service process only (SIGSTOP pauses it as a hung process would be; SIGCONT wakes it). */
  signal(signal: NodeJS.Signals): void {
    this.notShared('a signal');
    this.process?.kill(signal);
  }

  /** SIGKILL the service process only (its embedded PostgreSQL, if any, is orphaned). */
  async kill(): Promise<void> {
    this.notShared('killing');
    const child = this.process;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGKILL');
    await exited;
  }

  /**
   * SIGKILL the service and every process it started: the service, its git processes and its
   * embedded database die at once (needs `detached`).
   */
  async killAll(): Promise<void> {
    const child = this.process;
    if (!this.detached || !child?.pid) throw new Error('killAll needs a detached server');
    const exited = child.exitCode === null && child.signalCode === null ? new Promise((resolve) => child.once('exit', resolve)) : null;
    const postmaster = this.postmasterPid();
    // The service's group, then what it started in groups of their own (its git launcher and git,
    // PostgreSQL and its backends), all found before any of them goes.
    const everything = [...(await treeOf(child.pid)), ...(postmaster ? await treeOf(postmaster) : [])];
    for (const pid of everything) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        /* already gone */
      }
    }
    await exited;
    await sleep(200); // let the kernel reap the PostgreSQL processes
  }

  /** The embedded PostgreSQL's postmaster, while one runs on this server's data dir. */
  postmasterPid(): number | undefined {
    try {
      const pid = Number(readFileSync(path.join(this.dataDir, 'postgres', 'postmaster.pid'), 'utf8').split('\n')[0]);
      // A stale pid file may name a recycled pid: only a postgres on this data dir counts.
      const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      return cmdline.includes('postgres') && cmdline.includes(this.dataDir) ? pid : undefined;
    } catch {
      return undefined;
    }
  }

  /** Stops the server and removes its data dir and database (`keepDatabase` when another process still uses it). */
  async destroy(keepDatabase = false): Promise<void> {
    if (this.shared) return; // the run's: its global teardown destroys it
    await this.stop();
    // A service killed without its database leaves that PostgreSQL running: it goes too.
    const orphan = this.postmasterPid();
    if (orphan) process.kill(orphan, 'SIGKILL');
    await fs.rm(this.dataDir, { recursive: true, force: true }).catch(() => undefined);
    if (this.databaseUrl && !keepDatabase) await dropTestDatabase(this.databaseUrl).catch(() => undefined);
  }
}

/** The shared server as the global setup describes it to the test files (CAIRN_TEST_SHARED_SERVER). */
export interface SharedServerDescription {
  port: number;
  dataDir: string;
  databaseUrl: string | undefined;
  adminToken: string;
  outputFile: string | undefined;
}

function parseLine(line: string): Record<string, unknown> {
  if (!line.startsWith('{')) return {};
  try {
    return JSON.parse(line) as Record<string, unknown>;
  } catch {
    return {};
  }
}

export async function makeDataDir(): Promise<string> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'cairn-test-'));
  await fs.chmod(dir, 0o755); // the embedded PostgreSQL runs as another user and must reach its directory
  return dir;
}

function clusterUrl(): string {
  const url = process.env.CAIRN_TEST_DATABASE_URL;
  if (!url) throw new Error('CAIRN_TEST_DATABASE_URL is not set: run the tests with `npm test`');
  return url;
}

async function createTestDatabase(): Promise<string> {
  const name = `cairn_test_${randomBytes(6).toString('hex')}`;
  // A copy of the schema the global setup migrated (test/support/global-setup.js), else an empty one.
  const template = process.env.CAIRN_TEST_TEMPLATE;
  await onCluster(clusterUrl(), `CREATE DATABASE ${name}${template ? ` TEMPLATE ${template}` : ''}`);
  return clusterUrl().replace(/\/[^/]*$/, `/${name}`);
}

async function dropTestDatabase(url: string): Promise<void> {
  const pool = pools.get(url);
  pools.delete(url);
  await pool?.end().catch(() => undefined);
  await onCluster(url, `DROP DATABASE IF EXISTS ${url.slice(url.lastIndexOf('/') + 1)} WITH (FORCE)`);
}

/**
 * Runs `statements` one after the other on the cluster `databaseUrl` is on (the URL of any of its
 * databases), connected to its `postgres` database as that URL's user: for what no database's own
 * connection may do (create or drop a database, change the cluster's settings).
 */
export async function onCluster(databaseUrl: string, ...statements: string[]): Promise<void> {
  const admin = new pg.Client({ connectionString: databaseUrl.replace(/\/[^/]*$/, '/postgres') });
  await admin.connect();
  try {
    for (const statement of statements) await admin.query(statement);
  } finally {
    await admin.end();
  }
}

/**
 * Connections for query(), a small pool per database: a connection of its own for each query would
 * start (and warm) a PostgreSQL backend every time, and tests poll with queries. Idle connections
 * close after a second and hold no worker open. A database is dropped after its pool is ended; a
 * connection cut all the same (the cluster restarted under it) is an error the pool ignores.
 */
const pools = new Map<string, pg.Pool>();

function poolFor(databaseUrl: string): pg.Pool {
  let pool = pools.get(databaseUrl);
  if (!pool) {
    pool = new pg.Pool({ connectionString: databaseUrl, max: 2, idleTimeoutMillis: 1_000, allowExitOnIdle: true });
    pool.on('error', () => undefined);
    pools.set(databaseUrl, pool);
  }
  return pool;
}

/** Direct SQL against a server's database: for inspecting the outbox, never for changing what the API owns. */
export async function query<T = Record<string, unknown>>(server: CairnServer, sql: string, params: unknown[] = []): Promise<T[]> {
  if (!server.databaseUrl) throw new Error('query() needs a server on the shared test cluster');
  return (await poolFor(server.databaseUrl).query(sql, params)).rows as T[];
}

/** A start that failed because the port was taken meanwhile. */
class PortTaken extends Error {}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = net.createServer();
    probe.on('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as net.AddressInfo;
      probe.close(() => resolve(port));
    });
  });
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
