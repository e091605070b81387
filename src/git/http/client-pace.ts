import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Logger } from '../../logger.js';
import { drained, handedToKernel } from './tcp-queue.js';

/**
 * The slowest pace a git client may keep while the server waits on it: 1 KiB/s, averaged over a
 * window (CAIRN_GIT_PACE_WINDOW, 30 s by default). Dial-up moves 5 KiB/s and a poor mobile link
 * far more, and a 30 s window rides out a stall or a handover; a client below this for a whole window
 * is not on a slow network but holding what its request holds (a fetch slot and its git, a push's
 * repository lock, a connection) by fault or on purpose.
 */
const MIN_BYTES_PER_SECOND = 1024;
const TICK_MS = 1000;
/** The kernel is asked what clients drained (tcp-queue.ts) at most this often: it costs a walk of every socket. */
const KERNEL_EVERY_MS = 5000;

/**
 * Bytes one direction of a connection moved, judged only over time the server spent waiting on the
 * client: between two ticks that both found it waiting. What moves outside that — a response filling
 * the socket buffers before it blocks, a request git or the disk holds back — is not the client's pace.
 */
class Gauge {
  private waitedMs = 0;
  private bytes = 0;
  private last = 0;
  private wasWaiting = false;

  /** `moved`: the direction's running count of bytes; true when a window of waiting just completed with less than the floor. */
  tooSlowAfter(elapsedMs: number, windowMs: number, waiting: boolean, moved: number): boolean {
    if (waiting && this.wasWaiting) {
      this.waitedMs += elapsedMs;
      this.bytes += Math.max(0, moved - this.last);
    }
    this.last = moved;
    this.wasWaiting = waiting;
    if (this.waitedMs < windowMs) return false;
    const tooSlow = this.bytes < (MIN_BYTES_PER_SECOND * windowMs) / 1000;
    this.reset();
    return tooSlow;
  }

  reset(): void {
    this.waitedMs = 0;
    this.bytes = 0;
    this.wasWaiting = false;
  }
}

const paces = new WeakMap<IncomingMessage, ClientPace>();
const watched = new Set<ClientPace>();
let ticker: NodeJS.Timeout | null = null;
let lastTick = 0;
let lastKernelRead = -Infinity;
let ticking = false;

async function tick(): Promise<void> {
  if (ticking) return;
  ticking = true;
  try {
    const now = performance.now();
    // A stalled event loop read nothing either: never blame a client for more than two ticks at once.
    const elapsed = Math.min(now - lastTick, 2 * TICK_MS);
    lastTick = now;
    let kernel: Map<Socket, number> | null = null;
    const asking = [...watched].filter((pace) => pace.wantsKernel(now));
    if (asking.length && now - lastKernelRead >= Math.min(KERNEL_EVERY_MS, ...asking.map((pace) => pace.windowMs / 5))) {
      lastKernelRead = now;
      kernel = await drained(asking.map((pace) => pace.socket));
    }
    for (const pace of watched) pace.tick(elapsed, now, kernel);
  } finally {
    ticking = false;
  }
}

/**
 * Watches one git request's pace in both directions:
 * - the request body (bytes read from the connection), while someone reads it and it is not all in
 *   (not while git or the disk holds it back): too slow, and whoever reads it is told
 *   (`onSlowRequest`) — it answers 408 when it still can; with nobody told, the connection is dropped;
 * - the response, while output waits on the client (the response is backpressured): first by what
 *   Node hands to the kernel, which costs nothing but lags behind a client when the kernel's send
 *   buffer is large; a window under the floor there is checked over one more window against what the
 *   client acknowledged (tcp-queue.ts). Still too slow, and the connection is reset, which stops a
 *   fetch's git and frees its slot.
 */
export class ClientPace {
  readonly socket: Socket;
  private readonly request = new Gauge();
  private readonly response = new Gauge();
  private slowRequest: (() => void) | null = null;
  private requestCut = false;
  /** A response under the floor by the cheap measure, being checked against the kernel's (from: drained then, at: when). */
  private checking: { from: number; at: number } | 'starting' | null = null;

  private constructor(
    private readonly req: IncomingMessage,
    private readonly res: ServerResponse,
    readonly windowMs: number,
    private readonly log: Logger,
  ) {
    this.socket = req.socket;
  }

  /** Starts watching a request until its response closes. */
  static watch(req: IncomingMessage, res: ServerResponse, windowMs: number, log: Logger): ClientPace {
    const pace = new ClientPace(req, res, windowMs, log);
    paces.set(req, pace);
    watched.add(pace);
    if (!ticker) {
      lastTick = performance.now();
      ticker = setInterval(() => void tick().catch((error: unknown) => log.error({ err: error }, 'git client pace check failed')), TICK_MS);
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

  /**
   * Whether output waits for the client: some of it not yet taken by the kernel. (Not only when the
   * response is past its high-water mark: git's output is relayed a chunk at a time, each read only
   * once the last is written, so what waits may be less.)
   */
  private get waitingOnClient(): boolean {
    return this.res.writableNeedDrain || (!this.res.writableEnded && this.socket.writableLength > 0);
  }

  /** Whether this tick needs what the client drained: to start checking, or to end a check a window long. */
  wantsKernel(now: number): boolean {
    if (!this.checking || !this.waitingOnClient) return false;
    return this.checking === 'starting' || now - this.checking.at >= this.windowMs;
  }

  /** `kernel`: what clients had drained, when it was read this tick. */
  tick(elapsedMs: number, now: number, kernel: Map<Socket, number> | null): void {
    const receiving = this.req.readableFlowing === true && !this.req.complete;
    if (!this.requestCut && this.request.tooSlowAfter(elapsedMs, this.windowMs, receiving, this.socket.bytesRead)) {
      this.requestCut = true;
      this.cutOff('request');
      if (this.slowRequest) this.slowRequest();
      else this.req.destroy();
    }
    const waiting = this.waitingOnClient;
    if (!this.checking) {
      if (this.response.tooSlowAfter(elapsedMs, this.windowMs, waiting, handedToKernel(this.socket))) this.checking = 'starting';
      return;
    }
    if (!waiting) {
      this.checking = null; // it caught up with the output
      this.response.reset();
      return;
    }
    const drainedNow = kernel?.get(this.socket);
    if (drainedNow === undefined) return;
    if (this.checking === 'starting') {
      this.checking = { from: drainedNow, at: now };
      return;
    }
    const rate = (drainedNow - this.checking.from) / ((now - this.checking.at) / 1000);
    this.checking = null;
    this.response.reset();
    if (rate >= MIN_BYTES_PER_SECOND) return;
    this.cutOff('response');
    // A reset, not a close: the output still queued for this client is dropped at once instead of
    // lingering in kernel buffers while the client takes its time; the client learns of it on its next read.
    try {
      this.socket.resetAndDestroy();
    } catch {
      this.socket.destroy(); // not a plain TCP socket
    }
    this.stop();
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
