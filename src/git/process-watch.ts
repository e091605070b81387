import fs from 'node:fs/promises';

/**
 * Keeps git processes within their memory bound by watching their resident size, for the git
 * commands the launcher starts (git-launcher.ts). An address-space limit would be the kernel's own
 * bound, but setting one costs an extra program (`prlimit`) per command — some 3 ms, more than a
 * typical git command itself; this watch costs nothing for the commands that end within a tick.
 *
 * A command running past its first tick has its anonymous resident memory (`RssAnon`: its heap,
 * not the pack files it maps, which are the page cache's) read every TICK_MS; one running past a
 * second also has the processes it started found (the `pack-objects` a `repack` starts, from one
 * pass over /proc) and counted with it, every SCAN_EVERY ticks. Growing at git's fastest (some 250
 * MB/s), git itself passes the bound by a few tens of MB before it is stopped, a process it started
 * by up to a second's growth.
 *
 * The processes stay in the service's process group (not detached): whatever kills the service's
 * group — a supervisor, a test — kills its git processes with it.
 */
const TICK_MS = 100;
const SCAN_EVERY = 10;

interface Watched {
  leader: number;
  startedAt: number;
  memoryBytes: number;
  /** The processes it started, as last scanned. */
  descendants: number[];
  exceeded: () => void;
}

export class ProcessWatch {
  private readonly watched = new Map<number, Watched>();
  private timer: NodeJS.Timeout | null = null;
  private ticks = 0;
  private busy = false;
  /** False where there is no /proc to read (not Linux): commands then run under their deadline only. */
  private readonly available: Promise<boolean> = fs.access('/proc/self/status').then(
    () => true,
    () => false,
  );

  /** Watches `leader` and what it starts until `forget`; past the bound, forgets it and calls `exceeded` once (which stops it). */
  watch(leader: number, memoryBytes: number, exceeded: () => void): void {
    this.watched.set(leader, { leader, startedAt: Date.now(), memoryBytes, descendants: [], exceeded });
    this.timer ??= setInterval(() => void this.tick(), TICK_MS);
  }

  forget(leader: number): void {
    this.watched.delete(leader);
    if (this.watched.size === 0 && this.timer) {
      clearInterval(this.timer);
      this.timer = null;
    }
  }

  private async tick(): Promise<void> {
    if (this.busy || !(await this.available)) return; // a slow /proc read is never stacked on another
    this.busy = true;
    try {
      const now = Date.now();
      const due = [...this.watched.values()].filter((entry) => now - entry.startedAt >= TICK_MS);
      if (++this.ticks % SCAN_EVERY === 0) {
        const long = due.filter((entry) => now - entry.startedAt >= TICK_MS * SCAN_EVERY);
        if (long.length) {
          const tree = await processTree();
          for (const entry of long) entry.descendants = descendantsIn(tree, entry.leader);
        }
      }
      await Promise.all(due.map((entry) => this.check(entry)));
    } finally {
      this.busy = false;
    }
  }

  private async check(entry: Watched): Promise<void> {
    const sizes = await Promise.all([entry.leader, ...entry.descendants].map(anonymousResidentBytes));
    const total = sizes.reduce((sum, size) => sum + size, 0);
    if (total <= entry.memoryBytes || !this.watched.has(entry.leader)) return;
    this.forget(entry.leader);
    entry.exceeded();
  }
}

/** Every process's children, from one pass over /proc (empty where there is no /proc). */
export async function processTree(): Promise<Map<number, number[]>> {
  const children = new Map<number, number[]>();
  const pids = (await fs.readdir('/proc').catch(() => [] as string[])).filter((name) => /^\d+$/.test(name)).map(Number);
  await Promise.all(
    pids.map(async (pid) => {
      const parent = await parentOf(pid);
      if (parent !== null) children.set(parent, [...(children.get(parent) ?? []), pid]);
    }),
  );
  return children;
}

/** The processes under `pid` in a tree from processTree, nearest first. */
export function descendantsIn(tree: Map<number, number[]>, pid: number): number[] {
  const found: number[] = [];
  for (let queue = [...(tree.get(pid) ?? [])]; queue.length;) {
    const next = queue.shift()!;
    found.push(next);
    queue = queue.concat(tree.get(next) ?? []);
  }
  return found;
}

/** `RssAnon` of a process in bytes (`VmRSS` where the kernel has no `RssAnon`); 0 once it is gone. */
async function anonymousResidentBytes(pid: number): Promise<number> {
  const status = await fs.readFile(`/proc/${pid}/status`, 'utf8').catch(() => '');
  const kb = (/^RssAnon:\s+(\d+) kB/m.exec(status) ?? /^VmRSS:\s+(\d+) kB/m.exec(status))?.[1];
  return kb ? Number(kb) * 1024 : 0;
}

/** The parent of a process (field 4 of /proc/<pid>/stat, after the parenthesised command name). */
async function parentOf(pid: number): Promise<number | null> {
  const stat = await fs.readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
  const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  return Number.isInteger(parent) && parent > 0 ? parent : null;
}
