'use strict';
/*
 * 7. A field limited on two identities (per email and per IP, as a login) against one limit on
 * one identity and two limits on one identity, at the store: decisions/s and Redis CPU.
 */

const { onPath } = require('../../kit/processes');
const { startLocalCluster } = require('../../kit/redis-server');
const { MANY, STORE_MS, log } = require('../settings');
const { range, ratio, table, times } = require('../stats');
const { runStoreBench, summarizeCase } = require('./store-runs');

const SOURCES = ['args.email', 'ip'];

/** The cases on one target: the same FIXED_WINDOW rules, counted on one or two identities. */
const casesOn = (target) => [
  { target, kind: 'ours', algorithm: 'FIXED_WINDOW', limits: 1 },
  { target, kind: 'ours', algorithm: 'FIXED_WINDOW', limits: 2 },
  { target, kind: 'ours', algorithm: 'FIXED_WINDOW', limits: 2, sources: SOURCES },
];

/**
 * Runs the cases on every target of `targets` (store-bench's: `single` is `{ url }`, and a
 * `cluster: { cluster: nodes }` entry adds the same cases on a Redis Cluster), interleaved.
 */
async function twoIdentities(redis, targets = { single: { url: redis.url } }) {
  const cases = Object.keys(targets).flatMap(casesOn);
  log(`two identities: ${cases.length} cases x ${MANY} rounds x ${STORE_MS} ms`);
  const raw = await runStoreBench(
    { mode: 'throughput', targets, cases, rounds: MANY, durationMs: STORE_MS },
    { timeoutMs: 180_000 },
  );
  return raw.map((c) => summarizeCase(c, ['scriptsPerDecision']));
}

/** The cases on one Redis and, when redis-cli is on PATH, on a local 3-master cluster too. */
async function twoIdentitiesScenario(redis) {
  if (!onPath('redis-server') || !onPath('redis-cli')) return twoIdentities(redis);
  const cluster = await startLocalCluster({ nodeTimeoutMs: 5_000 });
  try {
    const targets = { single: { url: redis.url }, cluster: { cluster: cluster.nodes } };
    return await twoIdentities(redis, targets);
  } finally {
    await cluster.stop();
  }
}

const TARGET_NAMES = { single: 'one Redis', cluster: '3-master cluster' };

/** The report's section for two identities. */
function twoIdentitiesSection(rows) {
  const one = (target) => rows.find((c) => c.target === target && c.limits === 1);
  return [
    `### 7. Two identities on one field (store.hit, FIXED_WINDOW windows 60 s and 3,600 s; median (min-max) of ${MANY})`,
    '',
    table(
      [
        'Redis',
        'case',
        'decisions/s',
        'cost vs 1 limit (1/throughput)',
        'Node CPU us/decision',
        'Redis CPU us/decision',
        'Redis CPU vs 1 limit',
        'script calls/decision',
      ],
      rows.map((c) => [
        TARGET_NAMES[c.target] ?? c.target,
        c.name,
        range(c.decisionsPerSecond),
        times(ratio(one(c.target).decisionsPerSecond.median, c.decisionsPerSecond.median)),
        range(c.nodeCpuUsPerDecision),
        range(c.redisCpuUsPerDecision),
        times(ratio(c.redisCpuUsPerDecision.median, one(c.target).redisCpuUsPerDecision.median)),
        range(c.scriptsPerDecision),
      ]),
    ),
    '',
  ];
}

/** Two identities' targets: [target, value, met, unit]. */
function twoIdentitiesTargets(rows) {
  const on = (target, sources) =>
    rows.find(
      (c) => c.target === target && c.limits === (sources ? 2 : 1) && !!c.sources === sources,
    );
  if (!on('cluster', true)) return [];
  const cost = ratio(
    on('cluster', false).decisionsPerSecond.median,
    on('cluster', true).decisionsPerSecond.median,
  );
  return [
    ['two identities on a 3-master cluster <= 2x the cost of one limit', cost, cost <= 2, 'x'],
  ];
}

module.exports = {
  twoIdentities,
  twoIdentitiesScenario,
  twoIdentitiesSection,
  twoIdentitiesTargets,
};
