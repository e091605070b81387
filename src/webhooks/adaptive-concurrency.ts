/** An answer within this time, with a 2xx, is quick: the receiver keeps up and may get more at once. */
const QUICK_ANSWER_MS = 1_000;

/**
 * How many requests one webhook may have on the wire at once in one process:
 * additive increase, multiplicative decrease, as TCP's congestion window.
 * A quick success grows the window — by one while under the threshold the
 * last decrease left (it doubles every round trip, so a fast receiver is
 * sent its backlog in parallel within a few milliseconds), by 1/window above
 * it — up to `max`. A slow answer, a failure or a timeout halves it, down to
 * 1: a receiver that answers slowly or not at all is sent one request at a
 * time. Answers to requests sent before the last decrease do not halve it
 * again (the requests of one window that all time out together are one
 * signal, as losses within one round trip are for TCP).
 */
export class AdaptiveConcurrency {
  private window: number;
  private threshold: number;
  /** Counts decreases; a request carries the epoch it was sent in. */
  private epoch = 0;

  constructor(
    initial: number,
    private readonly max: number,
  ) {
    this.window = Math.min(initial, max);
    this.threshold = max;
  }

  /** Requests that may be on the wire at once now. */
  get limit(): number {
    return Math.max(1, Math.floor(this.window));
  }

  /** A request is sent: what `answered` needs to know when its answer comes. */
  sent(): number {
    return this.epoch;
  }

  /** The answer to a request sent in `epoch`: `ok` (a 2xx) after `durationMs`. */
  answered(epoch: number, ok: boolean, durationMs: number): void {
    if (ok && durationMs <= QUICK_ANSWER_MS) {
      this.window = Math.min(this.max, this.window + (this.window < this.threshold ? 1 : 1 / this.window));
    } else if (epoch === this.epoch) {
      this.window = Math.max(1, this.window / 2);
      this.threshold = Math.max(1, this.window);
      this.epoch++;
    }
  }
}
