export { mercuriusRateLimit } from './plugin';
export type { MercuriusRateLimitOptions } from './plugin';
