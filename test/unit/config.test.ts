import { ConfigError, loadConfig } from '../../src/config.js';
import { configRefusal } from './config-refusal.js';

/**
 * Configuration (README "Configuration"): durations take ms, s, m, h or d (`10s`, `7d`, fractions
 * allowed); sizes k, m, g; a bad value stops start-up with a ConfigError naming the variable.
 * parseDuration and parseSize are not exported: they are tested through loadConfig, which takes
 * the environment as an argument.
 */

describe('durations', () => {
  const timeout = (value: string) => loadConfig({ CAIRN_WEBHOOK_TIMEOUT: value }).webhookTimeoutMs;

  test.each([
    ['250ms', 250],
    ['1s', 1_000],
    ['1.5s', 1_500],
    ['0.5m', 30_000],
    ['5m', 300_000],
    ['2h', 7_200_000],
    ['7d', 604_800_000],
    [' 10s ', 10_000],
    ['1.0004ms', 1], // rounded to whole milliseconds
  ])('%j is %d ms', (value, ms) => {
    expect(timeout(value)).toBe(ms);
  });

  test.each(['10', '10 s', '10S', '1.s', '.5s', '-1s', '+1s', '1e3ms', '10sec', '1w', '0s', '0ms', '0.0004ms', 's', '1s2'])(
    '%j is refused',
    (value) => {
      expect(configRefusal({ CAIRN_WEBHOOK_TIMEOUT: value })).toMatchObject({ variable: 'CAIRN_WEBHOOK_TIMEOUT' });
    },
  );

  test('an empty or blank value is the default', () => {
    expect(timeout('')).toBe(10_000);
    expect(timeout('   ')).toBe(10_000);
  });

  test('the defaults the README documents', () => {
    const config = loadConfig({});
    expect(config.webhookTimeoutMs).toBe(10_000);
    expect(config.webhookRetryDelaysMs).toEqual([10_000, 60_000, 300_000]);
    expect(config.webhookDisableAfterMs).toBe(7 * 86_400_000);
    expect(config.deliveryRetentionMs).toBe(30 * 86_400_000);
    expect(config.databaseTimeoutMs).toBe(10_000);
    expect(config.lockLeaseMs).toBe(30_000);
    expect(config.gitPaceWindowMs).toBe(30_000);
    expect(config.gitMaintenanceDelayMs).toBe(10_000);
    expect(config.gitBounds).toEqual({ timeoutMs: 60_000, memoryBytes: 1024 ** 3, pushTimeoutMs: 600_000 });
    expect(config.gitMaxPushSize).toBe(2 * 1024 ** 3);
    expect(config.webhookAllowedHosts).toEqual(['external']);
    expect(config.rateLimits).toEqual({ perHour: 5000, createsPerMinute: 80, anonymousFetchesPerHour: 1000 });
  });

  test('bounded durations: at their bound accepted, past it refused', () => {
    expect(loadConfig({ CAIRN_GIT_TIMEOUT: '1d' }).gitBounds.timeoutMs).toBe(86_400_000);
    expect(configRefusal({ CAIRN_GIT_TIMEOUT: '25h' })).toMatchObject({ variable: 'CAIRN_GIT_TIMEOUT' });
    expect(loadConfig({ CAIRN_GIT_PUSH_TIMEOUT: '7d' }).gitBounds.pushTimeoutMs).toBe(7 * 86_400_000);
    expect(configRefusal({ CAIRN_GIT_PUSH_TIMEOUT: '169h' })).toMatchObject({ variable: 'CAIRN_GIT_PUSH_TIMEOUT' });
    expect(loadConfig({ CAIRN_DATABASE_TIMEOUT: '10m' }).databaseTimeoutMs).toBe(600_000);
    expect(configRefusal({ CAIRN_DATABASE_TIMEOUT: '601s' })).toMatchObject({ variable: 'CAIRN_DATABASE_TIMEOUT' });
    expect(loadConfig({ CAIRN_GIT_MAINTENANCE_DELAY: '5m' }).gitMaintenanceDelayMs).toBe(300_000);
    expect(configRefusal({ CAIRN_GIT_MAINTENANCE_DELAY: '301s' })).toMatchObject({ variable: 'CAIRN_GIT_MAINTENANCE_DELAY' });
  });

  test('CAIRN_LOCK_LEASE is 3s to 1h', () => {
    expect(loadConfig({ CAIRN_LOCK_LEASE: '3s' }).lockLeaseMs).toBe(3_000);
    expect(loadConfig({ CAIRN_LOCK_LEASE: '1h' }).lockLeaseMs).toBe(3_600_000);
    expect(configRefusal({ CAIRN_LOCK_LEASE: '2999ms' })).toMatchObject({ variable: 'CAIRN_LOCK_LEASE' });
    expect(configRefusal({ CAIRN_LOCK_LEASE: '61m' })).toMatchObject({ variable: 'CAIRN_LOCK_LEASE' });
  });

  test('CAIRN_GIT_PACE_WINDOW is at least 1s', () => {
    expect(loadConfig({ CAIRN_GIT_PACE_WINDOW: '1s' }).gitPaceWindowMs).toBe(1_000);
    expect(configRefusal({ CAIRN_GIT_PACE_WINDOW: '999ms' })).toMatchObject({ variable: 'CAIRN_GIT_PACE_WINDOW' });
  });
});

describe('sizes', () => {
  const pushSize = (value: string) => loadConfig({ CAIRN_GIT_MAX_PUSH_SIZE: value }).gitMaxPushSize;

  test.each([
    ['1048576', 1_048_576],
    ['512k', 524_288],
    ['100m', 100 * 1024 ** 2],
    ['2g', 2 * 1024 ** 3],
    ['2G', 2 * 1024 ** 3],
    ['2gb', 2 * 1024 ** 3],
    ['100 MB', 100 * 1024 ** 2],
    ['1b', 1],
  ])('%j is %d bytes', (value, bytes) => {
    expect(pushSize(value)).toBe(bytes);
  });

  test.each(['0', '0k', '1.5g', '-1m', '2t', 'big', 'k'])('%j is refused', (value) => {
    expect(configRefusal({ CAIRN_GIT_MAX_PUSH_SIZE: value })).toMatchObject({ variable: 'CAIRN_GIT_MAX_PUSH_SIZE' });
  });

  test('CAIRN_PACK_CACHE is 1g by default; 0 turns the cache off; otherwise at least 1m', () => {
    expect(loadConfig({}).packCacheBytes).toBe(1024 ** 3);
    expect(loadConfig({ CAIRN_PACK_CACHE: '0' }).packCacheBytes).toBe(0);
    expect(loadConfig({ CAIRN_PACK_CACHE: '256m' }).packCacheBytes).toBe(256 * 1024 ** 2);
    expect(configRefusal({ CAIRN_PACK_CACHE: '512k' })).toMatchObject({ variable: 'CAIRN_PACK_CACHE' });
    expect(configRefusal({ CAIRN_PACK_CACHE: '-1' })).toMatchObject({ variable: 'CAIRN_PACK_CACHE' });
    expect(configRefusal({ CAIRN_PACK_CACHE: 'plenty' })).toMatchObject({ variable: 'CAIRN_PACK_CACHE' });
  });

  test('CAIRN_WEBHOOK_MEMORY is 32m by default, at least 1m', () => {
    expect(loadConfig({}).webhookMemoryBytes).toBe(32 * 1024 ** 2);
    expect(loadConfig({ CAIRN_WEBHOOK_MEMORY: '1m' }).webhookMemoryBytes).toBe(1024 ** 2);
    expect(configRefusal({ CAIRN_WEBHOOK_MEMORY: '1023k' })).toMatchObject({ variable: 'CAIRN_WEBHOOK_MEMORY' });
    expect(configRefusal({ CAIRN_WEBHOOK_MEMORY: 'lots' })).toMatchObject({ variable: 'CAIRN_WEBHOOK_MEMORY' });
  });

  test('CAIRN_GIT_MEMORY_LIMIT is at least 64m', () => {
    expect(loadConfig({ CAIRN_GIT_MEMORY_LIMIT: '64m' }).gitBounds.memoryBytes).toBe(64 * 1024 ** 2);
    expect(configRefusal({ CAIRN_GIT_MEMORY_LIMIT: '65535k' })).toMatchObject({ variable: 'CAIRN_GIT_MEMORY_LIMIT' });
  });
});

describe('other values', () => {
  test('PORT is 0-65535, digits only', () => {
    expect(loadConfig({ PORT: '0' }).port).toBe(0);
    expect(loadConfig({ PORT: '65535' }).port).toBe(65535);
    for (const port of ['65536', '-1', '80.5', '0x50', 'http']) expect(configRefusal({ PORT: port })).toMatchObject({ variable: 'PORT' });
  });

  test('rate limits are whole numbers; 0 turns a limit off', () => {
    expect(loadConfig({ CAIRN_RATE_LIMIT: '0' }).rateLimits.perHour).toBe(0);
    for (const value of ['-1', '1.5', '1e3', '1000000000']) {
      expect(configRefusal({ CAIRN_RATE_LIMIT: value })).toMatchObject({ variable: 'CAIRN_RATE_LIMIT' });
    }
  });

  test('CAIRN_GIT_ANONYMOUS_READ takes true/false, 1/0, yes/no in any case', () => {
    for (const value of ['true', 'TRUE', '1', 'yes']) expect(loadConfig({ CAIRN_GIT_ANONYMOUS_READ: value }).gitAnonymousRead).toBe(true);
    for (const value of ['false', 'False', '0', 'no']) expect(loadConfig({ CAIRN_GIT_ANONYMOUS_READ: value }).gitAnonymousRead).toBe(false);
    expect(configRefusal({ CAIRN_GIT_ANONYMOUS_READ: 'maybe' })).toMatchObject({ variable: 'CAIRN_GIT_ANONYMOUS_READ' });
  });

  test('CAIRN_BASE_URL is an absolute http(s) URL without credentials, query or fragment; a trailing slash is dropped', () => {
    expect(loadConfig({ CAIRN_BASE_URL: 'https://git.example.com/cairn/' }).baseUrl).toBe('https://git.example.com/cairn');
    expect(loadConfig({ PORT: '8080' }).baseUrl).toBe('http://localhost:8080');
    for (const url of ['ftp://x', 'git.example.com', 'https://u:p@x', 'https://x/?a=1', 'https://x/#f']) {
      expect(configRefusal({ CAIRN_BASE_URL: url })).toMatchObject({ variable: 'CAIRN_BASE_URL' });
    }
  });

  test('CAIRN_SECRET_KEY is at least 32 characters; base64: must be 32 bytes', () => {
    expect(configRefusal({ CAIRN_SECRET_KEY: 'x'.repeat(31) })).toMatchObject({ variable: 'CAIRN_SECRET_KEY' });
    expect(loadConfig({ CAIRN_SECRET_KEY: 'x'.repeat(32) }).secretKey).toBe('x'.repeat(32));
    expect(loadConfig({ CAIRN_SECRET_KEY: `base64:${Buffer.alloc(32, 7).toString('base64')}` }).secretKey).toMatch(/^base64:/);
    expect(configRefusal({ CAIRN_SECRET_KEY: `base64:${Buffer.alloc(33, 7).toString('base64')}` })).toMatchObject({
      variable: 'CAIRN_SECRET_KEY',
    });
  });

  test('the message names the variable and the value', () => {
    const error = configRefusal({ CAIRN_WEBHOOK_TIMEOUT: 'soon' });
    expect(error).toBeInstanceOf(ConfigError);
    expect(error!.message).toMatch(/^CAIRN_WEBHOOK_TIMEOUT: .*"soon"/);
  });
});
