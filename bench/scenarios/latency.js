'use strict';
/* 2. Latency per decision, at 1 and 16 calls in flight. */

const { QUICK, ROUNDS, log } = require('../settings');
const { summary } = require('../stats');
const { caseName, runStoreBench } = require('./store-runs');

const CASES = [
  { kind: 'ping' },
  { kind: 'ours', algorithm: 'FIXED_WINDOW', limits: 1 },
  { kind: 'ours', algorithm: 'FIXED_WINDOW', limits: 2 },
  { kind: 'rlf' },
];

async function latency(redis) {
  const durationMs = QUICK ? 300 : 700;
  log(`latency: ${CASES.length} cases x 2 in-flight levels x ${ROUNDS} rounds x ${durationMs} ms`);
  const raw = await runStoreBench(
    {
      mode: 'latency',
      targets: { single: { url: redis.url } },
      cases: CASES,
      rounds: ROUNDS,
      durationMs,
      warmupMs: 300,
      inFlights: [1, 16],
    },
    { timeoutMs: 120_000 },
  );
  return raw.map((c) => ({
    ...c,
    name: caseName(c),
    byInFlight: Object.fromEntries(
      Object.entries(c.runs).map(([n, runs]) => [
        n,
        {
          p50Ms: summary(runs.map((r) => r.p50Ms)),
          p99Ms: summary(runs.map((r) => r.p99Ms)),
          samples: runs.reduce((a, r) => a + r.samples, 0),
        },
      ]),
    ),
  }));
}

module.exports = { latency };
