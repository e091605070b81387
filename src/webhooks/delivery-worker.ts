import type { MikroORM } from '@mikro-orm/postgresql';
import type { Agenda, Job } from 'agenda';
import type { DeliveryOutcome, Metrics } from '../http/metrics.js';
import type { Logger } from '../logger.js';
import { AdaptiveConcurrency } from './adaptive-concurrency.js';
import { isNoSpace } from '../errors/no-space.js';
import { isUnavailable } from '../errors/unavailable.js';
import { finishAttempt, type ClaimedDelivery, type FinishedAttempt } from './retry-policy.js';
import { AttemptRecorder } from './attempt-recorder.js';
import { claimDue } from './delivery-queue.js';
import { AttemptTrigger } from './delivery.entity.js';
import type { AttemptOutcome, HttpSender } from './http-sender.js';
import type { SecretBox } from './secret-box.js';
import { signatureHeader } from './signature.js';
import type { WebhookHealth } from './webhook-health.js';

export const DELIVER_JOB = 'webhook:deliver';

export interface WorkerSettings {
  timeoutMs: number;
  retryDelaysMs: number[];
  /** Requests on the wire at most for one webhook in one process, however quickly its receiver answers. */
  maxPerWebhookConcurrency: number;
  /** Attempts in flight at once in one process, all webhooks together (sent or being recorded): bounds sockets. */
  processConcurrency: number;
  /** Request bodies those attempts hold at once (CAIRN_WEBHOOK_MEMORY): bounds memory, whatever the bodies' size. */
  memoryBytes: number;
  /** CAIRN_DATABASE_TIMEOUT: how long after its deadline a statement the database did not answer may still land. */
  databaseTimeoutMs: number;
  userAgent: string;
}

/** A drain's window starts here, and grows as quick answers come. */
const INITIAL_WINDOW = 2;
/**
 * The longest a full window holds due deliveries back: past it, whatever is due is sent whatever the
 * window (up to `maxPerWebhookConcurrency` on the wire). The window paces a burst; it does not make a
 * receiver that never answers wait its timeouts, nor push a first attempt past a second after its
 * event (at most this, plus a claim).
 */
const OVERDUE_MS = 500;
/** While a webhook succeeds, its `last_response` is written at most this often. */
const SUCCESS_WRITE_EVERY_MS = 1_000;
/** A drain re-checks for due work at least this often, whatever wake-up it may have missed. */
const IDLE_CHECK_MS = 5_000;
/** Pause before a drain retries a claim that failed (the database busy or briefly away). */
const CLAIM_RETRY_MS = 1_000;
/** Pause before recording an attempt again, while the database is away or its disk full. */
const RECORD_RETRY_MS = 1_000;
/** Recording stops trying this long before the claim's lease lapses. */
const RECORD_MARGIN_MS = 5_000;
/** Webhooks whose state (failing or not) a process remembers once their drain has ended. */
const LAST_SEEN_WEBHOOKS = 10_000;
/** Retries are woken at the end of their RETRY_TIMER_MS slot: the claim takes what is due within 100 ms. */
const RETRY_TIMER_MS = 100;

/** A delivery as claimed, with its webhook's URL and secret as they were at the claim. */
interface Claim extends ClaimedDelivery {
  url: string;
  /** Its body's size in UTF-8: what it counts against the process's `memoryBytes` while in flight. */
  bytes: number;
  /** Null when the stored secret cannot be decrypted (CAIRN_SECRET_KEY changed): the attempt fails unsent. */
  secret: string | null;
}

/** A webhook being drained in this process. */
interface Drain {
  webhookId: string;
  /** New deliveries were announced since the last claim. */
  poked: boolean;
  /** The last claim took all it asked for: more may be due. */
  mayHaveMore: boolean;
  /** Requests on the wire: bounded by the window. */
  sending: number;
  /** Claimed and not yet recorded: sending, or answered and waiting to be recorded. */
  inflight: number;
  /** Whether its latest attempt failed; null until its first claim reads it. */
  failing: boolean | null;
  /** Its last claim left due deliveries whose bodies did not fit: it claims again once its share has more room. */
  waitsForBytes: boolean;
  /** The room its share had left when its next body did not fit (while `waitsForBytes`). */
  roomSeen: number;
  /** When the window, full with work waiting, stops holding that work back (OVERDUE_MS after it filled). */
  overdueAt: number | null;
  window: AdaptiveConcurrency;
  lastSuccessWrite: number;
  wakeUp: (() => void) | null;
}

/**
 * Runs webhook deliveries. A drain sends one webhook's due deliveries: it
 * claims only as many as it can start at once (SKIP LOCKED, with a lease a
 * crashed worker's claims outlive only briefly), keeps at most its window of
 * requests on the wire — adaptive (`AdaptiveConcurrency`): it grows while the
 * receiver answers quickly, up to `maxPerWebhookConcurrency`, and halves on a
 * slow answer or a failure — and at most `processConcurrency` attempts in
 * flight across all webhooks.
 *
 * The window paces; it does not hold deliveries back past their time. A
 * receiver that never answers would otherwise get one request per timeout
 * and fall ever further behind the retry schedule. So a failing webhook (its
 * latest attempt failed) is sent whatever is due, and once a webhook's full
 * window has held due deliveries back for OVERDUE_MS they go whatever the window — both up to
 * `maxPerWebhookConcurrency` on the wire. Failing webhooks together hold at
 * most half of `processConcurrency`, so receivers that hang never keep
 * healthy webhooks waiting for room.
 * Because a claim starts at once and reads the webhook's URL, secret and
 * `active` in the same statement, a webhook deactivated, deleted, disabled or
 * re-pointed is never sent a delivery claimed before the change: only
 * attempts already in flight finish.
 *
 * What each delivery costs is shared: a claim takes a batch (a drain claims
 * once a quarter of its window is free, not at each answer), and attempts
 * are recorded a batch per statement (`AttemptRecorder`) while the drain
 * goes on sending. A delivery stays claimed until its attempt is recorded,
 * so one answered but not yet recorded is not sent again meanwhile, and one
 * claimed by a process that dies is claimed again once its lease lapses.
 *
 * Wake-ups: the process that commits new deliveries starts or pokes its own
 * drain at once (no job-store round trip, no polling interval, whichever
 * Agenda backend). Agenda runs what must survive this process: retries,
 * scheduled at their time as `webhook:deliver` jobs, and the periodic sweep
 * for anything a crash left due; either hands the webhook to a drain of the
 * process that runs it. A drain is not itself a job, so receivers that hang
 * hold sockets, never job slots.
 *
 * What limits a drain to one fast receiver, once claims and records are
 * batched, is this process's CPU (node's HTTP client most of all): the
 * database sees a fraction of a statement per delivery (`npm run
 * bench:webhooks` measures it).
 */
export class DeliveryWorker {
  private readonly drains = new Map<string, Drain>();
  private readonly loops = new Set<Promise<void>>();
  private readonly attempts = new Set<Promise<void>>();
  /** Drains that have work but wait for the process-wide limit. */
  private readonly waitingForRoom = new Set<Drain>();
  private readonly timers = new Map<string, NodeJS.Timeout>();
  private readonly recorder: AttemptRecorder;
  private inflight = 0;
  /** Attempts in flight for failing webhooks, all together: at most `failingShare`. */
  private failingInflight = 0;
  private readonly failingShare: number;
  /** Body bytes of the attempts in flight (and of claims running), all webhooks together and failing ones alone. */
  private inflightBytes = 0;
  private failingInflightBytes = 0;
  private readonly failingShareBytes: number;
  /**
   * Per share (webhooks known to be healthy; the others), the drain whose due bodies did not fit the
   * room left: until it has claimed them, no other drain of its share claims (`bytesFor`).
   */
  private readonly heldForBytes: { healthy: Drain | null; failing: Drain | null } = { healthy: null, failing: null };
  /** Whether each webhook's latest attempt failed, as its last drain here saw it: a new drain starts from it. */
  private readonly lastSeenFailing = new Map<string, boolean>();
  private stopping = false;

  constructor(
    private readonly orm: MikroORM,
    private readonly agenda: Agenda,
    private readonly sender: HttpSender,
    private readonly box: SecretBox,
    private readonly settings: WorkerSettings,
    private readonly health: WebhookHealth,
    private readonly log: Logger,
    private readonly metrics: Metrics,
  ) {
    this.recorder = new AttemptRecorder(orm, log);
    this.failingShare = Math.floor(settings.processConcurrency / 2);
    this.failingShareBytes = Math.floor(settings.memoryBytes / 2);
  }

  /** Deliveries for these webhooks are (or may be) due: get them going now. */
  wake(webhookIds: Iterable<string>): void {
    for (const webhookId of new Set(webhookIds)) {
      const drain = this.drains.get(webhookId);
      if (drain) this.poke(drain);
      else if (!this.stopping) this.startDrain(webhookId);
    }
  }

  /** The `webhook:deliver` job (a retry's time has come): hands the webhook to a drain here and returns. */
  async run(job: Job<{ webhookId: string }>): Promise<void> {
    this.wake([job.attrs.data.webhookId]);
  }

  /** Stop claiming; resolves when the attempts in flight have ended (each bounded by the timeout) and are recorded. */
  async stop(): Promise<void> {
    this.stopping = true;
    for (const timer of this.timers.values()) clearTimeout(timer);
    this.timers.clear();
    for (const drain of this.drains.values()) this.poke(drain);
    await Promise.all([...this.loops]);
    await Promise.all([...this.attempts]);
    this.sender.close();
  }

  private poke(drain: Drain): void {
    drain.poked = true;
    drain.wakeUp?.();
  }

  private startDrain(webhookId: string): void {
    // A new drain takes what this process last saw of the webhook. When it saw nothing, the first
    // claim, as small as the starting window and counted in the failing share, reads the state,
    // and a failing webhook's next claim takes what is due.
    const drain: Drain = {
      webhookId,
      poked: true,
      mayHaveMore: false,
      sending: 0,
      inflight: 0,
      failing: this.lastSeenFailing.get(webhookId) ?? null,
      waitsForBytes: false,
      roomSeen: 0,
      overdueAt: null,
      window: new AdaptiveConcurrency(INITIAL_WINDOW, this.settings.maxPerWebhookConcurrency),
      lastSuccessWrite: 0,
      wakeUp: null,
    };
    this.drains.set(webhookId, drain);
    const loop = this.drain(drain)
      .catch((error: unknown) => {
        // Not expected (claims retry on their own); a dead drain must not stay to swallow wake-ups.
        this.log.error({ err: error, webhookId }, 'webhook drain failed');
        if (this.drains.get(webhookId) === drain) this.end(drain);
      })
      .finally(() => this.loops.delete(loop));
    this.loops.add(loop);
  }

  private async drain(drain: Drain): Promise<void> {
    for (;;) {
      const more = !this.stopping && (drain.poked || drain.mayHaveMore);
      // The window has held due work back for OVERDUE_MS: all that is due is claimed now, whatever the window.
      const overdue = more && drain.overdueAt !== null && Date.now() >= drain.overdueAt;
      const room = this.roomFor(drain, overdue);
      if (more && room > 0) {
        const processRoom = this.processRoomFor(drain);
        const bytes = processRoom > 0 ? this.bytesFor(drain) : null;
        if (bytes) {
          drain.poked = false;
          if (overdue) drain.overdueAt = null;
          if (!(await this.claimAndStart(drain, Math.min(room, processRoom), bytes))) {
            drain.poked = true; // try again after a pause: what was due still is
            await this.idle(drain, CLAIM_RETRY_MS);
          }
          continue;
        }
        this.waitingForRoom.add(drain);
      }
      if (drain.inflight === 0 && !more && !this.waitingForRoom.has(drain)) {
        // Decided synchronously: a wake-up from now on finds no drain and starts a new one.
        this.end(drain);
        return;
      }
      if (this.stopping && drain.inflight === 0) {
        this.end(drain);
        return;
      }
      // A deadline, not a timeout: wake-ups (answers, new events) must not put the overdue claim off.
      // A drain overdue but waiting for room in the process keeps its deadline: woken with room, it claims overdue.
      const waitsForRoom = this.waitingForRoom.has(drain);
      if (!more || this.roomFor(drain, false) > 0) drain.overdueAt = null;
      else if (drain.overdueAt === null || (drain.overdueAt <= Date.now() && !waitsForRoom)) drain.overdueAt = Date.now() + OVERDUE_MS;
      const untilOverdue = drain.overdueAt === null ? IDLE_CHECK_MS : drain.overdueAt - Date.now();
      const wait = untilOverdue > 0 ? Math.min(untilOverdue, IDLE_CHECK_MS) : IDLE_CHECK_MS;
      if (await this.idle(drain, wait)) {
        // Nothing woke it: look again anyway, for bodies too.
        drain.poked = true;
        drain.waitsForBytes = false;
      }
    }
  }

  /** The drain is done: it lets go of what it held, and what it saw of its webhook is kept for the next drain. */
  private end(drain: Drain): void {
    this.drains.delete(drain.webhookId);
    this.waitingForRoom.delete(drain);
    if (this.heldForBytes.healthy === drain || this.heldForBytes.failing === drain) {
      this.holdForBytes(drain, false);
      this.wakeWaiting(); // the drains its hold kept back
    }
    if (drain.failing !== null) {
      this.lastSeenFailing.delete(drain.webhookId); // re-inserted last: the oldest go first past the bound
      this.lastSeenFailing.set(drain.webhookId, drain.failing);
      if (this.lastSeenFailing.size > LAST_SEEN_WEBHOOKS) this.lastSeenFailing.delete(this.lastSeenFailing.keys().next().value!);
    }
  }

  /**
   * How many deliveries the drain may claim now: room on the wire in its window (for a failing
   * webhook, or once the window has held due work back for OVERDUE_MS, the maximum window), and answered attempts
   * waiting to be recorded bounded by the maximum window. A healthy webhook's claims come in
   * batches: nothing until a quarter of the window is free, unless nothing is on the wire.
   */
  private roomFor(drain: Drain, overdue: boolean): number {
    const unpaced = drain.failing === true || overdue;
    const limit = unpaced ? this.settings.maxPerWebhookConcurrency : drain.window.limit;
    const room = Math.min(limit - drain.sending, 2 * this.settings.maxPerWebhookConcurrency - drain.inflight);
    return room >= (drain.sending === 0 || unpaced ? 1 : Math.ceil(limit / 4)) ? room : 0;
  }

  /** Attempts the process may still start for this drain: failing webhooks (and those not known yet) only within their share. */
  private processRoomFor(drain: Drain): number {
    const room = this.settings.processConcurrency - this.inflight;
    return drain.failing !== false ? Math.min(room, this.failingShare - this.failingInflight) : room;
  }

  /**
   * The body bytes the drain may claim now, within the process's `memoryBytes` — a failing webhook's
   * (or one not known yet) within the failing half of it, as for attempts — or null when it may not
   * claim. A drain with all its share free (no body of its share in flight, none claimed, and for a
   * healthy one none at all) may take its oldest due delivery whatever its size (`oversizeFirst`):
   * a body larger than the bound is still sent, alone in its share.
   *
   * While a drain waits for room for a body (`heldForBytes`), the other drains of its share claim
   * nothing, so a stream of small bodies cannot keep taking the room a large one waits for; it has
   * its room once the attempts in flight end, within a timeout. A healthy drain waiting holds
   * failing ones back too, as they use the same memory; a failing one never holds back healthy
   * ones, nor ones whose state is not known yet.
   */
  private bytesFor(drain: Drain): { maxBytes: number; oversizeFirst: boolean } | null {
    if (drain.waitsForBytes) return null;
    const healthyHeld = this.holderOf('healthy');
    const failingHeld = this.holderOf('failing');
    // A drain not known yet is not held back by a failing one: its first claim is small, and tells which it is.
    if ((healthyHeld && healthyHeld !== drain) || (drain.failing === true && failingHeld && failingHeld !== drain)) return null;
    const maxBytes = this.byteRoomOf(drain);
    if (maxBytes === this.shareBytesOf(drain)) return { maxBytes, oversizeFirst: true };
    return maxBytes > 0 ? { maxBytes, oversizeFirst: false } : null;
  }

  /** The body bytes free for the drain's share: all that is free, and for a failing webhook (or one not known yet) within the failing half. */
  private byteRoomOf(drain: Drain): number {
    const free = this.settings.memoryBytes - this.inflightBytes;
    return drain.failing !== false ? Math.min(free, this.failingShareBytes - this.failingInflightBytes) : free;
  }

  /** All the bytes the drain's share may hold: its room when nothing of it is in flight. */
  private shareBytesOf(drain: Drain): number {
    return drain.failing !== false ? this.failingShareBytes : this.settings.memoryBytes;
  }

  /**
   * The drain that holds a share, if it still may: a hold ends with its drain, and when its webhook
   * changes sides (a healthy one fails, a failing one recovers). Otherwise a webhook holding the
   * healthy share that starts failing would wait behind the failing share's holder, which waits
   * behind it: no webhook of the process would be sent anything again.
   */
  private holderOf(share: 'healthy' | 'failing'): Drain | null {
    const drain = this.heldForBytes[share];
    if (drain && this.drains.get(drain.webhookId) === drain && (drain.failing !== false) === (share === 'failing')) return drain;
    this.heldForBytes[share] = null;
    return null;
  }

  /** Marks the drain as the one its share waits on while its due bodies do not fit (`bytesFor`), or lets its share go. */
  private holdForBytes(drain: Drain, held: boolean): void {
    if (this.heldForBytes.healthy === drain) this.heldForBytes.healthy = null;
    if (this.heldForBytes.failing === drain) this.heldForBytes.failing = null;
    const share = drain.failing !== false ? 'failing' : 'healthy';
    if (held && !this.holderOf(share)) this.heldForBytes[share] = drain;
  }

  /**
   * Claims up to `room` deliveries whose bodies fit `bytes`, and starts them. The room and the bytes
   * count as in flight while the claim runs, so drains claiming at once cannot together pass the
   * per-process limits; they turn into the started attempts in one synchronous step, and only then is what
   * is left over offered to drains waiting for room. False when the claim failed (logged; the
   * caller retries).
   */
  private async claimAndStart(drain: Drain, room: number, bytes: { maxBytes: number; oversizeFirst: boolean }): Promise<boolean> {
    drain.sending += room;
    const release = this.reserve(drain, room, bytes.maxBytes);
    let claims: Claim[] | null;
    try {
      claims = await this.claim(drain, room, bytes);
    } catch (error) {
      this.log.error({ err: error, webhookId: drain.webhookId }, 'could not claim deliveries; retrying');
      claims = null;
    }
    drain.sending -= room;
    release();
    for (const claim of claims ?? []) this.start(drain, claim);
    // Bodies left for want of room wait for more room than they had, unless it came while the claim ran.
    if (drain.waitsForBytes && this.byteRoomOf(drain) > drain.roomSeen) drain.waitsForBytes = false;
    this.wakeWaiting();
    return claims !== null;
  }

  /** Waits until the drain is woken or `ms` pass; true when the time ran out. */
  private idle(drain: Drain, ms: number): Promise<boolean> {
    return new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => {
        drain.wakeUp = null;
        resolve(true);
      }, ms);
      drain.wakeUp = () => {
        drain.wakeUp = null;
        clearTimeout(timer);
        resolve(false);
      };
    });
  }

  /**
   * Room in the process: every drain that waited for it tries again (each claims what fits). Drains
   * whose bodies did not fit try again only once their share has more room than when they did not
   * fit: two of them waking each other after every empty claim would claim in a loop.
   */
  private wakeWaiting(): void {
    if (this.waitingForRoom.size === 0) return;
    const waiting = [...this.waitingForRoom].filter((drain) => !drain.waitsForBytes || this.byteRoomOf(drain) > drain.roomSeen);
    for (const drain of waiting) {
      this.waitingForRoom.delete(drain);
      drain.waitsForBytes = false;
      drain.wakeUp?.();
    }
  }

  /**
   * Takes up to `limit` due deliveries of the webhook whose bodies fit `bytes` from the queue
   * (delivery-queue.ts), with its current URL and secret. Due deliveries left because they did not
   * fit make the drain wait for room, holding its share (`holdForBytes`).
   */
  private async claim(drain: Drain, limit: number, bytes: { maxBytes: number; oversizeFirst: boolean }): Promise<Claim[]> {
    const { deliveries: rows, due } = await claimDue(this.orm.em.fork(), drain.webhookId, {
      limit,
      ...bytes,
      dueWithinSeconds: RETRY_TIMER_MS / 1000,
      leaseSeconds: this.leaseSeconds(),
    });
    const leftForBytes = rows.length < due;
    drain.mayHaveMore = due === limit || leftForBytes;
    drain.waitsForBytes = leftForBytes;
    drain.roomSeen = bytes.maxBytes - rows.reduce((sum, row) => sum + row.bytes, 0);
    if (rows.length > 0) drain.failing = rows[0]!.failing;
    this.holdForBytes(drain, leftForBytes);
    if (rows.length === 0) return [];
    const secret = this.openSecret(drain.webhookId, rows[0]!.secret_ciphertext);
    return rows.map(({ secret_ciphertext: _sealed, failing: _failing, ...claim }) => ({ ...claim, secret }));
  }

  /**
   * How long a claim holds its delivery: one attempt, and a margin for recording it when the database
   * is busy or briefly away: a lease that lapsed before its attempt was recorded would let the
   * delivery be claimed and sent again.
   */
  private leaseSeconds(): number {
    return Math.ceil(this.settings.timeoutMs / 1000) + 30;
  }

  private openSecret(webhookId: string, sealed: string): string | null {
    try {
      return this.box.open(sealed);
    } catch (error) {
      this.log.error({ err: error, webhookId }, 'cannot decrypt the webhook secret: was CAIRN_SECRET_KEY changed?');
      return null;
    }
  }

  /**
   * Counts `count` attempts holding `bytes` of bodies as in flight, for the drain and the process
   * (and the failing share unless the webhook is known not to be failing); returns what takes them
   * out of flight again.
   */
  private reserve(drain: Drain, count: number, bytes: number): () => void {
    const failing = drain.failing !== false;
    drain.inflight += count;
    this.inflight += count;
    this.inflightBytes += bytes;
    if (failing) {
      this.failingInflight += count;
      this.failingInflightBytes += bytes;
    }
    return () => {
      drain.inflight -= count;
      this.inflight -= count;
      this.inflightBytes -= bytes;
      if (failing) {
        this.failingInflight -= count;
        this.failingInflightBytes -= bytes;
      }
    };
  }

  private start(drain: Drain, claim: Claim): void {
    drain.sending++; // off the wire again when its answer comes (`attempt`)
    const release = this.reserve(drain, 1, claim.bytes);
    const attempt = this.attempt(drain, claim).finally(() => {
      release();
      this.attempts.delete(attempt);
      drain.wakeUp?.();
      this.wakeWaiting();
    });
    this.attempts.add(attempt);
  }

  private async attempt(drain: Drain, claim: Claim): Promise<void> {
    const { webhookId } = drain;
    const headers = {
      'Content-Type': 'application/json',
      'User-Agent': this.settings.userAgent,
      'X-Cairn-Event': claim.event,
      'X-Cairn-Delivery': claim.id,
      'X-Cairn-Hook-ID': webhookId,
      ...(claim.secret !== null ? { 'X-Cairn-Signature-256': signatureHeader(claim.secret, claim.body) } : {}),
    };
    const startedAt = new Date();
    const epoch = drain.window.sent();
    let outcome: AttemptOutcome;
    try {
      outcome =
        claim.secret === null
          ? { ok: false, statusCode: null, error: 'the webhook secret cannot be decrypted', durationMs: 0, response: null }
          : await this.sender.send(claim.url, headers, claim.body, this.settings.timeoutMs);
    } catch (error) {
      // The sender turns every failure into an outcome; should it throw all the same, the attempt is a failure, recorded.
      outcome = { ok: false, statusCode: null, error: (error as Error)?.message ?? 'request failed', durationMs: 0, response: null };
    } finally {
      // Off the wire: the drain may claim and send more while this attempt waits to be recorded.
      drain.sending--;
      drain.wakeUp?.();
    }
    drain.window.answered(epoch, outcome.ok, outcome.durationMs);
    const wasFailing = drain.failing;
    drain.failing = !outcome.ok;
    try {
      const finished = finishAttempt(claim, { url: claim.url, headers, startedAt, outcome, retryDelaysMs: this.settings.retryDelaysMs });
      // False: deleted with its webhook while the attempt ran, nothing is left to record.
      if (!(await this.recordWhileClaimed(finished, startedAt))) return;
      const counted: DeliveryOutcome = outcome.ok ? 'succeeded' : finished.retryAt ? 'retrying' : 'failed';
      this.metrics.deliveries.inc({ outcome: counted });
      if (finished.trigger === AttemptTrigger.INITIAL) {
        this.metrics.deliveryLatency.observe((Date.now() - new Date(claim.created_at).getTime()) / 1000);
      }
      // The webhook row changes on every failure, but while it succeeds only to end a streak or once a second.
      const now = Date.now();
      if (!outcome.ok || wasFailing || now - drain.lastSuccessWrite >= SUCCESS_WRITE_EVERY_MS) {
        if (outcome.ok) drain.lastSuccessWrite = now;
        await this.health.afterAttempt(webhookId, outcome);
      }
      if (finished.retryAt) this.scheduleRetry(webhookId, finished.retryAt);
    } catch (error) {
      // The claim lapses and the sweep hands the delivery to a drain again.
      this.log.error({ err: error, webhookId, deliveryId: claim.id }, 'delivery attempt could not be recorded');
    }
  }

  /**
   * Records a finished attempt, trying again while the database is briefly away or its disk full,
   * for as long as the delivery stays claimed: an attempt that succeeded and could not be recorded
   * would be sent again once the claim lapses.
   */
  private async recordWhileClaimed(finished: FinishedAttempt, startedAt: Date): Promise<boolean> {
    // A statement cut off by the database's deadline may still land: the last try starts early
    // enough that it lands, if at all, while the claim holds (and a repeat records nothing twice).
    const margin = Math.max(RECORD_MARGIN_MS, this.settings.databaseTimeoutMs + 1_000);
    const until = startedAt.getTime() + this.leaseSeconds() * 1000 - margin;
    for (;;) {
      try {
        return await this.recorder.record(finished);
      } catch (error) {
        const passing = isUnavailable(error) || isNoSpace(error);
        // Stopping does not wait for the database to come back: the lease lapses and the delivery is sent again.
        if (!passing || this.stopping || Date.now() + RECORD_RETRY_MS > until) throw error;
        await new Promise((resolve) => setTimeout(resolve, RECORD_RETRY_MS));
      }
    }
  }

  /**
   * A retry's wake-up: a timer in this process, exact (to RETRY_TIMER_MS)
   * whatever the job backend's polling, and an Agenda job, which another
   * process runs if this one is gone by then. Deliveries retrying close
   * together share them: one timer per webhook and RETRY_TIMER_MS, one job
   * per webhook and second.
   */
  private scheduleRetry(webhookId: string, at: Date): void {
    const wakeAt = Math.ceil(at.getTime() / RETRY_TIMER_MS) * RETRY_TIMER_MS;
    this.once(`wake ${webhookId} ${wakeAt}`, wakeAt, () => this.wake([webhookId]));
    const jobAt = Math.ceil(at.getTime() / 1000) * 1000;
    if (this.once(`job ${webhookId} ${jobAt}`, jobAt, () => undefined)) {
      this.agenda.schedule(new Date(jobAt), DELIVER_JOB, { webhookId }).catch((error: unknown) => {
        this.log.error({ err: error, webhookId }, 'could not schedule a retry job; the sweep will pick it up');
      });
    }
  }

  /** Runs `fn` at `atMs` unless a timer under `key` is pending; whether it set one. */
  private once(key: string, atMs: number, fn: () => void): boolean {
    if (this.timers.has(key)) return false;
    const timer = setTimeout(
      () => {
        this.timers.delete(key);
        fn();
      },
      Math.max(atMs - Date.now(), 0),
    );
    this.timers.set(key, timer.unref());
    return true;
  }
}
