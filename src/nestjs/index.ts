export { RateLimitModule, RateLimitService } from './module';
export type { RateLimitModuleAsyncOptions, RateLimitModuleOptions } from './module';
export { RateLimit } from './decorator';
export type { RateLimitArgs } from '../rate-limit-rule';
export type { GraphQLModuleOptionsShape } from './graphql-options';
