import { AdaptiveConcurrency } from '../../src/webhooks/adaptive-concurrency.js';

/**
 * The per-webhook window (README, "Adaptive, and on schedule"): a drain starts at 2, grows while
 * answers are 2xx within a second, up to 64, and halves on a slower answer, a failure or a
 * timeout, down to 1. Answers to requests sent before the last decrease do not halve it again.
 */
const QUICK = 1_000;

function answerQuickly(window: AdaptiveConcurrency, times: number): void {
  for (let i = 0; i < times; i++) window.answered(window.sent(), true, 5);
}

describe('AdaptiveConcurrency', () => {
  test('starts at its initial window, never above the maximum', () => {
    expect(new AdaptiveConcurrency(2, 64).limit).toBe(2);
    expect(new AdaptiveConcurrency(100, 64).limit).toBe(64);
    expect(new AdaptiveConcurrency(1, 1).limit).toBe(1);
  });

  test('slow start: each quick 2xx adds one, up to the maximum and no further', () => {
    const window = new AdaptiveConcurrency(2, 64);
    answerQuickly(window, 1);
    expect(window.limit).toBe(3);
    answerQuickly(window, 61);
    expect(window.limit).toBe(64);
    answerQuickly(window, 100);
    expect(window.limit).toBe(64);
  });

  test('a 2xx within exactly one second is quick; one millisecond more is slow and halves the window', () => {
    const window = new AdaptiveConcurrency(8, 64);
    window.answered(window.sent(), true, QUICK);
    expect(window.limit).toBe(9);

    const slow = new AdaptiveConcurrency(8, 64);
    slow.answered(slow.sent(), true, QUICK + 1);
    expect(slow.limit).toBe(4);
  });

  test('a failure halves the window however fast it came', () => {
    const window = new AdaptiveConcurrency(16, 64);
    window.answered(window.sent(), false, 1);
    expect(window.limit).toBe(8);
  });

  test('halving stops at one request at a time', () => {
    const window = new AdaptiveConcurrency(64, 64);
    for (let i = 0; i < 20; i++) window.answered(window.sent(), false, 10_000);
    expect(window.limit).toBe(1);
  });

  test('answers to requests sent before the last decrease do not halve it again', () => {
    const window = new AdaptiveConcurrency(64, 64);
    const epochs = Array.from({ length: 64 }, () => window.sent());
    for (const epoch of epochs) window.answered(epoch, false, 10_000); // one window that all timed out together
    expect(window.limit).toBe(32);
    window.answered(window.sent(), false, 10_000); // sent after the decrease: a new signal
    expect(window.limit).toBe(16);
  });

  test('after a decrease the window grows additively: about one per window of quick answers', () => {
    const window = new AdaptiveConcurrency(64, 64);
    window.answered(window.sent(), false, 1);
    expect(window.limit).toBe(32);
    answerQuickly(window, 31);
    expect(window.limit).toBe(32); // 31 × 1/32 is not yet one more
    answerQuickly(window, 2);
    expect(window.limit).toBe(33);
  });

  test('from one request at a time it recovers, and never passes the maximum', () => {
    const window = new AdaptiveConcurrency(4, 4);
    for (let i = 0; i < 5; i++) window.answered(window.sent(), false, 1);
    expect(window.limit).toBe(1);
    answerQuickly(window, 1_000);
    expect(window.limit).toBe(4);
  });

  test('the limit is always a whole number of at least one', () => {
    const window = new AdaptiveConcurrency(3, 64);
    for (let i = 0; i < 200; i++) {
      window.answered(window.sent(), i % 7 !== 0, i % 5 === 0 ? 2_000 : 10);
      expect(Number.isInteger(window.limit)).toBe(true);
      expect(window.limit).toBeGreaterThanOrEqual(1);
      expect(window.limit).toBeLessThanOrEqual(64);
    }
  });
});
