export { rateLimitDirective } from './directive';
export type {
  DecisionEvent,
  Identify,
  RateLimitDirective,
  RateLimitDirectiveOptions,
  StoreErrorPolicy,
} from './directive';
export { createRedisStore } from './stores/redis-store';
export type { RedisStoreOptions } from './stores/redis-store';
export { createMemoryStore } from './stores/memory-store';
export type { MemoryStoreOptions } from './stores/memory-store';
export type { Decision, LimitState, RateLimitStore } from './stores/store';
export type { RateLimitAlgorithm, RateLimitRule } from './rules';
export type { RateLimitPlugin, ResponseContext } from './plugin';
export {
  RateLimitConfigError,
  RateLimitedError,
  RateLimitUnavailableError,
  StoreTimeoutError,
  UnauthenticatedError,
} from './errors';
export type { RateLimitedDetails, RateLimitErrorCode } from './errors';
