import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { GitOutcome, Metrics } from '../../http/metrics.js';
import type { GitService, ServiceRun } from './transport.js';

/**
 * How far each connection's reads were counted: a request's bytes in are what its connection read
 * since the last git request on it ended (its headers included). Where the body starts cannot be
 * told from the request: the parser may have read all of a small one with the headers.
 */
const countedReads = new WeakMap<Socket, number>();

/** How a fetch or push ended, as the dashboard groups them. */
export type { GitOutcome };

/**
 * The measure of one git request, recorded once when its response closes: its bytes on the wire,
 * headers included (from the connection's own counts, so nothing is added to the data path) and, for a fetch or a
 * push, its outcome and duration. The advertisement (`info/refs`) counts as a fetch or a push only
 * when it refuses one: otherwise it is the first half of the exchange that follows it.
 */
export class GitExchange {
  private outcome: GitOutcome | null = null;
  private counted = true;
  private readonly started = performance.now();
  private readonly wroteFrom: number;

  constructor(
    private readonly metrics: Metrics,
    private readonly service: GitService,
    /** An exchange (`POST git-<service>`) rather than the advertisement. */
    private readonly exchange: boolean,
    req: IncomingMessage,
    res: ServerResponse,
  ) {
    this.wroteFrom = req.socket.bytesWritten;
    res.once('close', () => this.record(req, res));
  }

  /** Not a fetch or a push after all: a credential challenge git answers by retrying, or a v2 `ls-refs`. */
  uncounted(): void {
    this.counted = false;
  }

  /** The outcome of a request answered without git (a refusal), or of git's run. */
  ended(outcome: GitOutcome): void {
    this.outcome ??= outcome;
  }

  /** The outcome of git's run: its exit, or the request body git could not have. */
  ran(run: ServiceRun): void {
    if (run.bodyError) this.ended('refused');
    else if (run.code === 0) this.ended('ok');
    else if (run.signal === 'SIGTERM')
      this.ended('aborted'); // killed because the client left
    else this.ended('failed');
  }

  private record(req: IncomingMessage, res: ServerResponse): void {
    const socket = req.socket;
    const read = socket.bytesRead;
    this.metrics.gitBytes.inc({ service: this.service, direction: 'in' }, Math.max(0, read - (countedReads.get(socket) ?? 0)));
    countedReads.set(socket, read);
    this.metrics.gitBytes.inc({ service: this.service, direction: 'out' }, Math.max(0, socket.bytesWritten - this.wroteFrom));
    // A 5xx is ours whatever git did (a push whose events could not be recorded).
    let outcome = res.statusCode >= 500 ? 'failed' : (this.outcome ?? (res.statusCode >= 400 ? 'refused' : 'ok'));
    if (outcome === 'ok' && !res.writableFinished) outcome = 'aborted';
    if (!this.counted || (!this.exchange && (outcome === 'ok' || outcome === 'aborted'))) return;
    this.metrics.gitRequests.inc({ service: this.service, outcome });
    if (this.exchange) this.metrics.gitDuration.observe({ service: this.service }, (performance.now() - this.started) / 1000);
  }
}
