import { isIP } from 'node:net';
import path from 'node:path';

/**
 * Service configuration, read once from the environment.
 * Every value is validated here so that a bad value stops start-up with a
 * message naming the variable, instead of failing later in some request.
 */
export interface Config {
  port: number;
  host: string;
  dataDir: string;
  /** Where the bare repositories live (CAIRN_REPOSITORIES_DIR): shared by every process of a site. */
  repositoriesDir: string;
  baseUrl: string;
  databaseUrl?: string;
  /**
   * Longest the service waits on PostgreSQL for a connection or one statement (CAIRN_DATABASE_TIMEOUT):
   * past it the request answers 503 instead of hanging with a stalled database.
   */
  databaseTimeoutMs: number;
  /**
   * How long a repository lock's lease lasts from its last renewal (CAIRN_LOCK_LEASE): a holder
   * that stops renewing (hung, cut off) loses the lock to the next process that wants it this late.
   */
  lockLeaseMs: number;
  mongodbUrl?: string;
  secretKey?: string;
  adminToken?: string;
  webhookTimeoutMs: number;
  webhookRetryDelaysMs: number[];
  webhookDisableAfterMs: number;
  /** Request bodies one process holds for attempts in flight, all webhooks together (CAIRN_WEBHOOK_MEMORY). */
  webhookMemoryBytes: number;
  deliveryRetentionMs: number;
  webhookAllowedHosts: string[];
  gitAnonymousRead: boolean;
  gitMaxPushSize: number;
  rateLimits: RateLimitSettings;
  /** How long a git client may send or read slower than 1 KiB/s, while the server waits on it, before it is cut off. */
  gitPaceWindowMs: number;
  /** What one git process the service starts may take (git-bounds.ts). */
  gitBounds: GitBoundSettings;
  /** How long after the last push of a burst a repository is maintained (CAIRN_GIT_MAINTENANCE_DELAY). */
  gitMaintenanceDelayMs: number;
  /** Disk the pack cache shared by concurrent clones may hold; 0 turns it off (CAIRN_PACK_CACHE). */
  packCacheBytes: number;
  logLevel: LogLevel;
}

/** Budgets per window; 0 turns that limit off. */
export interface RateLimitSettings {
  /** REST requests and GraphQL points per user (all their tokens together) per hour (CAIRN_RATE_LIMIT). */
  perHour: number;
  /** Issues, pull requests, reviews, webhooks and tokens created per user per minute (CAIRN_RATE_LIMIT_CREATE). */
  createsPerMinute: number;
  /** Anonymous git fetch requests per client address per hour (CAIRN_RATE_LIMIT_GIT_ANONYMOUS). */
  anonymousFetchesPerHour: number;
}

/** The bounds of the git processes the service starts. */
export interface GitBoundSettings {
  /** Longest a git command may run (CAIRN_GIT_TIMEOUT); long work (maintenance, a fetch's CPU time) gets ten times this. */
  timeoutMs: number;
  /** Memory one git process may use (CAIRN_GIT_MEMORY_LIMIT). */
  memoryBytes: number;
  /** Longest a push may hold its repository, from taking its lock to letting it go (CAIRN_GIT_PUSH_TIMEOUT). */
  pushTimeoutMs: number;
}

export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
const LOG_LEVELS: LogLevel[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    message: string,
  ) {
    super(`${variable}: ${message}`);
    this.name = 'ConfigError';
  }
}

const DURATION_UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** Parses `250ms`, `10s`, `5m`, `2h`, `7d` (fractions allowed: `1.5s`). */
function parseDuration(value: string): number | undefined {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)$/.exec(value.trim());
  if (!match) return undefined;
  return Math.round(Number(match[1]) * DURATION_UNITS[match[2]!]!);
}

const SIZE_UNITS: Record<string, number> = { '': 1, k: 1024, m: 1024 ** 2, g: 1024 ** 3 };

/** Parses byte sizes: `1048576`, `512k`, `100m`, `2g` (case-insensitive, optional trailing `b`). */
function parseSize(value: string): number | undefined {
  const match = /^(\d+)\s*([kmg]?)b?$/i.exec(value.trim());
  if (!match) return undefined;
  return Number(match[1]) * SIZE_UNITS[match[2]!.toLowerCase()]!;
}

type Env = Record<string, string | undefined>;

/**
 * The longest pushes that keep coming put a repository's maintenance off (git/maintenance.ts), and
 * so the longest CAIRN_GIT_MAINTENANCE_DELAY may be: past it the delay would mean nothing.
 */
export const GIT_MAINTENANCE_MAX_WAIT: [ms: number, text: string] = [5 * 60_000, '5m'];

export function loadConfig(env: Env = process.env): Config {
  const read = (name: string): string | undefined => {
    const value = env[name];
    return value === undefined || value.trim() === '' ? undefined : value.trim();
  };
  const duration = (name: string, fallback: string, max?: [ms: number, text: string]): number => {
    const raw = read(name) ?? fallback;
    const ms = parseDuration(raw);
    if (ms === undefined || ms <= 0) {
      throw new ConfigError(name, `"${raw}" is not a positive duration (use ms, s, m, h or d, e.g. 10s)`);
    }
    if (max && ms > max[0]) throw new ConfigError(name, `"${raw}" is longer than ${max[1]}`);
    return ms;
  };
  /** A size of at least `min` (`[bytes, as written]`); `offByZero`: 0 is also taken, and turns the thing off. */
  const size = (name: string, fallback: string, min: [bytes: number, text: string], offByZero = false): number => {
    const raw = read(name) ?? fallback;
    const bytes = parseSize(raw);
    if (bytes === 0 && offByZero) return 0;
    if (bytes === undefined || bytes < min[0]) {
      throw new ConfigError(name, `"${raw}" is not a size of at least ${min[1]} (e.g. 1g, 256m${offByZero ? '; 0 turns it off' : ''})`);
    }
    return bytes;
  };

  const portRaw = read('PORT') ?? '3000';
  const port = Number(portRaw);
  if (!/^\d+$/.test(portRaw) || port > 65535) {
    throw new ConfigError('PORT', `"${portRaw}" is not a TCP port (0-65535)`);
  }

  const host = read('HOST') ?? '0.0.0.0';
  if (
    !isIP(host) &&
    !/^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/.test(host)
  ) {
    throw new ConfigError('HOST', `"${host}" is not an IP address or host name`);
  }
  const dataDir = path.resolve(read('CAIRN_DATA_DIR') ?? './data');
  const repositoriesDir = path.resolve(read('CAIRN_REPOSITORIES_DIR') ?? path.join(dataDir, 'repositories'));

  const baseUrlRaw = read('CAIRN_BASE_URL') ?? `http://localhost:${port}`;
  let baseUrl: string;
  try {
    const url = new URL(baseUrlRaw);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error('protocol');
    // Clone URLs and payload links are built by appending paths: a query, fragment or credentials would break them.
    if (url.search || url.hash || url.username || url.password) throw new Error('parts');
    baseUrl = url.toString().replace(/\/+$/, '');
  } catch {
    throw new ConfigError('CAIRN_BASE_URL', `"${baseUrlRaw}" is not an absolute http(s) URL without credentials, query or fragment`);
  }

  const databaseUrl = read('DATABASE_URL');
  if (databaseUrl && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    throw new ConfigError('DATABASE_URL', 'must be a postgres:// or postgresql:// connection URL');
  }
  const mongodbUrl = read('MONGODB_URL');
  if (mongodbUrl && !/^mongodb(\+srv)?:\/\//.test(mongodbUrl)) {
    throw new ConfigError('MONGODB_URL', 'must be a mongodb:// or mongodb+srv:// connection URL');
  }

  const secretKey = read('CAIRN_SECRET_KEY');
  if (secretKey !== undefined && secretKey.length < 32) {
    throw new ConfigError('CAIRN_SECRET_KEY', 'must be at least 32 characters');
  }
  if (secretKey?.startsWith('base64:') && !/^base64:[A-Za-z0-9+/]{43}=$/.test(secretKey)) {
    throw new ConfigError('CAIRN_SECRET_KEY', '"base64:" must be followed by the base64 of 32 bytes (44 characters)');
  }

  const adminToken = read('CAIRN_ADMIN_TOKEN');
  if (adminToken !== undefined && !/^[\x21-\x7e]{20,200}$/.test(adminToken)) {
    throw new ConfigError('CAIRN_ADMIN_TOKEN', 'must be 20 to 200 printable characters without spaces');
  }

  const retryRaw = read('CAIRN_WEBHOOK_RETRY_DELAYS') ?? '10s,60s,300s';
  const webhookRetryDelaysMs = retryRaw.split(',').map((part) => {
    const ms = parseDuration(part);
    if (ms === undefined || ms <= 0) {
      throw new ConfigError('CAIRN_WEBHOOK_RETRY_DELAYS', `"${part.trim()}" is not a positive duration`);
    }
    return ms;
  });
  if (webhookRetryDelaysMs.length > 20) {
    throw new ConfigError('CAIRN_WEBHOOK_RETRY_DELAYS', 'at most 20 retries');
  }

  const webhookAllowedHosts = (read('CAIRN_WEBHOOK_ALLOWED_HOSTS') ?? 'external')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (webhookAllowedHosts.length === 0) {
    throw new ConfigError('CAIRN_WEBHOOK_ALLOWED_HOSTS', 'must name at least one rule');
  }
  for (const rule of webhookAllowedHosts) {
    if (!isHostRule(rule)) {
      throw new ConfigError('CAIRN_WEBHOOK_ALLOWED_HOSTS', `"${rule}" is not external, private, loopback, *, a CIDR or a host glob`);
    }
  }

  const anonRaw = (read('CAIRN_GIT_ANONYMOUS_READ') ?? 'true').toLowerCase();
  if (!['true', 'false', '1', '0', 'yes', 'no'].includes(anonRaw)) {
    throw new ConfigError('CAIRN_GIT_ANONYMOUS_READ', `"${anonRaw}" is not a boolean (true or false)`);
  }

  const gitMaxPushSize = size('CAIRN_GIT_MAX_PUSH_SIZE', '2g', [1, '1 byte']);

  const count = (name: string, fallback: number): number => {
    const raw = read(name) ?? String(fallback);
    if (!/^\d{1,9}$/.test(raw)) throw new ConfigError(name, `"${raw}" is not a whole number (0 turns the limit off)`);
    return Number(raw);
  };
  const rateLimits: RateLimitSettings = {
    perHour: count('CAIRN_RATE_LIMIT', 5000),
    createsPerMinute: count('CAIRN_RATE_LIMIT_CREATE', 80),
    anonymousFetchesPerHour: count('CAIRN_RATE_LIMIT_GIT_ANONYMOUS', 1000),
  };
  const gitPaceWindowMs = duration('CAIRN_GIT_PACE_WINDOW', '30s');
  if (gitPaceWindowMs < 1000) {
    throw new ConfigError('CAIRN_GIT_PACE_WINDOW', 'must be at least 1s (the pace of clients is sampled every second)');
  }

  const gitMemoryBytes = size('CAIRN_GIT_MEMORY_LIMIT', '1g', [64 * 1024 ** 2, '64m']);
  // Deadlines are timers: at most a day for a command (ten times that for long work), a week for a push.
  const gitBounds: GitBoundSettings = {
    timeoutMs: duration('CAIRN_GIT_TIMEOUT', '60s', [86_400_000, '1d']),
    memoryBytes: gitMemoryBytes,
    pushTimeoutMs: duration('CAIRN_GIT_PUSH_TIMEOUT', '10m', [7 * 86_400_000, '7d']),
  };

  const packCacheBytes = size('CAIRN_PACK_CACHE', '1g', [1024 ** 2, '1m'], true);
  const webhookMemoryBytes = size('CAIRN_WEBHOOK_MEMORY', '32m', [1024 ** 2, '1m']);

  const logLevel = (read('LOG_LEVEL') ?? 'info').toLowerCase() as LogLevel;
  if (!LOG_LEVELS.includes(logLevel)) {
    throw new ConfigError('LOG_LEVEL', `"${logLevel}" is not one of ${LOG_LEVELS.join(', ')}`);
  }

  return {
    port,
    host,
    dataDir,
    repositoriesDir,
    baseUrl,
    databaseUrl,
    databaseTimeoutMs: duration('CAIRN_DATABASE_TIMEOUT', '10s', [600_000, '10m']),
    lockLeaseMs: lockLease(duration('CAIRN_LOCK_LEASE', '30s', [3_600_000, '1h'])),
    mongodbUrl,
    secretKey,
    adminToken,
    webhookTimeoutMs: duration('CAIRN_WEBHOOK_TIMEOUT', '10s'),
    webhookRetryDelaysMs,
    webhookDisableAfterMs: duration('CAIRN_WEBHOOK_DISABLE_AFTER', '7d'),
    webhookMemoryBytes,
    deliveryRetentionMs: duration('CAIRN_DELIVERY_RETENTION', '30d'),
    webhookAllowedHosts,
    gitAnonymousRead: ['true', '1', 'yes'].includes(anonRaw),
    gitMaxPushSize,
    rateLimits,
    gitPaceWindowMs,
    gitBounds,
    gitMaintenanceDelayMs: duration('CAIRN_GIT_MAINTENANCE_DELAY', '10s', GIT_MAINTENANCE_MAX_WAIT),
    packCacheBytes,
    logLevel,
  };
}

/** Syntax check for one CAIRN_WEBHOOK_ALLOWED_HOSTS rule; the webhooks module interprets them. */
function isHostRule(rule: string): boolean {
  if (['external', 'private', 'loopback', '*'].includes(rule)) return true;
  const cidr = /^([0-9a-fA-F:.]+)\/(\d{1,3})$/.exec(rule);
  if (cidr) {
    const family = isIP(cidr[1]!);
    return family !== 0 && Number(cidr[2]) <= (family === 4 ? 32 : 128);
  }
  return /^[A-Za-z0-9*.-]+$/.test(rule); // host glob such as *.example.com
}

/** A lease is renewed three times within its length: shorter than 3 s leaves a renewal no time. */
function lockLease(ms: number): number {
  if (ms < 3_000) throw new ConfigError('CAIRN_LOCK_LEASE', `"${ms} ms" is shorter than 3s`);
  return ms;
}
