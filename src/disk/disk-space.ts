import fs from 'node:fs/promises';
import { Counter, Gauge, type Registry } from 'prom-client';
import type { FullStore } from '../errors/no-space.js';
import { zeroCounter } from '../http/metrics.js';
import { throttledLog, type Logger } from '../logger.js';

/** Below this much space available to the service, a disk counts as full: the next write may well fail. */
const MIN_FREE_BYTES = 8 * 1024 * 1024;
/** Below this many free inodes, likewise: no new file (a loose object, a lock file) could be made. */
const MIN_FREE_INODES = 1_000;
/** A write refused for lack of space keeps the service unready this long, whatever statfs says (quotas, other mounts). */
const REFUSAL_MEMORY_MS = 5_000;
/** At most one log line per this long while writes keep being refused; the others are counted in it. */
const REPORT_EVERY_MS = 5_000;

/** Where a write can find no space, each counted from start-up (at 0 until it happens). */
const STORES = Object.keys({ database: true, files: true } satisfies Record<FullStore, true>);

/** The directories whose disks the service writes to, by the name the metrics give them. */
export type WatchedDirs = Partial<Record<'data' | 'repositories' | 'database', string>>;

interface Room {
  bytes: number;
  /** Free inodes; Infinity where the file system has no fixed number of them. */
  inodes: number;
}

/**
 * What is known of the disks the service writes to: the room on each watched directory's file
 * system now (statfs: the data dir, the repositories, the embedded database), and writes refused
 * for lack of space anywhere (an external database's disk, a quota). Readiness, metrics and the log
 * read it. Nothing is latched: once space is freed the next write succeeds, and readiness returns
 * REFUSAL_MEMORY_MS after the last refusal.
 */
export class DiskSpace {
  private readonly lastRefusalAt = new Map<FullStore, number>();
  private readonly refusals: Counter<'store'>;
  private readonly report = throttledLog(REPORT_EVERY_MS);

  constructor(
    private readonly dirs: WatchedDirs,
    registry: Registry,
    private readonly log: Logger,
  ) {
    this.refusals = new Counter({
      name: 'cairn_disk_full_refusals_total',
      help: 'Writes refused because a disk was full (answered 507), by where the space ran out (database, files)',
      labelNames: ['store'] as const,
      registers: [registry],
    });
    zeroCounter(this.refusals, { store: STORES });
    const watched = Object.entries(dirs);
    new Gauge({
      name: 'cairn_disk_available_bytes',
      help: 'Space available to the service on the file system of each directory it writes to (data, repositories, database)',
      labelNames: ['dir'] as const,
      registers: [registry],
      async collect() {
        this.reset(); // a directory statfs cannot read is left out, not reported as full
        for (const [name, dir] of watched) {
          const room = await roomIn(dir);
          if (room) this.set({ dir: name }, room.bytes);
        }
      },
    });
  }

  /** A write was refused for lack of space (noSpaceOf): counted, remembered for readiness, logged now and then. */
  refused(store: FullStore, error: unknown): void {
    this.lastRefusalAt.set(store, Date.now());
    this.refusals.inc({ store });
    this.report(this.log, 'error', { err: error, store }, 'disk full: a write was refused, answering 507');
  }

  /** Why the disks keep the service from being ready, or null: a watched disk (nearly) full, or a write refused just now. */
  async problem(): Promise<string | null> {
    for (const dir of Object.values(this.dirs)) {
      const room = await roomIn(dir);
      if (room && (room.bytes < MIN_FREE_BYTES || room.inodes < MIN_FREE_INODES)) return 'disk_full';
    }
    const recently = (store: FullStore) => Date.now() - (this.lastRefusalAt.get(store) ?? -Infinity) < REFUSAL_MEMORY_MS;
    if (recently('files')) return 'disk_full';
    if (recently('database')) return 'database_disk_full';
    return null;
  }
}

/** The room on a directory's file system, or null when it cannot be read (not made yet). */
async function roomIn(dir: string): Promise<Room | null> {
  try {
    const stats = await fs.statfs(dir);
    return { bytes: stats.bavail * stats.bsize, inodes: stats.files > 0 ? stats.ffree : Infinity };
  } catch {
    return null;
  }
}
