'use strict';
/*
 * The knobs of `npm run bench` and the sizes every scenario and the report share.
 * Environment: REDIS_URL (use this Redis for the store and HTTP scenarios), BENCH_QUICK=1 (a
 * short smoke run), BENCH_PROFILE=<dir> (CPU profiles of the store and HTTP child processes),
 * BENCH_ONLY=<names> (only these scenarios, comma-separated: execute, twoIdentities, flood,
 * apollo, pricing, clients; their sections and targets alone).
 */

const { performance } = require('node:perf_hooks');

const QUICK = process.env.BENCH_QUICK === '1';
const ONLY = (process.env.BENCH_ONLY || '')
  .split(',')
  .map((name) => name.trim())
  .filter(Boolean);

const started = performance.now();

/** One progress line on stderr, with the seconds since the run started. */
const log = (line) =>
  process.stderr.write(`[bench ${((performance.now() - started) / 1000).toFixed(0)}s] ${line}\n`);

module.exports = {
  QUICK,
  ONLY,
  PROFILE_DIR: process.env.BENCH_PROFILE || '',
  /** Runs of latency, the ceiling and scale-out. */
  ROUNDS: QUICK ? 1 : 3,
  /** Runs of store throughput and HTTP, the noisiest. */
  MANY: QUICK ? 1 : 5,
  IN_FLIGHT: 256,
  IDENTITIES: 1000,
  STORE_MS: QUICK ? 600 : 1500,
  WARMUP_MS: QUICK ? 300 : 500,
  HTTP_S: QUICK ? 2 : 3,
  HTTP_CONNECTIONS: 50,
  TEAMS: 1000,
  MEMORY_IDENTITIES: QUICK ? 10_000 : 100_000,
  RB_REQUESTS: QUICK ? 100_000 : 300_000,
  ALGORITHMS: ['FIXED_WINDOW', 'SLIDING_WINDOW', 'TOKEN_BUCKET'],
  started,
  log,
};
