import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { promisify } from 'node:util';
import type { Logger } from '../logger.js';

/** How long a restart waits after an exit, doubling up to RESTART_MAX_MS while PostgreSQL will not stay up. */
const RESTART_FIRST_MS = 200;
const RESTART_MAX_MS = 5_000;
/** A fast shutdown rolls back what is open and writes a checkpoint; past this it is killed. */
const STOP_WAIT_MS = 30_000;

export interface PostmasterOptions {
  /** The `postgres` binary and its arguments. */
  binary: string;
  args: string[];
  /** Run as the `postgres` system user when the service runs as root (PostgreSQL refuses root). */
  asPostgresUser: boolean;
  log: Logger;
  /** Each line PostgreSQL writes (its log goes to stderr). */
  onLog: (line: string) => void;
}

/**
 * The embedded PostgreSQL's server process, supervised: started in a process group of its own, so
 * a terminal's Ctrl-C (a signal to the service's whole group) reaches the service alone, which then
 * stops the database last, after its own work; and started again whenever it exits unasked — `kill
 * -9`, the OOM killer — as a service manager would, so the service's connections find it again.
 * (A backend killed alone is PostgreSQL's own affair: its postmaster restarts the backends.)
 */
export class Postmaster {
  private child: ChildProcess | null = null;
  private stopping = false;
  private restartDelay = RESTART_FIRST_MS;
  private restartTimer: NodeJS.Timeout | undefined;

  constructor(private readonly options: PostmasterOptions) {}

  /** The running server's pid, if one runs. */
  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** Starts PostgreSQL and resolves once it accepts connections; rejects if it exits first. */
  async start(): Promise<void> {
    const ids = this.options.asPostgresUser ? await postgresUserIds() : {};
    await new Promise<void>((resolve, reject) => {
      const child = spawn(this.options.binary, this.options.args, { ...ids, detached: true, stdio: ['ignore', 'ignore', 'pipe'] });
      this.child = child;
      let ready = false;
      let pending = '';
      child.stderr!.on('data', (chunk: Buffer) => {
        pending += chunk.toString('utf8');
        const lines = pending.split('\n');
        pending = lines.pop()!;
        for (const line of lines) {
          this.options.onLog(line);
          if (!ready && line.includes('database system is ready to accept connections')) {
            ready = true;
            this.restartDelay = RESTART_FIRST_MS;
            resolve();
          }
        }
      });
      child.once('error', reject);
      child.once('exit', (code, signal) => {
        if (this.child === child) this.child = null;
        if (!ready) reject(new Error(`PostgreSQL exited before it was ready (${signal ?? `code ${code}`})`));
        else if (!this.stopping) this.restartAfter(code, signal);
      });
    });
  }

  private restartAfter(code: number | null, signal: NodeJS.Signals | null): void {
    const delay = this.restartDelay;
    this.restartDelay = Math.min(delay * 2, RESTART_MAX_MS);
    this.options.log.error({ code, signal, restartInMs: delay }, 'embedded PostgreSQL exited; restarting it');
    this.restartTimer = setTimeout(() => {
      if (this.stopping) return;
      this.start().then(
        () => this.options.log.warn('embedded PostgreSQL restarted'),
        (error: unknown) => {
          // Its old backends may still hold its shared memory for a moment: try again, a little later.
          this.options.log.warn({ err: error }, 'embedded PostgreSQL did not start again yet');
          if (!this.stopping && !this.child) this.restartAfter(null, null);
        },
      );
    }, delay);
  }

  /** Fast shutdown (SIGINT): open transactions roll back, committed data stays; killed if it takes too long. */
  async stop(): Promise<void> {
    this.stopping = true;
    clearTimeout(this.restartTimer);
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGINT');
    const timer = setTimeout(() => child.kill('SIGKILL'), STOP_WAIT_MS);
    await exited;
    clearTimeout(timer);
  }
}

async function postgresUserIds(): Promise<{ uid: number; gid: number }> {
  const run = promisify(execFile);
  const [uid, gid] = await Promise.all([run('id', ['-u', 'postgres']), run('id', ['-g', 'postgres'])]);
  return { uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) };
}
