// @ts-check
'use strict';
/*
 * What one decision costs Redis when each script call carries one hit (one hit in flight), from
 * Redis' own INFO commandstats (usec of its script calls, which include the commands they run), which the
 * machine's load moves less than a wall clock: on a private redis-server, 1,000 identities,
 * cases interleaved round after round. Against rate-limiter-flexible's `consume` and a minimal
 * fixed-window script (INCRBY, PEXPIRE on the first hit) as the floor.
 *
 *   node bench/redis-cost.js [rounds] [hitsPerRound]      (after npm run build:library)
 *   BENCH_LIBRARY=/path/to/other/dist node bench/redis-cost.js   (another build, for a before)
 *
 * Prints a table and writes bench/redis-cost.json.
 */
const { writeFileSync } = require('node:fs');
const { join } = require('node:path');

const { Redis } = require('ioredis');
const { RateLimiterRedis } = require('rate-limiter-flexible');

// BENCH_LIBRARY: another build's dist (an earlier commit's), measured the same way
const { createRedisStore } = require(process.env.BENCH_LIBRARY ?? '../dist');
const { startRedisServer } = require('../kit/redis-server');
const { parseInfo } = require('./redis-info');

const ROUNDS = Number(process.argv[2] ?? 5);
const HITS = Number(process.argv[3] ?? 4_000);
const IDENTITIES = 1_000;
const HIGH = 1_000_000;

const MINIMAL = `local n = redis.call('INCRBY', KEYS[1], ARGV[1])
if n == tonumber(ARGV[1]) then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return n`;

/**
 * usec and calls Redis spent in script calls (EVAL, EVALSHA, FCALL and their _RO forms): every
 * case decides in one script call, and the commands a script runs are counted inside its own
 * usec (commandstats also lists them, which summing would count twice).
 */
async function commandCost(admin) {
  const info = parseInfo(await admin.info('commandstats'));
  let usec = 0;
  let calls = 0;
  const by = {};
  for (const [name, value] of Object.entries(info)) {
    if (!/^cmdstat_(eval|evalsha|fcall)(_ro)?$/.test(name)) continue;
    const m = /calls=(\d+),usec=(\d+)/.exec(String(value));
    if (!m) continue;
    calls += Number(m[1]);
    usec += Number(m[2]);
    by[name.slice(8)] = Number(m[2]);
  }
  return { usec, calls, by };
}

const rule = (algorithm, limit) => [
  { action: 'submit', algorithm, windowSeconds: 60, limit, cost: 1 },
];

async function main() {
  const redis = await startRedisServer();
  const client = new Redis(redis.port, '127.0.0.1', { lazyConnect: false });
  const admin = new Redis(redis.port, '127.0.0.1');
  try {
    const store = createRedisStore({ client, blockCache: false });
    if (store.ready) await store.ready();
    const limiter = new RateLimiterRedis({
      storeClient: client,
      keyPrefix: 'rlf',
      points: HIGH,
      duration: 60,
    });
    const minimalSha = String(await admin.script('LOAD', MINIMAL));
    const cases = {
      FIXED_WINDOW: (id) => store.hit(id, rule('FIXED_WINDOW', HIGH)),
      TOKEN_BUCKET: (id) => store.hit(id, rule('TOKEN_BUCKET', HIGH)),
      'SLIDING_WINDOW (limit 10,000)': (id) => store.hit(id, rule('SLIDING_WINDOW', 10_000)),
      'rate-limiter-flexible consume': (id) => limiter.consume(id, 1),
      'minimal script': (id) => client.evalsha(minimalSha, 1, `min:{${id}}`, 1, 60_000),
    };
    const ids = Array.from({ length: IDENTITIES }, (_, i) => `team-${i}`);
    // warm every case (scripts loaded, keys made)
    for (const run of Object.values(cases)) for (const id of ids) await run(id);
    const totals = Object.fromEntries(Object.keys(cases).map((k) => [k, []]));
    for (let round = 0; round < ROUNDS; round++) {
      for (const [name, run] of Object.entries(cases)) {
        const before = await commandCost(admin);
        for (let h = 0; h < HITS; h++) await run(ids[h % IDENTITIES]);
        const after = await commandCost(admin);
        const by = {};
        for (const [cmd, usec] of Object.entries(after.by)) {
          const d = usec - (before.by[cmd] ?? 0);
          if (d > 0) by[cmd] = d;
        }
        totals[name].push({
          usPerDecision: (after.usec - before.usec) / HITS,
          callsPerDecision: (after.calls - before.calls) / HITS,
          by,
        });
      }
    }
    const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
    const rlf = median(totals['rate-limiter-flexible consume'].map((r) => r.usPerDecision));
    const rows = Object.entries(totals).map(([name, runs]) => {
      const us = runs.map((r) => r.usPerDecision);
      return {
        name,
        us: median(us),
        min: Math.min(...us),
        max: Math.max(...us),
        vsRlf: median(us) / rlf,
        commands: Object.keys(runs[runs.length - 1].by).join(' '),
        callsPerDecision: median(runs.map((r) => r.callsPerDecision)),
      };
    });
    console.log(
      `one hit in flight, ${IDENTITIES} identities, ${ROUNDS} rounds x ${HITS} decisions per case`,
    );
    console.log(
      '| decision, one per call | us in Redis per decision | vs r-l-flexible | commands |',
    );
    console.log('| --- | --- | --- | --- |');
    for (const r of rows) {
      console.log(
        `| ${r.name} | ${r.us.toFixed(2)} (${r.min.toFixed(2)}-${r.max.toFixed(2)}) | ` +
          `${r.vsRlf.toFixed(2)}x | ${r.commands} |`,
      );
    }
    // batched: 256 in flight, so that one script call carries many hits (see hit-batches.ts)
    const batched = {};
    for (let round = 0; round < ROUNDS; round++) {
      for (const name of ['FIXED_WINDOW', 'rate-limiter-flexible consume']) {
        const run = cases[name];
        const before = await commandCost(admin);
        let next = 0;
        const worker = async () => {
          while (next < HITS * 5) await run(ids[next++ % IDENTITIES]);
        };
        await Promise.all(Array.from({ length: 256 }, worker));
        const after = await commandCost(admin);
        (batched[name] ??= []).push({
          usPerDecision: (after.usec - before.usec) / (HITS * 5),
          callsPerDecision: (after.calls - before.calls) / (HITS * 5),
        });
      }
    }
    console.log('\n256 in flight (batched):');
    console.log('| decision | us in script per decision | script calls per decision |');
    console.log('| --- | --- | --- |');
    for (const [name, runs] of Object.entries(batched)) {
      const us = runs.map((r) => r.usPerDecision);
      console.log(
        `| ${name} | ${median(us).toFixed(2)} (${Math.min(...us).toFixed(2)}-` +
          `${Math.max(...us).toFixed(2)}) | ${median(runs.map((r) => r.callsPerDecision)).toFixed(4)} |`,
      );
    }
    writeFileSync(
      join(__dirname, 'redis-cost.json'),
      JSON.stringify({ rows, totals, batched }, null, 2),
    );
    if (store.close) await store.close();
  } finally {
    client.disconnect();
    admin.disconnect();
    await redis.stop();
  }
}

main().catch((error) => {
  console.error(error);
  process.exitCode = 1;
});
