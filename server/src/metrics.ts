import { Counter, Histogram, Registry } from 'prom-client';

import type { DecisionEvent } from 'graphql-atomic-rate-limit';

/** Prometheus metrics of the rate limiter, fed by `onDecision`. */
export interface RateLimitMetrics {
  readonly registry: Registry;
  observe(event: DecisionEvent): void;
}

/**
 * `graphql_rate_limit_decisions_total{action,result,decided_by}` with result `allowed`,
 * `blocked`, `dry_run_blocked` or `error` (nothing decided) and decided_by `store`, `cache` (a
 * block this process remembered) or `fallback` (the store failed and the fallback decided);
 * `graphql_rate_limit_refusals_total{action,reason}` with reason `RATE` or `CONCURRENCY`;
 * `graphql_rate_limit_store_latency_seconds{result}`; `graphql_rate_limit_store_errors_total{action}`,
 * which counts every store failure, also those the fallback then decided.
 */
export function createRateLimitMetrics(): RateLimitMetrics {
  const registry = new Registry();
  const decisions = new Counter({
    name: 'graphql_rate_limit_decisions_total',
    help: 'Rate limit decisions by action, result and what decided them',
    labelNames: ['action', 'result', 'decided_by'] as const,
    registers: [registry],
  });
  const latency = new Histogram({
    name: 'graphql_rate_limit_store_latency_seconds',
    help: 'Time the store took to decide (or fail)',
    labelNames: ['result'] as const,
    buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1],
    registers: [registry],
  });
  const refusals = new Counter({
    name: 'graphql_rate_limit_refusals_total',
    help: 'Refused hits by action and reason: RATE (hits over time) or CONCURRENCY (calls in flight)',
    labelNames: ['action', 'reason'] as const,
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
      // With a fallback, a failed store still leaves a decision: the result is that decision.
      const result = !event.decision
        ? 'error'
        : event.allowed
          ? 'allowed'
          : event.dryRun
            ? 'dry_run_blocked'
            : 'blocked';
      decisions.inc({ action: event.rule.action, result, decided_by: event.decidedBy });
      if (result === 'blocked' && event.reason) {
        refusals.inc({ action: event.rule.action, reason: event.reason });
      }
      latency.observe({ result: event.error ? 'error' : 'ok' }, event.latencyMs / 1000);
      if (event.error) errors.inc({ action: event.rule.action });
    },
  };
}
