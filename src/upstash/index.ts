/**
 * `graphql-atomic-rate-limit/upstash`: the rate limit store on Upstash Redis over its REST API,
 * for hosts without TCP (Cloudflare Workers, Vercel Edge). See docs/upstash.md.
 */
export { createUpstashStore } from '../stores/upstash/upstash-store';
export type { UpstashStoreOptions } from '../stores/upstash/upstash-store';
