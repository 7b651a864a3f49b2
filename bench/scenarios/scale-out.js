'use strict';
/* 5. Scale-out: a local 3-master Redis Cluster against one Redis. */

const { onPath } = require('../../kit/processes');
const { startLocalCluster } = require('../../kit/redis-server');
const { ROUNDS, STORE_MS, log } = require('../settings');
const { summary } = require('../stats');
const { caseName, runStoreBench } = require('./store-runs');

const CASES = [1, 2].flatMap((limits) =>
  ['single', 'cluster'].map((target) => ({
    target,
    kind: 'ours',
    algorithm: 'FIXED_WINDOW',
    limits,
  })),
);

async function scaleOut(redis) {
  if (!onPath('redis-server') || !onPath('redis-cli')) {
    return { skipped: 'redis-server or redis-cli is not on PATH' };
  }
  const cluster = await startLocalCluster({ nodeTimeoutMs: 5_000 });
  try {
    const ports = cluster.nodes.map((n) => n.port);
    log(`scale-out: 3-master cluster on ports ${ports.join(', ')}`);
    const raw = await runStoreBench(
      {
        mode: 'throughput',
        targets: { single: { url: redis.url }, cluster: { cluster: cluster.nodes } },
        cases: CASES,
        rounds: ROUNDS,
        durationMs: STORE_MS,
      },
      { timeoutMs: 120_000 },
    );
    return {
      ports,
      cases: raw.map((c) => ({
        ...c,
        name: `${c.target === 'cluster' ? '3-master cluster' : 'one Redis'}: ${caseName(c)}`,
        decisionsPerSecond: summary(c.runs.map((r) => r.decisionsPerSecond)),
        redisCpuUsPerDecision: summary(c.runs.map((r) => r.redisCpuUsPerDecision)),
        scriptsPerDecision: summary(c.runs.map((r) => r.scriptsPerDecision)),
      })),
    };
  } finally {
    await cluster.stop();
  }
}

module.exports = { scaleOut };
