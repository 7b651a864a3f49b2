'use strict';
/*
 * `npm run bench` (after `npm run build`): every measurement of BENCHMARKS.md in one bounded
 * run. It starts its own redis-server on a free port of 127.0.0.1 (or uses REDIS_URL, which it
 * never flushes), its own Redis for the memory test and its own 3-master cluster, one process
 * per HTTP server variant and per load generator, and stops every one of them by pid.
 * Prints the tables and writes bench/results.json (bench/results-only.json for a run of some
 * scenarios, BENCH_ONLY). Knobs: see settings.js.
 */

const { mkdtempSync, rmSync, writeFileSync } = require('node:fs');
const os = require('node:os');
const { join } = require('node:path');
const { performance } = require('node:perf_hooks');

const { Redis } = require('ioredis');

const { onPath, stopAll } = require('../kit/processes');
const { startRedisServer } = require('../kit/redis-server');
const { machine } = require('./machine');
const { clientsScenario } = require('./scenarios/clients');
const { report, targets } = require('./report');
const { apollo } = require('./scenarios/apollo');
const { execute } = require('./scenarios/execute');
const { floodScenario } = require('./scenarios/flood');
const { ensurePeers, http } = require('./scenarios/http');
const { latency } = require('./scenarios/latency');
const { memory } = require('./scenarios/memory');
const { pricing } = require('./scenarios/pricing');
const { scaleOut } = require('./scenarios/scale-out');
const { ceiling, storeThroughput } = require('./scenarios/throughput');
const { twoIdentitiesScenario } = require('./scenarios/two-identities');
const { ONLY, QUICK, log, started } = require('./settings');
const { versions } = require('./versions');

let tmpDir;

/** The scenarios a run of some (BENCH_ONLY) may pick, in the order a full run makes them. */
const SCENARIOS = {
  execute,
  twoIdentities: twoIdentitiesScenario,
  flood: floodScenario,
  apollo,
  pricing: () => pricing(),
  clients: clientsScenario,
};

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
    `Code: ${m.commit}${quick ? ' (BENCH_QUICK=1: short runs, one round each; quick: not comparable)' : ''}` +
      (ONLY.length > 0 ? ` (BENCH_ONLY=${ONLY.join(',')})` : ''),
    `Machine: ${m.nproc} CPUs (${m.cpu}), Node ${m.node}, ${m.redisServer.split(' sha=')[0]}; ` +
      `load average at start ${load(m.loadAverage)}, at end ${load(m.loadAverageEnd)}`,
    `Compared with: rate-limiter-flexible ${v.rlf} (store), graphql-rate-limit-directive ` +
      `${v.grld} on rate-limiter-flexible ${v.peersRlf} and graphql ${v.peersGraphql} ` +
      `(@graphql-tools/utils ${v.peersUtils}); ours on graphql ${v.graphql}, ioredis ${v.ioredis}`,
  ];
}

async function main() {
  const unknown = ONLY.filter((name) => !(name in SCENARIOS));
  if (unknown.length > 0) {
    throw new Error(
      `BENCH_ONLY: no scenario ${unknown.join(', ')}; pick from ${Object.keys(SCENARIOS).join(', ')}`,
    );
  }
  if (ONLY.length === 0 || ONLY.includes('execute')) ensurePeers();
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

    if (ONLY.length === 0) {
      results.throughput = await storeThroughput(redis);
      results.ceiling = await ceiling(redis, client);
      results.latency = await latency(redis);
      results.http = await http(redis, client, tmp);
      results.memory = await memory(tmp);
      results.scaleOut = await scaleOut(redis);
    }
    for (const [name, run] of Object.entries(SCENARIOS)) {
      if (ONLY.length === 0 || ONLY.includes(name)) results[name] = await run(redis);
    }
    results.targets = targets(results);
    results.seconds = (performance.now() - started) / 1000;
    results.machine.loadAverageEnd = os.loadavg();

    const text = [...header(results.machine, results.versions, QUICK), '', report(results)].join(
      '\n',
    );
    process.stdout.write(`\n${text}\nTotal: ${results.seconds.toFixed(0)} s\n`);
    // a run of some scenarios keeps the full run's results
    const file = ONLY.length > 0 ? 'results-only.json' : 'results.json';
    writeFileSync(
      join(__dirname, file),
      `${JSON.stringify({ ...results, table: text }, null, 2)}\n`,
    );
    log(`wrote bench/${file}`);
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
