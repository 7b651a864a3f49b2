'use strict';
/*
 * What a CONCURRENCY decision costs beside a FIXED_WINDOW one, on the built library (../dist)
 * and a private redis-server (kit/): a FIXED_WINDOW decision is one hit; a CONCURRENCY decision
 * is its hit and its release (the renewal runs only for calls longer than a third of a lease).
 * `inFlight` calls at a time over `identities` identities, in interleaved rounds; Node CPU per
 * decision from process.cpuUsage, Redis CPU per decision from INFO cpu (user + sys).
 *   node bench/concurrency-bench.js [decisionsPerRound=20000] [rounds=3] [inFlight=64]
 * Prints one line per round and algorithm, then the medians as JSON.
 */

const { performance } = require('node:perf_hooks');

const { Redis } = require('ioredis');

const { createRedisStore } = require('../dist');
const { startRedisServer } = require('../kit/redis-server');
const { redisCpuSeconds } = require('./redis-info');

const [perRound = 20_000, rounds = 3, inFlight = 64] = process.argv.slice(2).map(Number);
const IDENTITIES = 1_000;
const rule = (algorithm) => ({
  action: 'bench',
  algorithm,
  windowSeconds: 60,
  limit: 1_000_000,
  cost: 1,
});

async function measure(store, admin, algorithm) {
  const r = rule(algorithm);
  let next = 0;
  const worker = async () => {
    while (next < perRound) {
      const identity = `id-${next++ % IDENTITIES}`;
      const decision = await store.hit(identity, [r]);
      if (!decision.allowed) throw new Error(`${algorithm}: a decision blocked`);
      if (decision.lease) await store.release(decision.lease);
    }
  };
  const redisBefore = await redisCpuSeconds(admin);
  const cpuBefore = process.cpuUsage();
  const started = performance.now();
  await Promise.all(Array.from({ length: inFlight }, worker));
  const wallMs = performance.now() - started;
  const cpu = process.cpuUsage(cpuBefore);
  const redisUs = ((await redisCpuSeconds(admin)) - redisBefore) * 1e6;
  return {
    algorithm,
    decisionsPerSecond: Math.round((perRound / wallMs) * 1000),
    nodeUs: +((cpu.user + cpu.system) / perRound).toFixed(1),
    redisUs: +(redisUs / perRound).toFixed(1),
  };
}

async function main() {
  const redis = await startRedisServer();
  const client = new Redis(redis.port, '127.0.0.1', { lazyConnect: true });
  const admin = new Redis(redis.port, '127.0.0.1', { lazyConnect: true });
  await Promise.all([client.connect(), admin.connect()]);
  const store = createRedisStore({ client, prefix: 'bench:', blockCache: false });
  try {
    // warm-up: connection, scripts, JIT
    await measure(store, admin, 'FIXED_WINDOW');
    await measure(store, admin, 'CONCURRENCY');
    const results = { FIXED_WINDOW: [], CONCURRENCY: [] };
    for (let round = 0; round < rounds; round++) {
      for (const algorithm of ['FIXED_WINDOW', 'CONCURRENCY']) {
        const result = await measure(store, admin, algorithm);
        results[algorithm].push(result);
        console.log(JSON.stringify({ round, ...result }));
      }
    }
    const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
    const summary = Object.fromEntries(
      Object.entries(results).map(([algorithm, rs]) => [
        algorithm,
        {
          decisionsPerSecond: median(rs.map((r) => r.decisionsPerSecond)),
          nodeUs: median(rs.map((r) => r.nodeUs)),
          redisUs: median(rs.map((r) => r.redisUs)),
        },
      ]),
    );
    console.log(JSON.stringify({ perRound, rounds, inFlight, identities: IDENTITIES, summary }));
  } finally {
    await store.close?.();
    client.disconnect();
    admin.disconnect();
    await redis.stop();
  }
}

main().catch((error) => {
  console.error(error);
  process.exitCode = 1;
});
