import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { gitBounds } from './git-bounds.js';
import { environmentWithoutSecrets, serverGitEnvironment } from './git-environment.js';

/** The bound a command was stopped at: its deadline or its memory (git-bounds.ts). */
export type ExceededBound = 'deadline' | 'memory';

interface LaunchedGit {
  code: number | null;
  stdout: Buffer;
  stderr: string;
  /** Output went past `maxOutputBytes`: git was stopped, `stdout` holds the first bytes. */
  truncated: boolean;
  /** git was killed at one of its bounds (what it wrote before is in `stdout`). */
  exceeded: ExceededBound | null;
}

interface LaunchOptions {
  cwd?: string;
  input?: string | Buffer;
  env?: NodeJS.ProcessEnv;
  maxOutputBytes: number;
  /** The command's deadline; the configured CAIRN_GIT_TIMEOUT unless the work is known to be long. */
  timeoutMs?: number;
}

const LAUNCHER = fileURLToPath(new URL('./git-launcher.js', import.meta.url));

/**
 * Starts git commands through a small helper process instead of from the
 * service itself. Starting a process from Node forks it, on the event loop,
 * and the fork copies the page tables of the whole heap: ~1 ms for a small
 * process, ~4 ms for one of a few hundred MB like the service. A merge and the
 * mergeability checks it causes start a hundred git commands; from the
 * service that stalled every other request. The helper stays small, so its
 * forks are cheap and happen on another core; the service pays an IPC
 * message. Streaming git (clone, fetch, push) keeps its own processes.
 *
 * The helper is started on first use and again if it dies (calls in flight
 * then fail, as a crashed git would).
 */
class GitLauncher {
  private child: ChildProcess | null = null;
  private readonly pending = new Map<number, { resolve: (result: LaunchedGit) => void; reject: (error: Error) => void }>();
  private nextId = 1;

  run(args: string[], options: LaunchOptions): Promise<LaunchedGit> {
    const child = this.child ?? this.start();
    const id = this.nextId++;
    return new Promise<LaunchedGit>((resolve, reject) => {
      if (this.pending.size === 0) channelOf(child)?.ref(); // a call in flight keeps the process alive, as a child would
      this.pending.set(id, { resolve, reject });
      const { cwd, input, maxOutputBytes } = options;
      const env = { ...options.env, ...serverGitEnvironment() }; // last: no caller can turn replace objects back on
      const { timeoutMs, memoryBytes } = gitBounds();
      const bounds = { timeoutMs: options.timeoutMs ?? timeoutMs, memoryBytes };
      child.send({ id, args, cwd, input, env, maxOutputBytes, ...bounds }, (error) => {
        if (error) this.settle(id)?.reject(error);
      });
    });
  }

  /** Takes a call off the books; when none is left, the idle helper no longer keeps the process alive. */
  private settle(id: number) {
    const waiting = this.pending.get(id);
    this.pending.delete(id);
    if (this.pending.size === 0 && this.child) channelOf(this.child)?.unref();
    return waiting;
  }

  private start(): ChildProcess {
    const child = fork(LAUNCHER, [], {
      env: environmentWithoutSecrets,
      serialization: 'advanced',
      stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
      execArgv: [],
      // Its own process group: a terminal's Ctrl-C (a signal to the service's group) must not cut
      // the git commands in flight; the service decides when they stop. It goes when the service does.
      detached: true,
    });
    child.on('message', (answer: Omit<LaunchedGit, 'stdout'> & { id: number; stdout: Uint8Array }) => {
      const waiting = this.settle(answer.id);
      if (!waiting) return;
      const stdout = Buffer.from(answer.stdout.buffer, answer.stdout.byteOffset, answer.stdout.byteLength);
      waiting.resolve({ code: answer.code, stdout, stderr: answer.stderr, truncated: answer.truncated, exceeded: answer.exceeded });
    });
    child.on('exit', () => {
      if (this.child === child) this.child = null;
      const failed = [...this.pending.values()];
      this.pending.clear();
      for (const { reject } of failed) reject(new Error('the git launcher exited'));
    });
    child.on('error', () => undefined); // reported through 'exit'
    child.unref(); // the helper never keeps the service alive on its own
    channelOf(child)?.unref();
    this.child = child;
    return child;
  }
}

const channelOf = (child: ChildProcess) => child.channel as { ref(): void; unref(): void } | undefined;

export const gitLauncher = new GitLauncher();
