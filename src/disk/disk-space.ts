import fs from 'node:fs/promises';
import { Counter, Gauge, type Registry } from 'prom-client';
import type { FullStore } from '../errors/no-space.js';
import type { Logger } from '../logger.js';

/** Below this much space free to the service, the data dir counts as full: the next write may well fail. */
const MIN_FREE_BYTES = 8 * 1024 * 1024;
/** A write refused for lack of space on a disk not measured here (an external database's) keeps the service unready this long. */
const REFUSAL_MEMORY_MS = 10_000;
/** At most one log line per this long while writes keep being refused; the others are counted in it. */
const REPORT_EVERY_MS = 5_000;

/**
 * What is known of the disks the service writes to: the space free in the data dir now (statfs:
 * repositories, spooled request bodies, the embedded database), and writes refused for lack of space
 * anywhere (the database's disk included, wherever it is). Readiness, metrics and the log read it.
 * Nothing is latched: once space is freed the next write succeeds and readiness returns by itself.
 */
export class DiskSpace {
  private readonly lastRefusalAt = new Map<FullStore, number>();
  private readonly refusals: Counter<'store'>;
  private lastReportAt = 0;
  private unreported = 0;

  constructor(
    private readonly dataDir: string,
    /** Whether the database lives in the data dir (the embedded one), so that statfs measures its disk too. */
    private readonly databaseInDataDir: boolean,
    registry: Registry,
    private readonly log: Logger,
  ) {
    this.refusals = new Counter({
      name: 'cairn_disk_full_refusals_total',
      help: 'Writes refused because a disk was full (answered 507), by where the space ran out (database, files)',
      labelNames: ['store'] as const,
      registers: [registry],
    });
    const freeBytes = () => this.freeBytes();
    new Gauge({
      name: 'cairn_disk_free_bytes',
      help: "Space free to the service in its data dir's file system",
      registers: [registry],
      async collect() {
        const free = await freeBytes();
        if (free !== null) this.set(free);
      },
    });
  }

  /** A write was refused for lack of space (noSpaceOf): counted, remembered for readiness, logged now and then. */
  refused(store: FullStore, error: unknown): void {
    const now = Date.now();
    this.lastRefusalAt.set(store, now);
    this.refusals.inc({ store });
    if (now - this.lastReportAt < REPORT_EVERY_MS) {
      this.unreported++;
      return;
    }
    this.log.error({ err: error, store, alsoSince: this.unreported }, 'disk full: a write was refused, answering 507');
    this.lastReportAt = now;
    this.unreported = 0;
  }

  /**
   * Why the disks keep the service from being ready, or null: the data dir nearly full, or a write
   * refused just now on a disk statfs does not measure. A disk measured is ready again as soon as
   * space is freed.
   */
  async problem(): Promise<string | null> {
    const free = await this.freeBytes();
    if (free !== null && free < MIN_FREE_BYTES) return 'disk_full';
    const recently = (store: FullStore) => Date.now() - (this.lastRefusalAt.get(store) ?? -Infinity) < REFUSAL_MEMORY_MS;
    if (free === null && recently('files')) return 'disk_full';
    if ((free === null || !this.databaseInDataDir) && recently('database')) return 'database_disk_full';
    return null;
  }

  private async freeBytes(): Promise<number | null> {
    try {
      const stats = await fs.statfs(this.dataDir);
      return stats.bavail * stats.bsize;
    } catch {
      return null; // the data dir is not there (yet): nothing to say about its disk
    }
  }
}
