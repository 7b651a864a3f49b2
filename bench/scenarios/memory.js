'use strict';
/* 4. Redis memory per key, on a fresh redis-server of its own (its mode flushes it). */

const { onPath } = require('../../kit/processes');
const { startRedisServer } = require('../../kit/redis-server');
const { MEMORY_IDENTITIES, log } = require('../settings');
const { runStoreBench } = require('./store-runs');

function cases(n) {
  const ours = (algorithm, limit, identities, hits) => ({
    kind: 'ours',
    algorithm,
    limit,
    window: 60,
    identities,
    hits,
  });
  return [
    ours('FIXED_WINDOW', 1_000_000, n, 1),
    // one hit empties a bucket of 1, so its key lives the whole window
    ours('TOKEN_BUCKET', 1, n, 1),
    ours('SLIDING_WINDOW', 1, n, 1),
    ours('SLIDING_WINDOW', 10, n / 10, 10),
    ours('SLIDING_WINDOW', 100, n / 100, 100),
    { kind: 'rlf', limit: 1_000_000, window: 60, identities: n, hits: 1 },
  ];
}

async function memory(tmp) {
  if (!onPath('redis-server')) return { skipped: 'redis-server is not on PATH' };
  const list = cases(MEMORY_IDENTITIES);
  const redis = await startRedisServer(undefined, { dir: tmp });
  try {
    log(`memory: ${list.length} cases on a fresh redis-server (port ${redis.port})`);
    return await runStoreBench(
      { mode: 'memory', owned: true, targets: { single: { url: redis.url } }, cases: list },
      { timeoutMs: 180_000 },
    );
  } finally {
    await redis.stop();
  }
}

module.exports = { memory };
