import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from '../logger.js';

/**
 * The slowest pace a git client may keep while the server waits on it: 1 KiB/s, averaged over a
 * window (CAIRN_GIT_PACE_WINDOW, 30 s by default). Dial-up moves 5 KiB/s and a poor mobile link
 * far more, and a 30 s window rides out a stall or a handover; a client below this for a whole window
 * is not on a slow network but holding what its request holds (a fetch slot and its git, a push's
 * repository lock, a connection) by fault or on purpose.
 */
const MIN_BYTES_PER_SECOND = 1024;
const TICK_MS = 1000;

/**
 * Bytes one direction of a connection moved, judged only over time the server spent waiting on the
 * client: between two ticks that both found it waiting. What moves outside that — a response filling
 * the socket buffers before it blocks, a request git or the disk holds back — is not the client's pace.
 */
class Gauge {
  private waitedMs = 0;
  private bytes = 0;
  private last: number;
  private wasWaiting = false;

  constructor(
    private readonly moved: () => number,
    private readonly waitingOnClient: () => boolean,
  ) {
    this.last = moved();
  }

  /** True when a window of waiting just completed with less than the floor moved. */
  tooSlowAfter(ms: number, windowMs: number): boolean {
    const moved = this.moved();
    const waiting = this.waitingOnClient();
    if (waiting && this.wasWaiting) {
      this.waitedMs += ms;
      this.bytes += moved - this.last;
    }
    this.last = moved;
    this.wasWaiting = waiting;
    if (this.waitedMs < windowMs) return false;
    const tooSlow = this.bytes < (MIN_BYTES_PER_SECOND * windowMs) / 1000;
    this.waitedMs = 0;
    this.bytes = 0;
    return tooSlow;
  }
}

const paces = new WeakMap<IncomingMessage, ClientPace>();
const watched = new Set<ClientPace>();
let ticker: NodeJS.Timeout | null = null;
let lastTick = 0;

function tick(): void {
  const now = performance.now();
  // A stalled event loop read nothing either: never blame a client for more than two ticks at once.
  const elapsed = Math.min(now - lastTick, 2 * TICK_MS);
  lastTick = now;
  for (const pace of watched) pace.tick(elapsed);
}

/**
 * Watches one git request's pace in both directions, from the connection's own byte counts:
 * - the request body, while someone reads it and it is not all in (not while git or the disk holds
 *   it back): too slow, and whoever reads it is told (`onSlowRequest`) — it answers 408 when it still
 *   can; with nobody told, the connection is dropped;
 * - the response, while output waits on the client (the response is backpressured): too slow, and
 *   the connection is reset, which stops a fetch's git and frees its slot.
 */
export class ClientPace {
  private readonly request: Gauge;
  private readonly response: Gauge;
  private slowRequest: (() => void) | null = null;
  private requestCut = false;

  private constructor(
    private readonly req: IncomingMessage,
    private readonly res: ServerResponse,
    private readonly windowMs: number,
    private readonly log: Logger,
  ) {
    const socket = req.socket;
    this.request = new Gauge(
      () => socket.bytesRead,
      () => req.readableFlowing === true && !req.complete,
    );
    this.response = new Gauge(
      () => socket.bytesWritten,
      () => res.writableNeedDrain,
    );
  }

  /** Starts watching a request until its response closes. */
  static watch(req: IncomingMessage, res: ServerResponse, windowMs: number, log: Logger): ClientPace {
    const pace = new ClientPace(req, res, windowMs, log);
    paces.set(req, pace);
    watched.add(pace);
    if (!ticker) {
      lastTick = performance.now();
      ticker = setInterval(tick, TICK_MS);
      ticker.unref();
    }
    res.once('close', () => pace.stop());
    return pace;
  }

  /** The pace watched for this request, if any. */
  static of(req: IncomingMessage): ClientPace | undefined {
    return paces.get(req);
  }

  /** Who cuts off a request body that comes in too slowly (the reader of the body, which knows how to stop). */
  onSlowRequest(handler: () => void): void {
    this.slowRequest = handler;
  }

  /** The floor in words, for messages. */
  get floor(): string {
    return `${MIN_BYTES_PER_SECOND / 1024} KiB/s for ${Math.round(this.windowMs / 1000)} s`;
  }

  tick(elapsedMs: number): void {
    if (!this.requestCut && this.request.tooSlowAfter(elapsedMs, this.windowMs)) {
      this.requestCut = true;
      this.cutOff('request');
      if (this.slowRequest) this.slowRequest();
      else this.req.destroy();
    }
    if (this.response.tooSlowAfter(elapsedMs, this.windowMs)) {
      this.cutOff('response');
      // A reset, not a close: the output still queued for this client is dropped at once instead of
      // lingering in kernel buffers while the client takes its time; the client learns of it on its next read.
      if (this.res.socket) this.res.socket.resetAndDestroy();
      else this.res.destroy();
      this.stop();
    }
  }

  private cutOff(direction: 'request' | 'response'): void {
    this.log.info(
      { path: this.req.url?.split('?')[0], direction, windowMs: this.windowMs, minBytesPerSecond: MIN_BYTES_PER_SECOND },
      'git client too slow: cut off',
    );
  }

  private stop(): void {
    watched.delete(this);
    if (!watched.size && ticker) {
      clearInterval(ticker);
      ticker = null;
    }
  }
}
