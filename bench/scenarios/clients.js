'use strict';
/*
 * 10. The store on each client family it accepts (ioredis, iovalkey, node-redis 6 and 5), beside
 * rate-limiter-flexible's RateLimiterRedis on the same client (node-redis with
 * `useRedisPackage: true`): decisions/s, and Node and Redis CPU per decision, one FIXED_WINDOW
 * limit, on one Redis and on a local 3-master cluster. Part of `npm run bench`; alone, after
 * `npm run build`: `node bench/scenarios/clients.js` (its own redis-server and cluster).
 */

const { CLIENT_FAMILIES } = require('../../kit/clients');
const { onPath, stopAll } = require('../../kit/processes');
const { startLocalCluster, startRedisServer } = require('../../kit/redis-server');
const { machine } = require('../machine');
const { MANY, STORE_MS, log } = require('../settings');
const { range, table } = require('../stats');
const { runStoreBench, summarizeCase } = require('./store-runs');

/** The cases of one target: ours on every family; rate-limiter-flexible on one Redis. */
const casesOn = (target) =>
  CLIENT_FAMILIES.flatMap((client) => [
    { target, client, kind: 'ours', algorithm: 'FIXED_WINDOW', limits: 1 },
    ...(target === 'single' ? [{ target, client, kind: 'rlf' }] : []),
  ]);

/** Runs the cases on `targets` (store-bench's), interleaved. */
async function clients(targets) {
  const cases = Object.keys(targets).flatMap(casesOn);
  log(`clients: ${cases.length} cases x ${MANY} rounds x ${STORE_MS} ms`);
  const raw = await runStoreBench(
    { mode: 'throughput', targets, cases, rounds: MANY, durationMs: STORE_MS },
    { timeoutMs: 300_000 },
  );
  return raw.map((c) => summarizeCase(c, ['scriptsPerDecision']));
}

/** The cases on one Redis and, when redis-cli is on PATH, on a local 3-master cluster too. */
async function clientsScenario(redis) {
  if (!onPath('redis-server') || !onPath('redis-cli')) {
    return clients({ single: { url: redis.url } });
  }
  const cluster = await startLocalCluster({ nodeTimeoutMs: 5_000 });
  try {
    return await clients({ single: { url: redis.url }, cluster: { cluster: cluster.nodes } });
  } finally {
    await cluster.stop();
  }
}

const TARGET_NAMES = { single: 'one Redis', cluster: '3-master cluster' };

/** The report's section for the client families. */
function clientsSection(rows) {
  if (!rows) return [];
  return [
    `### 12. Client families (FIXED_WINDOW, 1 limit; median (min-max) of ${MANY})`,
    '',
    table(
      [
        'Redis',
        'client',
        'case',
        'decisions/s',
        'Node CPU us/decision',
        'Redis CPU us/decision',
        'script calls/decision',
      ],
      rows.map((c) => [
        TARGET_NAMES[c.target] ?? c.target,
        c.client,
        c.kind === 'rlf' ? 'rate-limiter-flexible RateLimiterRedis.consume' : 'store.hit',
        range(c.decisionsPerSecond),
        range(c.nodeCpuUsPerDecision),
        range(c.redisCpuUsPerDecision),
        range(c.scriptsPerDecision, 4),
      ]),
    ),
    '',
  ];
}

module.exports = { clientsScenario, clientsSection };

if (require.main === module) {
  (async () => {
    const redis = await startRedisServer();
    try {
      const m = machine();
      const rows = await clientsScenario(redis);
      process.stdout.write(
        `Machine: ${m.nproc} CPUs (${m.cpu}), Node ${m.node}, ${m.redisServer.split(' sha=')[0]}\n\n` +
          `${clientsSection(rows).join('\n')}\n`,
      );
    } finally {
      await stopAll();
      await redis.stop();
    }
  })().catch((error) => {
    process.stderr.write(`${error.stack}\n`);
    process.exitCode = 1;
  });
}
