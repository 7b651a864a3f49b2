export { openTelemetry, DECISION_ATTRIBUTES } from './decisions';
export type { DecisionAttribute, OpenTelemetryOptions, Outcome } from './decisions';
