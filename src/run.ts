import 'reflect-metadata';
import { ConfigError, loadConfig } from './config.js';
import { createLogger } from './logger.js';

/** `npm start`: reads the configuration, starts Cairn, stops it gracefully on SIGTERM/SIGINT. */
async function main(): Promise<void> {
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
  const { startService } = await import('./server.js'); // after validation: a bad setting fails fast
  let service;
  try {
    service = await startService(config, log);
  } catch (error) {
    log.fatal({ err: error }, 'Cairn failed to start');
    log.flush(() => process.exit(1));
    return;
  }
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) {
      log.warn({ signal }, 'second signal: exiting now');
      log.flush(() => process.exit(1));
      return;
    }
    stopping = true;
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

await main();
