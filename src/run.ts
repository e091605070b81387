import 'reflect-metadata';
import { ConfigError, loadConfig } from './config.js';
import { createLogger } from './logger.js';
import type { Surface } from './server.js';

/** Signals this close together are one request to stop (one keypress, delivered by several routes). */
const SAME_REQUEST_MS = 1_000;

/**
 * Runs Cairn until SIGTERM/SIGINT: reads the configuration (a bad setting
 * stops start-up at once, naming the variable), starts the service with the
 * surface it is given mounted onto it, and stops it gracefully. The process
 * entry (`rest-facade/main.ts`) calls it with the REST facade: the core never
 * imports the facade.
 */
export async function runService(loadSurface: () => Promise<Surface>): Promise<void> {
  let config;
  try {
    config = loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(`Cairn cannot start: invalid configuration: ${error.message}`);
      process.exit(2);
    }
    throw error;
  }
  const log = createLogger(config.logLevel);
  // The embedded PostgreSQL starts before the service's modules load, not alongside: loading them keeps this one
  // thread busy for a second in long synchronous stretches, and each of the dozen small steps of starting
  // PostgreSQL (files, `id`, the spawn, its first connection) waited behind one, so it was ready a second after
  // the modules instead of long before. startService awaits it and reports its failure. The modules load after
  // validation: a bad setting fails fast.
  const database = config.databaseUrl
    ? undefined
    : import('./db/embedded-postgres.js').then(({ startEmbeddedPostgres }) => startEmbeddedPostgres(config.dataDir, log));
  await database?.catch(() => undefined);
  let service;
  try {
    const { startService } = await import('./server.js');
    service = await startService(config, log, await loadSurface(), database);
  } catch (error) {
    log.fatal({ err: error }, 'Cairn failed to start');
    log.flush(() => process.exit(1));
    return;
  }
  let stoppingSince: number | null = null;
  const stop = (signal: string) => {
    if (stoppingSince !== null) {
      // Ctrl-C in a terminal (or systemd's stop) signals the whole process group: under `npm start`
      // the service hears it twice, from the terminal and forwarded by npm. That is one request to
      // stop; only a signal sent deliberately later means "now".
      if (Date.now() - stoppingSince < SAME_REQUEST_MS) {
        log.info({ signal }, 'signal repeated: already stopping');
        return;
      }
      log.warn({ signal }, 'second signal: exiting now');
      log.flush(() => process.exit(1));
      return;
    }
    stoppingSince = Date.now();
    log.info({ signal }, 'signal received');
    service.close().then(
      () => log.flush(() => process.exit(0)),
      (error: unknown) => {
        log.error({ err: error }, 'shutdown failed');
        log.flush(() => process.exit(1));
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}
