export { rateLimitDirective } from './directive';
export type { RateLimitDirective } from './directive';
export type {
  Identify,
  IdentitySource,
  RateLimitDirectiveOptions,
  StoreErrorPolicy,
} from './options';
export type { PluginOptions } from './plugin-options';
export type { BudgetOptions } from './budget/options';
export type { CostExtension, ThrottleStatus } from './budget/extension';
export type { DecidedBy, DecisionEvent } from './decisions';
export type { LimitStatus, LimitTarget, RateLimitControls } from './controls';
export type { IdentityValue } from './identity';
export { createRedisStore } from './stores/redis/redis-store';
export type { RedisStoreOptions } from './stores/redis/redis-store';
export { createMemoryStore } from './stores/memory/memory-store';
export type { MemoryStoreOptions } from './stores/memory/memory-store';
export type {
  Decision,
  LimitState,
  RateLimitStore,
  Refunded,
  TakeDecision,
  TakeReceipt,
} from './stores/store';
export { ALGORITHMS } from './algorithms';
export type { RateLimitAlgorithm, RateLimitRule } from './algorithms';
export type { OperationContext, RateLimitPlugin, RequestListener, ResponseContext } from './plugin';
export type {
  ExecuteDone,
  ExecuteHooks,
  ExecuteStart,
  ExecutionResultShape,
  HttpResponse,
  RateLimitEnvelopPlugin,
  ResponseHook,
} from './envelop-plugin';
export type { LimitReport } from './response-report';
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
  TooExpensiveDetails,
} from './errors';
export { costTypeDefs } from './cost/directives';
export { checkCostDirectives } from './cost/check';
export { createCostEstimator, estimateCost, COST_DEFAULTS } from './cost/estimate';
export type { CostEstimator, CostOptions, EstimateOptions } from './cost/estimate';
export { actualCost } from './cost/actual';
export type { ActualCostOptions } from './cost/actual';
export { CostQueryError, CostVariablesError } from './cost/errors';
export type { CostQueryReason } from './cost/errors';
export { MAX_DEPTH as COST_MAX_DEPTH, MAX_WORK as COST_MAX_WORK } from './cost/bounds';
export type { Variables as CostVariables } from './cost/input-cost';
