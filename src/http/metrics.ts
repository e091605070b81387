import { Counter, Histogram, Registry, collectDefaultMetrics, Gauge } from 'prom-client';

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
  }
}
