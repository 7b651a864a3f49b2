import { provideRedis, type ProvidedRedis } from './redis';

declare global {
  var __providedRedis: ProvidedRedis | undefined;
}

/** Provides one Redis for the whole run; test workers inherit REDIS_URL from this process. */
export default async function globalSetup(): Promise<void> {
  let redis: ProvidedRedis;
  try {
    redis = await provideRedis();
  } catch (error) {
    // one line that says how to get Redis, and nothing else
    console.error(`\n${(error as Error).message}`);
    process.exit(1);
  }
  globalThis.__providedRedis = redis;
  process.env.REDIS_URL = redis.url;
  console.log(`\nRedis for this run: ${redis.url} (${redis.source})`);
}
