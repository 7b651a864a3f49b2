// @ts-check
'use strict';
/*
 * What one decision costs Redis when each script call carries one hit (one hit in flight), from
 * Redis' own INFO commandstats (usec of its script calls, which include the commands they run), which the
 * machine's load moves less than a wall clock: on a private redis-server, 1,000 identities.
 * Cases are interleaved in chunks of CHUNK decisions (each chunk measured on its own, the case
 * order turning from chunk to chunk), so that a slow moment of a loaded machine falls on every
 * case alike. Against rate-limiter-flexible's `consume` and a minimal fixed-window script
 * (INCRBY, PEXPIRE on the first hit) as the floor. Each row states what it decides and which
 * commands Redis ran per decision, as commandstats counted them.
 *
 *   node bench/redis-cost.js [rounds] [hitsPerRound]      (after npm run build:library)
 *   BENCH_LIBRARY=/path/to/other/dist node bench/redis-cost.js   (another build, for a before)
 *
 * Prints two tables and writes bench/redis-cost.json.
 */
const { writeFileSync } = require('node:fs');
const { join } = require('node:path');

const { Redis } = require('ioredis');
const { RateLimiterRedis } = require('rate-limiter-flexible');

// BENCH_LIBRARY: another build's dist (an earlier commit's), measured the same way
const { createRedisStore } = require(process.env.BENCH_LIBRARY ?? '../dist');
const { startRedisServer } = require('../kit/redis-server');
const { parseInfo } = require('./redis-info');
const { versions } = require('./versions');

const ROUNDS = Number(process.argv[2] ?? 5);
const HITS = Number(process.argv[3] ?? 4_000);
const IDENTITIES = 1_000;
const HIGH = 1_000_000;
/** Decisions of one case between two readings of commandstats. */
const CHUNK = 100;

const MINIMAL = `local n = redis.call('INCRBY', KEYS[1], ARGV[1])
if n == tonumber(ARGV[1]) then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return n`;

/** The script calls: every case decides in script calls, whose usec include their commands. */
const SCRIPT_CALL = /^(eval|evalsha|fcall)(_ro)?$/;

/**
 * Calls and usec of every command in commandstats, by lower-case name. The commands a script runs
 * are listed too, and counted inside the script call's usec: only the script calls are summed.
 */
async function commandStats(admin) {
  const info = parseInfo(await admin.info('commandstats'));
  const stats = {};
  for (const [name, value] of Object.entries(info)) {
    const m = /calls=(\d+),usec=(\d+)/.exec(String(value));
    if (m && name.startsWith('cmdstat_')) {
      stats[name.slice(8)] = { calls: Number(m[1]), usec: Number(m[2]) };
    }
  }
  return stats;
}

/** What happened between two readings: script usec and calls, and calls per command. */
function delta(before, after) {
  let usec = 0;
  let scripts = 0;
  const calls = {};
  for (const [name, { calls: n, usec: u }] of Object.entries(after)) {
    const was = before[name] ?? { calls: 0, usec: 0 };
    if (n - was.calls <= 0) continue;
    calls[name] = n - was.calls;
    if (SCRIPT_CALL.test(name)) {
      usec += u - was.usec;
      scripts += n - was.calls;
    }
  }
  return { usec, scripts, calls };
}

const rule = (algorithm, limit) => [
  { action: 'submit', algorithm, windowSeconds: 60, limit, cost: 1 },
];

/** Commands per decision, script calls first, as "FCALL 1, INCRBY 1, PTTL 1". */
function commandsPer(calls, decisions) {
  return Object.entries(calls)
    .filter(([name]) => name !== 'info')
    .sort(
      ([a], [b]) => Number(SCRIPT_CALL.test(b)) - Number(SCRIPT_CALL.test(a)) || a.localeCompare(b),
    )
    .map(([name, n]) => `${name.toUpperCase()} ${+(n / decisions).toFixed(2)}`)
    .join(', ');
}

async function main() {
  const redis = await startRedisServer();
  const client = new Redis(redis.port, '127.0.0.1', { lazyConnect: false });
  const admin = new Redis(redis.port, '127.0.0.1');
  const rlfVersion = versions().rlf;
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
    const slots = rule('CONCURRENCY', HIGH);
    /** @type {Record<string, { states: string, run: (id: string) => Promise<unknown> }>} */
    const cases = {
      FIXED_WINDOW: {
        states: 'one limit of 1,000,000 per 60 s, never blocks',
        run: (id) => store.hit(id, rule('FIXED_WINDOW', HIGH)),
      },
      TOKEN_BUCKET: {
        states: 'one bucket of 1,000,000 per 60 s, never empty',
        run: (id) => store.hit(id, rule('TOKEN_BUCKET', HIGH)),
      },
      'SLIDING_WINDOW (limit 10,000)': {
        states: 'one log of 10,000 per 60 s, never full',
        run: (id) => store.hit(id, rule('SLIDING_WINDOW', 10_000)),
      },
      'CONCURRENCY hit + release': {
        states: 'one slot of 1,000,000, taken then released: two calls, one decision',
        run: async (id) => {
          const { lease } = await store.hit(id, slots);
          if (lease && store.release) await store.release(lease);
        },
      },
      [`rate-limiter-flexible ${rlfVersion} consume`]: {
        states: 'RateLimiterRedis, 1,000,000 points per 60 s',
        run: (id) => limiter.consume(id, 1),
      },
      'minimal script': {
        states: 'the floor: INCRBY, PEXPIRE on the first hit',
        run: (id) => client.evalsha(minimalSha, 1, `min:{${id}}`, 1, 60_000),
      },
    };
    const names = Object.keys(cases);
    const rlfName = names[4];
    const ids = Array.from({ length: IDENTITIES }, (_, i) => `team-${i}`);
    // warm every case (scripts loaded, keys made)
    for (const { run } of Object.values(cases)) for (const id of ids) await run(id);
    const totals = Object.fromEntries(names.map((k) => [k, []]));
    const seen = Object.fromEntries(names.map((k) => [k, {}]));
    for (let round = 0; round < ROUNDS; round++) {
      const sums = Object.fromEntries(names.map((k) => [k, { usec: 0, scripts: 0 }]));
      let h = 0;
      for (let chunk = 0; h < HITS; chunk++) {
        const size = Math.min(CHUNK, HITS - h);
        for (let c = 0; c < names.length; c++) {
          const name = names[(c + chunk) % names.length];
          const before = await commandStats(admin);
          for (let i = 0; i < size; i++) await cases[name].run(ids[(h + i) % IDENTITIES]);
          const d = delta(before, await commandStats(admin));
          sums[name].usec += d.usec;
          sums[name].scripts += d.scripts;
          for (const [cmd, n] of Object.entries(d.calls)) {
            seen[name][cmd] = (seen[name][cmd] ?? 0) + n;
          }
        }
        h += size;
      }
      for (const name of names) {
        totals[name].push({
          usPerDecision: sums[name].usec / HITS,
          callsPerDecision: sums[name].scripts / HITS,
        });
      }
    }
    const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
    const rlf = median(totals[rlfName].map((r) => r.usPerDecision));
    const rows = names.map((name) => {
      const us = totals[name].map((r) => r.usPerDecision);
      return {
        name,
        states: cases[name].states,
        us: median(us),
        min: Math.min(...us),
        max: Math.max(...us),
        vsRlf: median(us) / rlf,
        commands: commandsPer(seen[name], ROUNDS * HITS),
      };
    });
    console.log(
      `one hit in flight, ${IDENTITIES} identities, ${ROUNDS} rounds x ${HITS} decisions per case, ` +
        `interleaved in chunks of ${CHUNK}`,
    );
    console.log(
      '| decision, one per call | what it decides | us in Redis per decision | vs r-l-flexible | commands per decision |',
    );
    console.log('| --- | --- | --- | --- | --- |');
    for (const r of rows) {
      console.log(
        `| ${r.name} | ${r.states} | ${r.us.toFixed(2)} (${r.min.toFixed(2)}-${r.max.toFixed(2)}) | ` +
          `${r.vsRlf.toFixed(2)}x | ${r.commands} |`,
      );
    }
    // batched: 256 in flight, so that one script call carries many hits (see hit-batches.ts)
    const batched = {};
    for (let round = 0; round < ROUNDS; round++) {
      for (const name of ['FIXED_WINDOW', 'CONCURRENCY hit + release', rlfName]) {
        const { run } = cases[name];
        const before = await commandStats(admin);
        let next = 0;
        const worker = async () => {
          while (next < HITS * 5) await run(ids[next++ % IDENTITIES]);
        };
        await Promise.all(Array.from({ length: 256 }, worker));
        const d = delta(before, await commandStats(admin));
        (batched[name] ??= []).push({
          usPerDecision: d.usec / (HITS * 5),
          callsPerDecision: d.scripts / (HITS * 5),
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
