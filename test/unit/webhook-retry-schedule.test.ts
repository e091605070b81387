import { loadConfig, type Config } from '../../src/config.js';
import { finishAttempt, type AttemptFacts, type ClaimedDelivery } from '../../src/webhooks/retry-policy.js';
import type { AttemptOutcome } from '../../src/webhooks/http-sender.js';
import { configRefusal } from './config-refusal.js';

/**
 * The retry schedule (README, "Success" and the CAIRN_WEBHOOK_RETRY_DELAYS row): a failure is
 * retried after each delay of CAIRN_WEBHOOK_RETRY_DELAYS (10 s, 60 s, 300 s by default), counted
 * from the failure; its length is the number of retries; after the last the delivery is `failed`.
 * There is no jitter: the delay is exactly the configured one.
 */
const DEFAULT_DELAYS = [10_000, 60_000, 300_000];

const ok: AttemptOutcome = { ok: true, statusCode: 200, error: null, durationMs: 12, response: null };
const failed: AttemptOutcome = { ok: false, statusCode: 500, error: null, durationMs: 12, response: null };
const timedOut: AttemptOutcome = { ok: false, statusCode: null, error: 'timeout', durationMs: 10_000, response: null };

function delivery(overrides: Partial<ClaimedDelivery> = {}): ClaimedDelivery {
  return {
    id: '00000000-0000-4000-8000-000000000001',
    event: 'push',
    body: '{}',
    series: 0,
    series_attempts: 0,
    attempts_count: 0,
    created_at: new Date(0),
    ...overrides,
  };
}

function facts(outcome: AttemptOutcome, retryDelaysMs = DEFAULT_DELAYS): AttemptFacts {
  return { url: 'https://hooks.example.com/x', headers: { 'x-a': 'b' }, startedAt: new Date(1_000), outcome, retryDelaysMs };
}

/** finishAttempt, with the retry delay it chose measured against the clock around the call. */
function finish(claimed: ClaimedDelivery, attemptFacts: AttemptFacts) {
  const before = Date.now();
  const result = finishAttempt(claimed, attemptFacts);
  const after = Date.now();
  return { result, before, after };
}

function expectRetryAfter(claimed: ClaimedDelivery, outcome: AttemptOutcome, delayMs: number, delays = DEFAULT_DELAYS) {
  const { result, before, after } = finish(claimed, facts(outcome, delays));
  expect(result.status).toBe('pending');
  expect(result.completedAt).toBeNull();
  expect(result.retryAt).toBeInstanceOf(Date);
  // Counted from the failure (now), exactly the configured delay: no jitter, no backoff on top.
  expect(result.retryAt!.getTime()).toBeGreaterThanOrEqual(before + delayMs);
  expect(result.retryAt!.getTime()).toBeLessThanOrEqual(after + delayMs);
  return result;
}

describe('finishAttempt: what follows an attempt', () => {
  test('a success ends the delivery at once, with no retry', () => {
    const { result, before, after } = finish(delivery(), facts(ok));
    expect(result.status).toBe('succeeded');
    expect(result.retryAt).toBeNull();
    expect(result.completedAt!.getTime()).toBeGreaterThanOrEqual(before);
    expect(result.completedAt!.getTime()).toBeLessThanOrEqual(after);
  });

  test('a success on the last retry still succeeds', () => {
    expect(finishAttempt(delivery({ series_attempts: 3, attempts_count: 3 }), facts(ok)).status).toBe('succeeded');
  });

  test('the first failure is retried after the first delay (10 s by default)', () => {
    expectRetryAfter(delivery(), failed, 10_000);
  });

  test('each later failure waits for the next delay of the schedule', () => {
    expectRetryAfter(delivery({ series_attempts: 1, attempts_count: 1 }), failed, 60_000);
    expectRetryAfter(delivery({ series_attempts: 2, attempts_count: 2 }), timedOut, 300_000);
  });

  test('the schedule length is the number of retries: the failure after the last retry fails the delivery', () => {
    const { result, before, after } = finish(delivery({ series_attempts: 3, attempts_count: 3 }), facts(failed));
    expect(result.status).toBe('failed');
    expect(result.retryAt).toBeNull();
    expect(result.completedAt!.getTime()).toBeGreaterThanOrEqual(before);
    expect(result.completedAt!.getTime()).toBeLessThanOrEqual(after);
  });

  test('with no retries configured the first failure is final', () => {
    const result = finishAttempt(delivery(), facts(failed, []));
    expect(result.status).toBe('failed');
    expect(result.retryAt).toBeNull();
  });

  test('a custom schedule is followed as given, not sorted, capped or backed off', () => {
    const delays = [5_000, 1_000, 86_400_000];
    expectRetryAfter(delivery(), failed, 5_000, delays);
    expectRetryAfter(delivery({ series_attempts: 1, attempts_count: 1 }), failed, 1_000, delays);
    expectRetryAfter(delivery({ series_attempts: 2, attempts_count: 2 }), failed, 86_400_000, delays);
    expect(finishAttempt(delivery({ series_attempts: 3, attempts_count: 3 }), facts(failed, delays)).status).toBe('failed');
  });

  test('triggers: the first attempt is initial, later ones of a series are retries, a new series is a redelivery', () => {
    expect(finishAttempt(delivery(), facts(failed)).trigger).toBe('initial');
    expect(finishAttempt(delivery({ series_attempts: 1, attempts_count: 1 }), facts(failed)).trigger).toBe('retry');
    expect(finishAttempt(delivery({ series: 1, series_attempts: 0, attempts_count: 4 }), facts(failed)).trigger).toBe('redelivery');
    expect(finishAttempt(delivery({ series: 1, series_attempts: 1, attempts_count: 5 }), facts(failed)).trigger).toBe('retry');
  });

  test('a redelivery starts the schedule again: its failure waits for the first delay', () => {
    const result = expectRetryAfter(delivery({ series: 1, series_attempts: 0, attempts_count: 4 }), failed, 10_000);
    expect(result.number).toBe(5); // attempt numbers keep counting across series
  });

  test('the attempt row carries what was sent and its number in the delivery', () => {
    const claimed = delivery({ attempts_count: 2, series_attempts: 2 });
    const result = finishAttempt(claimed, facts(timedOut));
    expect(result).toMatchObject({
      deliveryId: claimed.id,
      number: 3,
      startedAt: new Date(1_000),
      outcome: timedOut,
      url: 'https://hooks.example.com/x',
      headers: { 'x-a': 'b' },
    });
  });
});

describe('CAIRN_WEBHOOK_RETRY_DELAYS', () => {
  const delays = (value?: string): number[] =>
    loadConfig(value === undefined ? {} : { CAIRN_WEBHOOK_RETRY_DELAYS: value }).webhookRetryDelaysMs;
  const refusal = (value: string) => configRefusal({ CAIRN_WEBHOOK_RETRY_DELAYS: value });

  test('defaults to 10s, 60s, 300s (three retries)', () => {
    expect(delays()).toEqual(DEFAULT_DELAYS);
    expect(delays('')).toEqual(DEFAULT_DELAYS);
    expect(delays('   ')).toEqual(DEFAULT_DELAYS);
  });

  test('a comma list of durations, spaces allowed around each', () => {
    expect(delays('2s, 4s ,8s')).toEqual([2_000, 4_000, 8_000]);
    expect(delays('250ms')).toEqual([250]);
    expect(delays('1.5s,1m,1h,1d')).toEqual([1_500, 60_000, 3_600_000, 86_400_000]);
  });

  test('at most 20 retries', () => {
    expect(delays(Array(20).fill('1s').join(','))).toHaveLength(20);
    expect(refusal(Array(21).fill('1s').join(','))).toMatchObject({ name: 'ConfigError', variable: 'CAIRN_WEBHOOK_RETRY_DELAYS' });
  });

  test.each(['0s', '10', '1s,,2s', '1s,', '-1s', '1e3ms', 'soon', '0.0001s'])('%j is refused, naming the variable', (value) => {
    expect(refusal(value)).toMatchObject({ name: 'ConfigError', variable: 'CAIRN_WEBHOOK_RETRY_DELAYS' });
  });

  test('the configured delays are what the schedule follows', () => {
    const config: Config = loadConfig({ CAIRN_WEBHOOK_RETRY_DELAYS: '2s,4s' });
    expectRetryAfter(delivery(), failed, 2_000, config.webhookRetryDelaysMs);
    expectRetryAfter(delivery({ series_attempts: 1, attempts_count: 1 }), failed, 4_000, config.webhookRetryDelaysMs);
    expect(finishAttempt(delivery({ series_attempts: 2, attempts_count: 2 }), facts(failed, config.webhookRetryDelaysMs)).status).toBe(
      'failed',
    );
  });
});
