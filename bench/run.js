'use strict';
/*
 * `npm run bench` (after `npm run build`): every measurement of BENCHMARKS.md in one bounded
 * run. It starts its own redis-server on a free port of 127.0.0.1 (or uses REDIS_URL, which it
 * never flushes), its own Redis for the memory test and its own 3-master cluster, one process
 * per HTTP server variant and per load generator, and stops every one of them by pid.
 * Prints the tables and writes bench/results.json. Knobs: see settings.js.
 */

const { mkdtempSync, rmSync, writeFileSync } = require('node:fs');
const os = require('node:os');
const { join } = require('node:path');
const { performance } = require('node:perf_hooks');

const { Redis } = require('ioredis');

const { onPath, stopAll } = require('../kit/processes');
const { startRedisServer } = require('../kit/redis-server');
const { machine } = require('./machine');
const { report, targets } = require('./report');
const { execute } = require('./scenarios/execute');
const { floodScenario } = require('./scenarios/flood');
const { ensurePeers, http } = require('./scenarios/http');
const { latency } = require('./scenarios/latency');
const { memory } = require('./scenarios/memory');
const { scaleOut } = require('./scenarios/scale-out');
const { ceiling, storeThroughput } = require('./scenarios/throughput');
const { twoIdentitiesScenario } = require('./scenarios/two-identities');
const { QUICK, log, started } = require('./settings');
const { versions } = require('./versions');

let tmpDir;

/** REDIS_URL, or a redis-server of our own. */
async function provideRedis(tmp) {
  if (process.env.REDIS_URL) {
    log('store and HTTP runs use REDIS_URL (never flushed; keys under bench-* are deleted)');
    return { url: process.env.REDIS_URL, owned: false, stop: async () => undefined };
  }
  if (!onPath('redis-server'))
    throw new Error('npm run bench needs redis-server on PATH or REDIS_URL');
  const server = await startRedisServer(undefined, { dir: tmp });
  log(`redis-server on port ${server.port}`);
  return { url: server.url, owned: true, stop: server.stop };
}

function header(m, v, quick) {
  const load = (values) => values.map((x) => x.toFixed(2)).join(' ');
  return [
    `Code: ${m.commit}${quick ? ' (BENCH_QUICK=1: short runs, one round each)' : ''}`,
    `Machine: ${m.nproc} CPUs (${m.cpu}), Node ${m.node}, ${m.redisServer.split(' sha=')[0]}; ` +
      `load average at start ${load(m.loadAverage)}, at end ${load(m.loadAverageEnd)}`,
    `Compared with: rate-limiter-flexible ${v.rlf} (store), graphql-rate-limit-directive ` +
      `${v.grld} on rate-limiter-flexible ${v.peersRlf} and graphql ${v.peersGraphql} ` +
      `(@graphql-tools/utils ${v.peersUtils}); ours on graphql ${v.graphql}, ioredis ${v.ioredis}`,
  ];
}

async function main() {
  ensurePeers();
  const tmp = mkdtempSync(join(os.tmpdir(), 'gqlarl-bench-'));
  tmpDir = tmp;
  const results = {
    startedAt: new Date().toISOString(),
    quick: QUICK,
    machine: machine(),
    versions: versions(),
  };
  log(`machine: ${results.machine.nproc} cpu, ${results.machine.cpu}, node ${process.version}`);
  let redis;
  let client;
  try {
    redis = await provideRedis(tmp);
    client = new Redis(redis.url, { lazyConnect: true, maxRetriesPerRequest: 1 });
    await client.connect();
    results.redis = { url: redis.owned ? redis.url : '(REDIS_URL)', owned: redis.owned };

    results.throughput = await storeThroughput(redis);
    results.ceiling = await ceiling(redis, client);
    results.latency = await latency(redis);
    results.http = await http(redis, client, tmp);
    results.memory = await memory(tmp);
    results.scaleOut = await scaleOut(redis);
    results.execute = await execute(redis);
    results.twoIdentities = await twoIdentitiesScenario(redis);
    results.flood = await floodScenario(redis);
    results.targets = targets(results);
    results.seconds = (performance.now() - started) / 1000;
    results.machine.loadAverageEnd = os.loadavg();

    const text = [...header(results.machine, results.versions, QUICK), '', report(results)].join(
      '\n',
    );
    process.stdout.write(`\n${text}\nTotal: ${results.seconds.toFixed(0)} s\n`);
    writeFileSync(
      join(__dirname, 'results.json'),
      `${JSON.stringify({ ...results, table: text }, null, 2)}\n`,
    );
    log('wrote bench/results.json');
  } finally {
    client?.disconnect();
    await stopAll();
    await redis?.stop();
    rmSync(tmp, { recursive: true, force: true });
  }
}

for (const sig of ['SIGINT', 'SIGTERM']) {
  process.once(sig, () => {
    void stopAll().finally(() => {
      if (tmpDir) rmSync(tmpDir, { recursive: true, force: true });
      process.exit(130);
    });
  });
}

main().catch((error) => {
  process.stderr.write(`bench failed: ${error && error.stack ? error.stack : String(error)}\n`);
  process.exitCode = 1;
});
