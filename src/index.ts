export { rateLimitDirective } from './directive';
export type { RateLimitDirective } from './directive';
export type {
  Identify,
  IdentitySource,
  RateLimitDirectiveOptions,
  StoreErrorPolicy,
} from './options';
export type { PluginOptions } from './plugin-options';
export type { DecisionEvent } from './decisions';
export type { IdentityValue } from './identity';
export { createRedisStore } from './stores/redis-store';
export type { RedisStoreOptions } from './stores/redis-store';
export { createMemoryStore } from './stores/memory-store';
export type { MemoryStoreOptions } from './stores/memory-store';
export type { Decision, LimitState, RateLimitStore } from './stores/store';
export { ALGORITHMS } from './algorithms';
export type { RateLimitAlgorithm, RateLimitRule } from './algorithms';
export type { RateLimitPlugin, ResponseContext } from './plugin';
export type {
  ExecuteDone,
  ExecutionResultShape,
  HttpResponse,
  RateLimitEnvelopPlugin,
  ResponseHook,
} from './envelop-plugin';
export type { LimitReport } from './response-report';
export {
  RateLimitConfigError,
  RateLimitCostExceededError,
  RateLimitedError,
  RateLimitIdentityError,
  RateLimitUnavailableError,
  StoreTimeoutError,
  UnauthenticatedError,
} from './errors';
export type { CostExceededDetails, RateLimitedDetails, RateLimitErrorCode } from './errors';
