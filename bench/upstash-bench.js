'use strict';
/*
 * `node bench/upstash-bench.js` (after `npm run build:library`): latency per decision of the
 * Upstash store over the REST protocol (kit/upstash-bridge.js in front of a local redis-server)
 * against the Redis store over TCP (ioredis), on the same Redis. Both on loopback, so the gap is
 * the protocol's own cost (HTTP request, JSON), not a network's: a real Upstash database adds
 * the round trip to its region. Starts its own redis-server and bridge and stops both.
 */

const { performance } = require('node:perf_hooks');

const { Redis } = require('ioredis');

const { createRedisStore } = require('../dist');
const { createUpstashStore } = require('../dist/upstash');
const { startRedisServer } = require('../kit/redis-server');
const { startUpstashBridge } = require('../kit/upstash-bridge');

const SEQUENTIAL = Number(process.env.BENCH_HITS ?? 1000);
const BURSTS = 50;
const rule = {
  action: 'bench',
  algorithm: 'FIXED_WINDOW',
  windowSeconds: 3600,
  limit: 1_000_000_000,
  cost: 1,
};

const quantile = (sorted, q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
const ms = (n) => n.toFixed(2);

/** p50 and p99 of one hit awaited after the other, and the mean time of a burst of 100. */
async function measure(name, store) {
  await store.ready();
  for (let i = 0; i < 100; i++) await store.hit(`warm-${i % 10}`, [rule]);
  const times = [];
  for (let i = 0; i < SEQUENTIAL; i++) {
    const start = performance.now();
    await store.hit(`id-${i % 100}`, [rule]);
    times.push(performance.now() - start);
  }
  times.sort((a, b) => a - b);
  let burst = 0;
  for (let b = 0; b < BURSTS; b++) {
    const start = performance.now();
    await Promise.all(Array.from({ length: 100 }, (_, i) => store.hit(`id-${i}`, [rule])));
    burst += performance.now() - start;
  }
  return { name, p50: quantile(times, 0.5), p99: quantile(times, 0.99), burst: burst / BURSTS };
}

async function main() {
  const redis = await startRedisServer();
  const bridge = await startUpstashBridge({ redisUrl: redis.url, token: 'bench' });
  const client = new Redis(redis.url);
  const stores = [];
  try {
    const rows = [];
    for (const [name, make] of [
      ['Redis store, TCP (ioredis)', () => createRedisStore({ client, blockCache: false })],
      [
        'Upstash store, REST bridge',
        () =>
          createUpstashStore({
            url: bridge.url,
            token: 'bench',
            blockCache: false,
            timeoutMs: 5000,
          }),
      ],
      [
        'Upstash store, REST bridge, maxBatch 1',
        () =>
          createUpstashStore({
            url: bridge.url,
            token: 'bench',
            blockCache: false,
            timeoutMs: 5000,
            maxBatch: 1,
          }),
      ],
    ]) {
      const store = make();
      stores.push(store);
      rows.push(await measure(name, store));
    }
    console.log(`${SEQUENTIAL} sequential hits (one decision per call), ${BURSTS} bursts of 100`);
    console.log('| store | p50 per hit (ms) | p99 per hit (ms) | burst of 100 (ms) |');
    console.log('| --- | --- | --- | --- |');
    for (const r of rows)
      console.log(`| ${r.name} | ${ms(r.p50)} | ${ms(r.p99)} | ${ms(r.burst)} |`);
  } finally {
    for (const store of stores) await store.close();
    client.disconnect();
    await bridge.close();
    await redis.stop();
  }
}

main().catch((error) => {
  console.error(error);
  process.exitCode = 1;
});
