'use strict';
/*
 * A flood of blocked hits and the Redis store's blockCache, from one Node process, run as a
 * child of bench/run.js:
 *   node bench/flood-bench.js '<json config>'
 * One identity hits a FIXED_WINDOW limit of `floodLimit` per `floodWindowS` seconds at full
 * speed, with `blockCache` on and off (one store and client each), in interleaved rounds:
 *   flood@1, flood@N  the flood alone, 1 and N hits in flight: script calls Redis ran (INFO
 *                     commandstats), Redis CPU, blocked decisions/s in process
 *   flood+others      the flood at N in flight while a second loop of `othersInFlight` hits of
 *                     other identities (limits that never block) measures their latency
 *   others            that second loop alone, the reference for its latency
 * And, over `allowedRounds` rounds, the allowed path: decisions/s of hits that never block with
 * the cache off, on and empty, and on with one blocked counter in it (from then on every hit
 * looks its keys up).
 * Each flood hit waits for an event-loop turn (setImmediate) before the next, as requests
 * arriving over a network do: answers from the cache never touch I/O, so a loop of them alone
 * would starve every other request of the process.
 * Prints one JSON line with every run's numbers.
 */

const { randomUUID } = require('node:crypto');
const { performance } = require('node:perf_hooks');
const { setImmediate: nextTurn } = require('node:timers/promises');

const { Redis } = require('ioredis');

const { createRedisStore } = require('../dist');
const { sleep } = require('../kit/processes');
const { deleteKeysUnder } = require('../kit/redis-server');
const { scriptStats, totalRedisCpu } = require('./redis-info');
const { quantile } = require('./stats');
const { answerJson } = require('./children');

const config = JSON.parse(process.argv[2] || '{}');
const HIGH = 1_000_000;
const FLOOD_ID = 'flooder';
const floodRules = [
  {
    action: 'submit',
    algorithm: 'FIXED_WINDOW',
    windowSeconds: config.floodWindowS,
    limit: config.floodLimit,
    cost: 1,
  },
];
const otherRules = [
  { action: 'submit', algorithm: 'FIXED_WINDOW', windowSeconds: 60, limit: HIGH, cost: 1 },
];
const ids = Array.from({ length: config.identities }, (_, i) => `team-${i + 1}`);

/** The client options the reference server uses (fail fast, never resend a command). */
const { CLIENT_OPTIONS } = require('../server/dist/redis-client');

async function newStore(prefix, blockCache) {
  const client = new Redis(config.url, CLIENT_OPTIONS);
  await client.connect();
  return { client, store: createRedisStore({ client, prefix, blockCache }) };
}

/** The flood: `inFlight` loops of hits by one identity until `deadline`. */
async function flood(store, inFlight, deadline, counts) {
  const worker = async () => {
    while (performance.now() < deadline) {
      const decision = await store.hit(FLOOD_ID, floodRules);
      if (decision.allowed) counts.allowed++;
      else if (decision.cached) counts.cached++;
      else counts.blocked++;
      await nextTurn();
    }
  };
  await Promise.all(Array.from({ length: inFlight }, worker));
}

/** Hits of other identities, never blocked, until `deadline`; latencies when asked. */
async function others(store, inFlight, deadline, latencies) {
  let done = 0;
  const worker = async () => {
    while (performance.now() < deadline) {
      const t0 = performance.now();
      const decision = await store.hit(ids[(Math.random() * ids.length) | 0], otherRules);
      if (!decision.allowed) throw new Error('a hit of another identity was blocked');
      latencies?.push(performance.now() - t0);
      done++;
    }
  };
  await Promise.all(Array.from({ length: inFlight }, worker));
  return done;
}

/** Runs `body(deadline)` for `ms` and returns what Redis and this process did meanwhile. */
async function measure(admin, ms, body) {
  await sleep(100);
  const cpu0 = await totalRedisCpu(admin);
  const s0 = await scriptStats(admin);
  const node0 = process.cpuUsage();
  const started = performance.now();
  const extra = await body(started + ms);
  const elapsed = (performance.now() - started) / 1000;
  const node = process.cpuUsage(node0);
  const s1 = await scriptStats(admin);
  const cpu1 = await totalRedisCpu(admin);
  return {
    elapsed,
    scriptCalls: s1.calls - s0.calls,
    redisCpuS: cpu1 - cpu0,
    nodeCpuS: (node.user + node.system) / 1e6,
    ...extra,
  };
}

const floodFigures = (run, counts) => ({
  ...run,
  scriptCallsPerSecond: run.scriptCalls / run.elapsed,
  // what the cache is for: blocked hits that still reached Redis, per period the flood is blocked
  redisBlockedPerBlockPeriod: counts.blocked / (run.elapsed / config.floodWindowS),
  blockedPerSecond: (counts.blocked + counts.cached) / run.elapsed,
  cachedShare: counts.cached / Math.max(1, counts.blocked + counts.cached),
  allowedPerSecond: counts.allowed / run.elapsed,
  redisCpuShare: run.redisCpuS / run.elapsed,
});

const latencyFigures = (latencies, done, elapsed) => {
  latencies.sort((a, b) => a - b);
  return {
    othersPerSecond: done / elapsed,
    othersP50Ms: quantile(latencies, 0.5),
    othersP99Ms: quantile(latencies, 0.99),
  };
};

async function floodRound(admin, v) {
  const { floodMs, floodInFlight, othersInFlight } = config;
  for (const inFlight of [1, floodInFlight]) {
    const counts = { allowed: 0, blocked: 0, cached: 0 };
    const run = await measure(admin, floodMs, (deadline) =>
      flood(v.store, inFlight, deadline, counts),
    );
    (v.runs[`flood@${inFlight}`] ??= []).push(floodFigures(run, counts));
  }
  const counts = { allowed: 0, blocked: 0, cached: 0 };
  const latencies = [];
  let done = 0;
  const both = await measure(admin, floodMs, async (deadline) => {
    [, done] = await Promise.all([
      flood(v.store, floodInFlight, deadline, counts),
      others(v.store, othersInFlight, deadline, latencies),
    ]);
  });
  (v.runs['flood+others'] ??= []).push({
    ...floodFigures(both, counts),
    ...latencyFigures(latencies, done, both.elapsed),
  });
  const alone = [];
  let aloneDone = 0;
  const ref = await measure(admin, floodMs, async (deadline) => {
    aloneDone = await others(v.store, othersInFlight, deadline, alone);
  });
  (v.runs.others ??= []).push({ ...ref, ...latencyFigures(alone, aloneDone, ref.elapsed) });
}

async function main() {
  const admin = new Redis(config.url, CLIENT_OPTIONS);
  await admin.connect();
  const prefix = `bench-flood-${randomUUID().slice(0, 8)}:`;
  const variants = [];
  for (const blockCache of [true, false]) {
    const name = blockCache ? 'on' : 'off';
    variants.push({ blockCache, ...(await newStore(`${prefix}${name}:`, blockCache)), runs: {} });
  }
  // the allowed path: off, on with an empty cache, on with one blocked counter in it
  const allowed = [];
  for (const [id, blockCache] of [
    ['off', false],
    ['on, empty', true],
    ['on, one counter cached', true],
  ]) {
    const store = await newStore(`${prefix}allowed-${allowed.length}:`, blockCache);
    allowed.push({ id, ...store, runs: [] });
  }
  const primeRules = [{ ...otherRules[0], windowSeconds: 3600, limit: 1, action: 'prime' }];
  const last = allowed[allowed.length - 1];
  await last.store.hit('blocked-one', primeRules);
  if ((await last.store.hit('blocked-one', primeRules)).allowed) throw new Error('prime failed');

  const warm = performance.now() + config.warmupMs;
  for (const v of variants) {
    const counts = { allowed: 0, blocked: 0, cached: 0 };
    await Promise.all([flood(v.store, 16, warm, counts), others(v.store, 16, warm)]);
  }
  for (const a of allowed) await others(a.store, config.inFlight, performance.now() + 200);
  for (let round = 0; round < Math.max(config.rounds, config.allowedRounds); round++) {
    if (round < config.rounds) for (const v of variants) await floodRound(admin, v);
    if (round >= config.allowedRounds) continue;
    for (const a of allowed) {
      let done = 0;
      const run = await measure(admin, config.allowedMs, async (deadline) => {
        done = await others(a.store, config.inFlight, deadline);
      });
      a.runs.push({
        decisionsPerSecond: done / run.elapsed,
        nodeCpuUsPerDecision: (run.nodeCpuS * 1e6) / done,
        redisCpuUsPerDecision: (run.redisCpuS * 1e6) / done,
      });
    }
  }
  await deleteKeysUnder(admin, prefix);
  for (const x of [...variants, ...allowed]) x.client.disconnect();
  admin.disconnect();
  return {
    flood: variants.map((v) => ({ blockCache: v.blockCache, runs: v.runs })),
    allowed: allowed.map((a) => ({ id: a.id, runs: a.runs })),
  };
}

answerJson(main());
