'use strict';
/* How the store scenarios drive bench/store-bench.js, and the names of its cases. */

const { join } = require('node:path');

const { runJson } = require('../children');
const { IDENTITIES, IN_FLIGHT, WARMUP_MS } = require('../settings');
const { summary } = require('../stats');
const { versions } = require('../versions');

const STORE_BENCH = join(__dirname, '..', 'store-bench.js');

/** The report's name of a store-bench case. */
const caseName = (c) => {
  if (c.kind === 'rlf') return `rate-limiter-flexible ${versions().rlf} RateLimiterRedis.consume`;
  if (c.kind === 'ping') return 'ioredis PING (floor)';
  let name = `${c.algorithm}, ${c.limits} limit${c.limits > 1 ? 's' : ''}`;
  if (c.sources) name += ` on ${c.sources.length} identities (${c.sources.join(' + ')})`;
  if (c.storeOptions && 'blockCache' in c.storeOptions) {
    name += `, blockCache ${c.storeOptions.blockCache ? 'on' : 'off'}`;
  }
  return name;
};

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

/**
 * A throughput case of store-bench.js as the report reads it: its name, and the median (min-max)
 * of decisions/s, Redis and Node CPU per decision and of each of `more`, over its runs.
 */
const summarizeCase = (c, more = []) => ({
  ...c,
  name: caseName(c),
  ...Object.fromEntries(
    ['decisionsPerSecond', 'redisCpuUsPerDecision', 'nodeCpuUsPerDecision', ...more].map((k) => [
      k,
      summary(c.runs.map((r) => r[k])),
    ]),
  ),
  blockedRatio: Math.max(...c.runs.map((r) => r.blockedRatio)),
});

module.exports = { caseName, runStoreBench, summarizeCase };
