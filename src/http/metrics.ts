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

  constructor() {
    collectDefaultMetrics({ register: this.registry, prefix: 'cairn_' });
  }
}
