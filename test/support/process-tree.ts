import fs from 'node:fs/promises';

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
  const children = new Map<number, number[]>();
  const pids = (await fs.readdir('/proc')).filter((name) => /^\d+$/.test(name)).map(Number);
  await Promise.all(
    pids.map(async (pid) => {
      const stat = await fs.readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
      const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (parent) children.set(parent, [...(children.get(parent) ?? []), pid]);
    }),
  );
  const found = [root];
  for (let i = 0; i < found.length; i++) found.push(...(children.get(found[i]!) ?? []));
  return found;
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

async function residentBytes(pid: number): Promise<number> {
  const status = await fs.readFile(`/proc/${pid}/status`, 'utf8').catch(() => '');
  const kb = /^VmRSS:\s+(\d+) kB/m.exec(status)?.[1];
  return kb ? Number(kb) * 1024 : 0;
}
