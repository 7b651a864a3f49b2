/*
 * What a user writes: the directive and its options, the stores (and the contract of a custom
 * one), the errors a client or a test tells apart, and the shapes of what the library reports.
 * The cost estimator is the subpath `graphql-atomic-rate-limit/cost` (src/cost/index.ts).
 */
export { rateLimitDirective } from './directive';
export type { RateLimitDirective } from './directive';
export type {
  Identify,
  IdentitySource,
  IdentityValue,
  RateLimitDirectiveOptions,
  StoreErrorPolicy,
} from './options/directive-options';
export type { BudgetOptions } from './options/budget-options';
export type { CostExtension, ThrottleStatus } from './budget/extension';
export type { DecidedBy, DecisionEvent } from './decision-events';
export type { LimitStatus, LimitTarget, RateLimitControls } from './decide/operator-controls';
export { createRedisStore } from './stores/redis/redis-store';
export type { RedisStoreOptions } from './stores/redis/redis-store';
export type { RedisStoreClient } from './stores/redis/clients';
export { createMemoryStore } from './stores/memory/memory-store';
export type { MemoryStoreOptions } from './stores/memory/memory-store';
export type {
  Decision,
  Lease,
  LimitState,
  RateLimitStore,
  Refunded,
  TakeDecision,
  TakeReceipt,
} from './stores/store';
export { ALGORITHMS } from './rate-limit-rule';
export type { RateLimitAlgorithm, RateLimitArgs, RateLimitRule } from './rate-limit-rule';
export { WARNING_CODES } from './warnings';
export type { RateLimitWarningCode } from './warnings';
export type { RateLimitPlugin } from './plugins/apollo';
export type { RateLimitEnvelopPlugin } from './plugins/envelop';
export type { LimitReport } from './plugins/response-report';
export {
  CostEstimatedTooExpensiveError,
  OperationNotFoundError,
  RateLimitConfigError,
  RateLimitCostExceededError,
  RateLimitedError,
  RateLimitIdentityError,
  RateLimitUnavailableError,
  StoreTimeoutError,
  UnauthenticatedError,
} from './errors';
export type {
  CostExceededDetails,
  RateLimitedDetails,
  RateLimitErrorCode,
  RefusalReason,
  TooExpensiveDetails,
} from './errors';
