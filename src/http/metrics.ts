import { Counter, Histogram, Registry, collectDefaultMetrics, Gauge } from 'prom-client';

/**
 * prom-client's default metrics include three gauges named `_total`, a suffix Prometheus keeps for
 * counters (`promtool check metrics` fails on them). Each is the sum of the gauge of the same name
 * without it, by type: `sum(cairn_nodejs_active_handles)` is the same number.
 */
const MISNAMED_DEFAULTS = ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total'];

/**
 * The label values each series is counted under, where they are known in advance, and the types the
 * code that counts them uses, so a new value is added here or does not compile. Every combination
 * is exported at 0 from start-up: a dashboard's rate() over a counter then reads 0 on a new service
 * rather than nothing, and a series' first increment is seen (a series that appears at 1 has no
 * earlier sample to rise from).
 */
const SURFACES = ['rest', 'graphql', 'git', 'ops'] as const;
export type Surface = (typeof SURFACES)[number];
const GIT_SERVICES = ['upload-pack', 'receive-pack'] as const;
export type GitService = (typeof GIT_SERVICES)[number];
const GIT_OUTCOMES = ['ok', 'refused', 'failed', 'aborted'] as const;
export type GitOutcome = (typeof GIT_OUTCOMES)[number];
const DELIVERY_OUTCOMES = ['succeeded', 'retrying', 'failed'] as const;
export type DeliveryOutcome = (typeof DELIVERY_OUTCOMES)[number];
const MERGEABILITY_OUTCOMES = ['mergeable', 'conflicting', 'superseded', 'failed'] as const;
export type MergeabilityOutcome = (typeof MERGEABILITY_OUTCOMES)[number];
const RATE_LIMIT_BUDGETS = ['core', 'creations', 'git'] as const;
export type RateLimitBudget = (typeof RATE_LIMIT_BUDGETS)[number];

/** Every combination of the given values of each label. */
function combinations<T extends string>(values: Record<T, readonly string[]>): Array<Record<T, string>> {
  return Object.entries<readonly string[]>(values).reduce<Array<Record<string, string>>>(
    (partial, [name, options]) => partial.flatMap((labels) => options.map((value) => ({ ...labels, [name]: value }))),
    [{}],
  ) as Array<Record<T, string>>;
}

/** Exports a counter's series at 0 for every combination of the given label values. */
export function zeroCounter<T extends string>(counter: Counter<T>, values: Record<T, readonly string[]>): void {
  for (const labels of combinations(values)) counter.inc(labels, 0);
}

/** Prometheus metrics, one registry per service instance. */
export class Metrics {
  readonly registry = new Registry();

  readonly httpRequests = new Counter({
    name: 'cairn_http_requests_total',
    help: 'HTTP requests by route family, method and status',
    labelNames: ['surface', 'method', 'status'] as const,
    registers: [this.registry],
  });

  readonly httpDuration = new Histogram({
    name: 'cairn_http_request_duration_seconds',
    help: 'HTTP request latency',
    labelNames: ['surface'] as const,
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10],
    registers: [this.registry],
  });

  readonly deliveries = new Counter({
    name: 'cairn_webhook_delivery_attempts_total',
    help: 'Webhook delivery attempts by outcome',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });

  readonly deliveryLatency = new Histogram({
    name: 'cairn_webhook_delivery_latency_seconds',
    help: 'Time from event to the end of its first delivery attempt',
    buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [this.registry],
  });

  readonly queueDepth = new Gauge({
    name: 'cairn_webhook_queue_depth',
    help: 'Deliveries waiting for an attempt',
    registers: [this.registry],
  });

  /** Fetches (upload-pack exchanges) and pushes (receive-pack exchanges), and refusals before either. */
  readonly gitRequests = new Counter({
    name: 'cairn_git_requests_total',
    help: 'Git fetches and pushes by service and outcome (ok, refused, failed, aborted)',
    labelNames: ['service', 'outcome'] as const,
    registers: [this.registry],
  });

  readonly gitPushesInFlight = new Gauge({
    name: 'cairn_git_pushes_in_flight',
    help: 'Pushes this process has accepted and not yet answered, those waiting for their repository included',
    registers: [this.registry],
  });

  readonly gitDuration = new Histogram({
    name: 'cairn_git_request_duration_seconds',
    help: 'Duration of git fetch and push exchanges, from request to the end of the response',
    labelNames: ['service'] as const,
    buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
    registers: [this.registry],
  });

  readonly gitBytes = new Counter({
    name: 'cairn_git_bytes_total',
    help: 'Bytes of git smart HTTP traffic on the wire, by service and direction (in: from clients, out: to clients)',
    labelNames: ['service', 'direction'] as const,
    registers: [this.registry],
  });

  readonly mergeabilityQueued = new Counter({
    name: 'cairn_mergeability_queued_total',
    help: 'Pull requests taken up for a mergeability check',
    registers: [this.registry],
  });

  readonly mergeabilityQueueDepth = new Gauge({
    name: 'cairn_mergeability_queue_depth',
    help: 'Pull requests taken up for a mergeability check and not yet checked, in this process',
    registers: [this.registry],
  });

  readonly mergeabilityChecks = new Counter({
    name: 'cairn_mergeability_checks_total',
    help: 'Mergeability checks by outcome (mergeable, conflicting, superseded, failed)',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });

  readonly mergeabilityDuration = new Histogram({
    name: 'cairn_mergeability_check_duration_seconds',
    help: 'Duration of one mergeability check, a wait for a git slot included, to its stored result',
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [this.registry],
  });

  readonly rateLimitRefusals = new Counter({
    name: 'cairn_rate_limit_refusals_total',
    help: 'Requests refused by a rate limit, by budget (core, creations, git)',
    labelNames: ['resource'] as const,
    registers: [this.registry],
  });

  constructor() {
    collectDefaultMetrics({ register: this.registry, prefix: 'cairn_' });
    for (const name of MISNAMED_DEFAULTS) this.registry.removeSingleMetric(`cairn_${name}`);

    // Method and status are open-ended; the series every scrape is counted in is known.
    this.httpRequests.inc({ surface: 'ops', method: 'GET', status: '200' }, 0);
    for (const surface of SURFACES) this.httpDuration.zero({ surface });
    zeroCounter(this.deliveries, { outcome: DELIVERY_OUTCOMES });
    zeroCounter(this.gitRequests, { service: GIT_SERVICES, outcome: GIT_OUTCOMES });
    for (const service of GIT_SERVICES) this.gitDuration.zero({ service });
    zeroCounter(this.gitBytes, { service: GIT_SERVICES, direction: ['in', 'out'] });
    zeroCounter(this.mergeabilityChecks, { outcome: MERGEABILITY_OUTCOMES });
    zeroCounter(this.rateLimitRefusals, { resource: RATE_LIMIT_BUDGETS });
  }
}
