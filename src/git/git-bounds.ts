import { spawnSync } from 'node:child_process';
import os from 'node:os';
import type { GitBoundSettings } from '../config.js';
import type { Logger } from '../logger.js';

/**
 * What one git process the service starts may take: a deadline and a memory bound
 * (CAIRN_GIT_TIMEOUT, CAIRN_GIT_MEMORY_LIMIT), set once at start-up for every git after it.
 *
 * - Commands started through the launcher — everything but the wire protocol's streaming
 *   processes, the advertisement included — run under a wall-clock deadline and a watch on their
 *   resident memory, summed over the processes they start (git-launcher.ts, process-watch.ts);
 *   maintenance gets LONG_WORK_FACTOR times the deadline.
 * - The wire protocol's `upload-pack` and `receive-pack`, started by the service itself and running
 *   as long as the client's network needs, run under the kernel's limits (`prlimit`), which the
 *   processes they start (`pack-objects`, `index-pack`) inherit: an address space of the memory
 *   bound for each process, and LONG_WORK_FACTOR times the deadline of CPU time — a slow network
 *   costs no CPU, a runaway pack does. A push is bounded in all by CAIRN_GIT_PUSH_TIMEOUT besides
 *   (receive.ts).
 */
export const LONG_WORK_FACTOR = 10;

let bounds: GitBoundSettings = { timeoutMs: 60_000, memoryBytes: 1024 ** 3, pushTimeoutMs: 10 * 60_000 };
let prlimit = false;
/** Whether `setpriv --pdeathsig` (util-linux) is here: the wire protocol's git stops when the service dies. */
let pdeathsig = false;

/** How long git gets to stop on SIGTERM (removing its lock and temporary files: it may be writing refs) before SIGKILL. */
export const GIT_STOP_GRACE_MS = 2_000;

/** Sets the bounds of every git started from now on; says so when the kernel's limits cannot be set here. */
export function configureGitBounds(settings: GitBoundSettings, log: Logger): void {
  bounds = { ...settings };
  prlimit = spawnSync('prlimit', ['--version'], { stdio: 'ignore' }).status === 0;
  pdeathsig = spawnSync('setpriv', ['--pdeathsig', 'TERM', '--', 'true'], { stdio: 'ignore' }).status === 0;
  if (!prlimit) {
    log.warn(
      "prlimit (util-linux) is not installed: the wire protocol's git processes run without a memory bound, pushes within CAIRN_GIT_PUSH_TIMEOUT only",
    );
  }
}

export function gitBounds(): Readonly<GitBoundSettings> {
  return bounds;
}

/**
 * git's default pack window on 64-bit systems. `upload-pack` reads no `core.*` settings (its own
 * config reader stops short of them), so it maps a pack in windows this large, whatever
 * BOUNDED_GIT_SETTINGS say: its address space gets this much room beyond the bound.
 */
const DEFAULT_PACK_WINDOW_BYTES = 1024 ** 3;

const limits = (extraBytes = 0) => [
  `--as=${bounds.memoryBytes + extraBytes}`,
  `--cpu=${Math.ceil((bounds.timeoutMs * LONG_WORK_FACTOR) / 1000)}`,
];

/**
 * The program and arguments that run the wire protocol's `git <args>` under the kernel's bounds.
 * `upload-pack` gets the room of its pack window besides, and the `pack-objects` it starts — the one
 * that works — the bound exactly (`uploadpack.packObjectsHook`, honoured from the command line only),
 * behind `packObjectsWrapper` when there is one (the pack cache, pack-cache.ts).
 * Without `prlimit` (not Linux) git runs unbounded but for a push's own deadline (a warning at start-up says so).
 * With `setpriv`, git gets SIGTERM when the service dies (`--pdeathsig`; on SIGTERM git removes its
 * lock files): it runs in a process group of its own, so nothing else would stop the push of a
 * process killed outright from moving refs after the repository's lock went with that process's
 * database connections.
 */
export function underKernelBounds(
  service: 'upload-pack' | 'receive-pack',
  args: string[],
  packObjectsWrapper: readonly string[] = [],
): { command: string; args: string[] } {
  // upload-pack's pack-objects: behind the wrapper, then the kernel's bound exactly.
  const packObjects = service === 'upload-pack' ? [...packObjectsWrapper, ...(prlimit ? ['prlimit', ...limits(), '--'] : [])] : [];
  const hook = packObjects.length ? ['-c', `uploadpack.packObjectsHook=${packObjects.map(shellQuoted).join(' ')}`] : [];
  const git = ['git', ...hook, ...args];
  const bounded = prlimit ? ['prlimit', ...limits(service === 'upload-pack' ? DEFAULT_PACK_WINDOW_BYTES : 0), '--', ...git] : git;
  const [command, ...rest] = pdeathsig ? ['setpriv', '--pdeathsig', 'TERM', '--', ...bounded] : bounded;
  return { command: command!, args: rest };
}

/** A word for `sh -c` (git runs the pack-objects hook through the shell). */
function shellQuoted(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`;
}

/**
 * git settings that keep a process within its memory bound, whatever a repository holds:
 * - pack files are mapped in windows of at most 32 MiB and 256 MiB in all (git's defaults on 64-bit
 *   systems, 1 GiB and 8 GiB, would not fit an address-space bound), least recently used unmapped
 *   first; reading packs stays sequential and as fast;
 * - files over 64 MiB are streamed, never held whole (receiving, packing, reading them) nor delta
 *   compressed, and diffs treat them as binary (git's own threshold is 512 MiB: two such files side
 *   by side in a delta search pass the bound);
 * - packing and indexing use at most 4 threads, each holding at most 128 MiB of objects in a delta
 *   search (git's default is a thread per CPU without a memory limit: on a large machine their sum
 *   would pass the bound, and maintenance would never finish).
 */
export const BOUNDED_GIT_SETTINGS: Record<string, string> = {
  'core.packedGitWindowSize': '32m',
  'core.packedGitLimit': '256m',
  'core.bigFileThreshold': '64m',
  'pack.threads': String(Math.min(4, os.availableParallelism())),
  'pack.windowMemory': '128m',
};
