'use strict';
/* How the store scenarios drive bench/store-bench.js, and the names of its cases. */

const { join } = require('node:path');

const { runJson } = require('../children');
const { IDENTITIES, IN_FLIGHT, WARMUP_MS } = require('../settings');

const STORE_BENCH = join(__dirname, '..', 'store-bench.js');

/** The report's name of a store-bench case. */
const caseName = (c) =>
  c.kind === 'rlf'
    ? 'rate-limiter-flexible RateLimiterRedis.consume'
    : c.kind === 'ping'
      ? 'ioredis PING (floor)'
      : `${c.algorithm}, ${c.limits} limit${c.limits > 1 ? 's' : ''}`;

/**
 * Runs store-bench.js in its own process with `config` (its mode, targets and cases, over the
 * bench's identities, in-flight count and warm-up unless given) and resolves with its result.
 */
const runStoreBench = (config, options) =>
  runJson(
    STORE_BENCH,
    [
      JSON.stringify({
        identities: IDENTITIES,
        inFlight: IN_FLIGHT,
        warmupMs: WARMUP_MS,
        ...config,
      }),
    ],
    options,
  );

module.exports = { caseName, runStoreBench };
