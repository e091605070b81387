import fs from 'node:fs/promises';
import { descendantsIn, processTree } from '../../src/git/process-watch.js';

/**
 * A guard for tests that provoke a blow-up: sums the resident memory of a process and every process
 * under it (from /proc) every `everyMs`, keeps the peak, and kills the whole tree once the sum passes
 * `limitBytes` — so a regression fails its test instead of taking the machine down.
 */
export class TreeGuard {
  peakBytes = 0;
  /** Set once the bound was passed and the tree killed. */
  exceeded = false;
  private readonly timer: NodeJS.Timeout;
  private busy = false;

  constructor(
    private readonly root: number,
    private readonly limitBytes: number,
    everyMs = 100,
  ) {
    this.timer = setInterval(() => void this.sample(), everyMs);
  }

  stop(): void {
    clearInterval(this.timer);
  }

  get peakMb(): number {
    return Math.round(this.peakBytes / 1024 ** 2);
  }

  private async sample(): Promise<void> {
    if (this.busy) return;
    this.busy = true;
    try {
      const pids = await treeOf(this.root);
      const sizes = await Promise.all(pids.map(residentBytes));
      const total = sizes.reduce((sum, size) => sum + size, 0);
      this.peakBytes = Math.max(this.peakBytes, total);
      if (total > this.limitBytes && !this.exceeded) {
        this.exceeded = true;
        for (const pid of pids) {
          try {
            process.kill(pid, 'SIGKILL');
          } catch {
            // gone already
          }
        }
      }
    } finally {
      this.busy = false;
    }
  }
}

/** A process and all its descendants, from one pass over /proc. */
export async function treeOf(root: number): Promise<number[]> {
  return [root, ...descendantsIn(await processTree(), root)];
}

/** The command lines of a process tree's members (to see which git is running). */
export async function commandsOf(pids: number[]): Promise<string[]> {
  return Promise.all(
    pids.map((pid) =>
      fs.readFile(`/proc/${pid}/cmdline`, 'utf8').then(
        (line) => line.split('\0').join(' '),
        () => '',
      ),
    ),
  );
}

/** The git commands running under `root` whose working directory is one of `dirs` (a repository's). */
export async function gitCommandsIn(root: number, dirs: string[], command: string): Promise<number> {
  const wanted = new Set(await Promise.all(dirs.map((dir) => fs.realpath(dir).catch(() => dir))));
  const pids = await treeOf(root);
  const found = await Promise.all(
    pids.map(async (pid) => {
      const [line, cwd] = await Promise.all([
        fs.readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => ''),
        fs.readlink(`/proc/${pid}/cwd`).catch(() => ''),
      ]);
      return line.split('\0').slice(0, 2).join(' ') === `git ${command}` && wanted.has(cwd);
    }),
  );
  return found.filter(Boolean).length;
}

async function residentBytes(pid: number): Promise<number> {
  const status = await fs.readFile(`/proc/${pid}/status`, 'utf8').catch(() => '');
  const kb = /^VmRSS:\s+(\d+) kB/m.exec(status)?.[1];
  return kb ? Number(kb) * 1024 : 0;
}
