import { spawn, type ChildProcess } from 'node:child_process';
import { GIT_STOP_GRACE_MS } from './git-bounds.js';
import { descendantsIn, processTree, ProcessWatch } from './process-watch.js';

/**
 * The helper process that starts git commands for the service (see
 * git-launcher-host.ts). It receives `{id, args, cwd, input, env, maxOutputBytes,
 * timeoutMs, memoryBytes}` over IPC, runs git (never a shell) and answers `{id,
 * code, stdout, stderr, truncated, exceeded}`: past `maxOutputBytes` of output git
 * is stopped and the first bytes are answered; past `timeoutMs`, or past
 * `memoryBytes` of resident memory (process-watch.ts), git and every process it
 * started are killed and `exceeded` says which bound it was. It ends with the
 * service: when the IPC channel closes, it exits.
 */
interface Request {
  id: number;
  args: string[];
  cwd?: string;
  input?: Uint8Array | string;
  env?: Record<string, string | undefined>;
  maxOutputBytes: number;
  timeoutMs: number;
  memoryBytes: number;
}

/** stderr kept per command: enough to say what went wrong. */
const MAX_STDERR_BYTES = 64 * 1024;

const watch = new ProcessWatch();
/** Commands running now, stopped when the service goes away: nothing would bound them any more. */
const running = new Set<ChildProcess>();

/**
 * Stops a command past a bound: git and the processes it started (found before git goes, while
 * they are still its) get SIGTERM, on which git removes its lock files, then SIGKILL after
 * GIT_STOP_GRACE_MS. git itself is signalled through its ChildProcess, which does nothing once it has
 * exited (its pid may be another process's by then).
 */
async function stop(child: ChildProcess, tree?: Map<number, number[]>): Promise<void> {
  const started = child.pid ? descendantsIn(tree ?? (await processTree()), child.pid) : [];
  const signal = (name: NodeJS.Signals) => {
    child.kill(name);
    for (const pid of started) {
      try {
        process.kill(pid, name);
      } catch {
        // gone already
      }
    }
  };
  signal('SIGTERM');
  setTimeout(() => signal('SIGKILL'), GIT_STOP_GRACE_MS).unref();
}

process.on('message', (request: Request) => {
  const child = spawn('git', request.args, {
    cwd: request.cwd,
    env: { ...process.env, GIT_TERMINAL_PROMPT: '0', ...request.env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  let size = 0;
  let errSize = 0;
  let truncated = false;
  let exceeded: 'deadline' | 'memory' | null = null;
  const leader = child.pid;
  const deadline = setTimeout(() => {
    exceeded ??= 'deadline';
    void stop(child);
  }, request.timeoutMs);
  running.add(child);
  if (leader) {
    watch.watch(leader, request.memoryBytes, () => {
      exceeded ??= 'memory';
      void stop(child);
    });
  }
  child.stdout.on('data', (chunk: Buffer) => {
    if (truncated) return;
    const room = request.maxOutputBytes - size;
    out.push(chunk.length > room ? chunk.subarray(0, room) : chunk);
    size += Math.min(chunk.length, room);
    if (chunk.length > room) {
      truncated = true;
      child.kill('SIGKILL'); // a reading command, which starts no processes of its own
    }
  });
  child.stderr.on('data', (chunk: Buffer) => {
    if (errSize < MAX_STDERR_BYTES) err.push(chunk);
    errSize += chunk.length;
  });
  let answered = false;
  const answer = (code: number | null, stderr: string) => {
    if (answered) return;
    answered = true;
    running.delete(child);
    clearTimeout(deadline);
    if (leader) watch.forget(leader);
    // Sent only while the service listens: after it went away the answer has no one to go to, and
    // the last command to end lets the helper go (see 'disconnect').
    if (process.connected)
      process.send?.({ id: request.id, code, stdout: Buffer.concat(out), stderr, truncated, exceeded }, () => undefined);
    else if (running.size === 0) process.exit(0);
  };
  child.on('error', (error) => answer(null, String(error)));
  child.on('close', (code) => answer(code, Buffer.concat(err).toString('utf8')));
  child.stdin.on('error', () => undefined); // git may exit before reading all input
  child.stdin.end(request.input ?? '');
});
// The service went away: the commands still running are stopped, and the helper exits as soon as
// they have (at most GIT_STOP_GRACE_MS later, when SIGKILL has gone out) — at once if none runs.
// It holds the service's stderr, which whoever started the service may be waiting to see closed.
process.on('disconnect', () => {
  if (running.size === 0) process.exit(0);
  void processTree()
    .then((tree) => Promise.all([...running].map((child) => stop(child, tree))))
    .finally(() => setTimeout(() => process.exit(0), GIT_STOP_GRACE_MS));
});
