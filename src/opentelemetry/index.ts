export { openTelemetry, DECISION_ATTRIBUTES, MIN_IDENTITY_HASH_KEY } from './decisions';
export type { DecisionAttribute, OpenTelemetryOptions, Outcome } from './decisions';
export { withLeaseMetrics } from './leases';
export type { LeaseMetricsOptions } from './leases';
