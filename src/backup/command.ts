import { pino } from 'pino';
import { ConfigError, loadConfig, type Config } from '../config.js';
import { backup, type BackupSummary } from './backup.js';
import { Refusal } from './refusal.js';
import { restore, type RestoreSummary } from './restore.js';

/**
 * `cairn backup <dir>` and `cairn restore <dir>`, which work on the database and the repositories
 * directly (an administrator's tool, not a client of the API). The configuration is read as the
 * service reads it, from the environment, `--data-dir` standing for CAIRN_DATA_DIR. A summary goes
 * to stdout; a refusal or a failure to stderr, with exit code 1. Nothing secret is printed.
 */
export async function runBackupCommand(
  command: 'backup' | 'restore',
  dir: string,
  options: { dataDir?: string | undefined },
): Promise<void> {
  let config: Config;
  try {
    config = loadConfig({ ...process.env, ...(options.dataDir ? { CAIRN_DATA_DIR: options.dataDir } : {}) });
  } catch (error) {
    if (error instanceof ConfigError) return exit(`invalid configuration: ${error.message}`);
    throw error;
  }
  // What the embedded PostgreSQL reports (a start, a warning) goes to stderr, and only warnings: stdout is the summary's.
  const log = pino({ level: 'warn', base: { service: 'cairn', command } }, pino.destination({ dest: 2, sync: true }));
  // Interrupted (Ctrl-C, a service manager's stop): exiting runs the embedded database's safety net,
  // which stops one this command started (never the running service's); what was written stays, named.
  const left =
    command === 'backup'
      ? `${dir} is not a whole backup (it has no manifest.json): remove it`
      : `the restore did not finish: remove ${config.databaseUrl ? "the tables of DATABASE_URL's database" : `${config.dataDir}/postgres`} and empty ${config.repositoriesDir} before restoring again`;
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => exit(`cairn ${command}: interrupted (${signal}); ${left}`));
  }
  try {
    if (command === 'backup') console.log(backupReport(await backup(config, dir, log)));
    else console.log(restoreReport(config, await restore(config, dir, log)));
  } catch (error) {
    if (error instanceof Refusal) return exit(`cairn ${command}: ${error.message}`);
    return exit(`cairn ${command} failed: ${(error as Error).message}`);
  }
}

function backupReport(summary: BackupSummary): string {
  const secret =
    summary.secretKey === 'CAIRN_SECRET_KEY'
      ? "it holds the site's data and signed-push seed. The site's webhook secrets are encrypted with CAIRN_SECRET_KEY, which the backup does not hold: keep that setting with it"
      : "it holds the site's key (webhook secrets decrypt with it) and signed-push seed";
  return [
    `backed up ${contents(summary)} into ${summary.dir}: ${formatBytes(summary.bytes)} in ${summary.seconds.toFixed(1)} s`,
    `This backup is secret: ${secret}. Its directory is readable by its owner only.`,
  ].join('\n');
}

function restoreReport(config: Config, summary: RestoreSummary): string {
  const database = config.databaseUrl ? 'the database of DATABASE_URL' : config.dataDir;
  return [
    `restored ${contents(summary)} into ${database} and ${config.repositoriesDir} in ${summary.seconds.toFixed(1)} s`,
    startAdvice(config, summary.manifest.secretKey),
  ].join('\n');
}

/** How to start the restored site, and with which key. */
function startAdvice(config: Config, secretKey: 'in-backup' | 'CAIRN_SECRET_KEY'): string {
  const start = config.databaseUrl ? 'Start Cairn with this DATABASE_URL' : `Start Cairn with CAIRN_DATA_DIR=${config.dataDir}`;
  if (secretKey === 'CAIRN_SECRET_KEY') {
    return `${start} and the site's CAIRN_SECRET_KEY${config.secretKey ? '' : ' (not set here)'}: its webhook secrets are encrypted with it, and the backup does not hold it.`;
  }
  if (config.secretKey) {
    return `${start}, without CAIRN_SECRET_KEY: the site's key came with the backup, and a process with another key refuses to start.`;
  }
  return `${start}; the site's key came with the backup.`;
}

/** `15 tables (1204 rows) and 3 repositories` */
function contents(summary: { tables: number; rows: number; repositories: number }): string {
  return `${counted(summary.tables, 'table')} (${counted(summary.rows, 'row')}) and ${counted(summary.repositories, 'repository', 'repositories')}`;
}

function counted(count: number, one: string, many = `${one}s`): string {
  return `${count} ${count === 1 ? one : many}`;
}

function formatBytes(bytes: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${unit === 0 ? value : value.toFixed(1)} ${units[unit]}`;
}

function exit(message: string): never {
  console.error(message);
  process.exit(1);
}
