import { Counter, Histogram, Registry } from 'prom-client';

import type { DecisionEvent } from '../index';

/** Prometheus metrics of the rate limiter, fed by `onDecision`. */
export interface RateLimitMetrics {
  readonly registry: Registry;
  observe(event: DecisionEvent): void;
}

/**
 * `graphql_rate_limit_decisions_total{action,result}` with result `allowed`, `blocked`,
 * `dry_run_blocked` or `error`; `graphql_rate_limit_store_latency_seconds{result}`;
 * `graphql_rate_limit_store_errors_total{action}`.
 */
export function createRateLimitMetrics(): RateLimitMetrics {
  const registry = new Registry();
  const decisions = new Counter({
    name: 'graphql_rate_limit_decisions_total',
    help: 'Rate limit decisions by action and result',
    labelNames: ['action', 'result'] as const,
    registers: [registry],
  });
  const latency = new Histogram({
    name: 'graphql_rate_limit_store_latency_seconds',
    help: 'Time the store took to decide (or fail)',
    labelNames: ['result'] as const,
    buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1],
    registers: [registry],
  });
  const errors = new Counter({
    name: 'graphql_rate_limit_store_errors_total',
    help: 'Store failures and timeouts',
    labelNames: ['action'] as const,
    registers: [registry],
  });
  return {
    registry,
    observe(event) {
      const result = event.error
        ? 'error'
        : event.allowed
          ? 'allowed'
          : event.dryRun
            ? 'dry_run_blocked'
            : 'blocked';
      decisions.inc({ action: event.rule.action, result });
      latency.observe({ result: event.error ? 'error' : 'ok' }, event.latencyMs / 1000);
      if (event.error) errors.inc({ action: event.rule.action });
    },
  };
}
