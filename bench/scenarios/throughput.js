'use strict';
/* 1. Store decisions/s and Redis CPU per decision, and the redis-benchmark ceiling. */

const { deleteKeysUnder } = require('../../kit/redis-server');
const { onPath, startProcess } = require('../../kit/processes');
const { redisCpuSeconds } = require('../redis-info');
const {
  ALGORITHMS,
  IDENTITIES,
  IN_FLIGHT,
  MANY,
  RB_REQUESTS,
  ROUNDS,
  STORE_MS,
  log,
} = require('../settings');
const { summary } = require('../stats');
const { runStoreBench, summarizeCase } = require('./store-runs');

const CASES = [
  ...ALGORITHMS.flatMap((algorithm) => [
    { kind: 'ours', algorithm, limits: 1 },
    { kind: 'ours', algorithm, limits: 2 },
  ]),
  { kind: 'rlf' },
];

/** Decisions/s of each case in one Node process, MANY interleaved rounds. */
async function storeThroughput(redis) {
  log(`store throughput: ${CASES.length} cases x ${MANY} rounds x ${STORE_MS} ms`);
  const raw = await runStoreBench(
    {
      mode: 'throughput',
      targets: { single: { url: redis.url } },
      cases: CASES,
      rounds: MANY,
      durationMs: STORE_MS,
    },
    { profile: 'store', timeoutMs: 180_000 },
  );
  return raw.map((c) => summarizeCase(c, ['scriptUsPerDecision']));
}

/** The minimal fixed-window script redis-benchmark runs as the ceiling. */
const MINIMAL_SCRIPT =
  "local n = redis.call('INCR', KEYS[1]) " +
  "if n == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end return n";

/** What Redis itself sustains for a minimal script, with no client library in the way. */
async function ceiling(redis, client) {
  if (!onPath('redis-benchmark')) {
    log('redis-benchmark not on PATH: ceiling skipped');
    return { skipped: 'redis-benchmark is not on PATH' };
  }
  const sha = await client.script('LOAD', MINIMAL_SCRIPT);
  const u = new URL(redis.url);
  const args = ['-h', u.hostname, '-p', u.port || '6379'];
  if (u.password) args.push('-a', decodeURIComponent(u.password), '--no-auth-warning');
  args.push('-c', String(IN_FLIGHT), '-P', '16', '-n', String(RB_REQUESTS));
  args.push('-r', String(IDENTITIES));
  args.push('--csv', 'EVALSHA', sha, '1', 'bench-rb:{__rand_int__}', '60000');
  log(`redis-benchmark ceiling: -c ${IN_FLIGHT} -P 16, ${ROUNDS} runs`);
  const runs = [];
  for (let round = 0; round < ROUNDS; round++) {
    const cpu0 = await redisCpuSeconds(client);
    const child = startProcess('redis-benchmark', args);
    const { code } = await child.exited;
    await child.stop();
    const cpu1 = await redisCpuSeconds(client);
    if (code !== 0) throw new Error(`redis-benchmark failed: ${child.output()}`);
    const last = child.stdout().trim().split('\n').pop();
    runs.push({
      decisionsPerSecond: Number(JSON.parse(`[${last}]`)[1]),
      redisCpuUsPerDecision: ((cpu1 - cpu0) * 1e6) / RB_REQUESTS,
    });
  }
  await deleteKeysUnder(client, 'bench-rb:');
  return {
    command: `redis-benchmark ${args.join(' ')}`,
    runs,
    decisionsPerSecond: summary(runs.map((r) => r.decisionsPerSecond)),
    redisCpuUsPerDecision: summary(runs.map((r) => r.redisCpuUsPerDecision)),
  };
}

module.exports = { ceiling, storeThroughput };
