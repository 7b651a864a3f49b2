'use strict';
/*
 * Store-level measurements from one Node process, run as a child of bench/run.js:
 *   node bench/store-bench.js '<json config>'
 * Modes (config.mode):
 *   throughput  decisions/s with `inFlight` calls in flight over `identities` identities, per
 *               case (`sources`: one identity per rule, as per email and per IP), in
 *               interleaved rounds; Redis CPU per decision from INFO cpu deltas and
 *               the time Redis spent inside EVALSHA from INFO commandstats deltas.
 *   latency     per-decision latency (p50/p99) at given numbers of calls in flight.
 *   memory      used_memory delta per key over many identities (needs a Redis it may flush).
 * Prints one JSON line with every run's numbers; bench/scenarios/ summarize them.
 */

const { randomUUID } = require('node:crypto');
const { performance } = require('node:perf_hooks');

const { Cluster, Redis } = require('ioredis');
const { RateLimiterRedis } = require('rate-limiter-flexible');

const { createRedisStore } = require('../dist');
const { connectClient } = require('../kit/clients');
const { sleep } = require('../kit/processes');
const { deleteKeysUnder } = require('../kit/redis-server');
const { parseInfo, scriptStats, totalRedisCpu } = require('./redis-info');
const { quantile } = require('./stats');
const { answerJson } = require('./children');

const config = JSON.parse(process.argv[2] || '{}');
const HIGH = 1_000_000; // limits high enough that nothing blocks (see BENCHMARKS.md on TOKEN_BUCKET)
const SLIDING_HIGH = 10_000; // the most a SLIDING_WINDOW log may hold; with 1-2 s windows, plenty

/** The client options the reference server uses (fail fast, never resend a command). */
const { CLIENT_OPTIONS, CLUSTER_OPTIONS } = require('../server/dist/redis-client');

/** `count` rules of `algorithm`; with `sources`, rule i counts against identity source i. */
function rulesFor(algorithm, count, sources) {
  // Sliding-window logs use short windows so every log holds a steady number of live entries
  // (about decisions/s / identities per second of window) instead of growing through the run.
  const windows = algorithm === 'SLIDING_WINDOW' ? [1, 2] : [60, 3600];
  return windows.slice(0, count).map((windowSeconds, i) => ({
    action: 'submit',
    algorithm,
    windowSeconds,
    limit: algorithm === 'SLIDING_WINDOW' ? SLIDING_HIGH : HIGH,
    cost: 1,
    by: sources?.[i],
  }));
}

/** A client of `family` (kit/clients.js) for `target`; ioredis as above by default. */
async function connect(target, family = 'ioredis') {
  if (family !== 'ioredis') {
    return connectClient(family, target.cluster ? { nodes: target.cluster } : { url: target.url });
  }
  let client;
  if (target.cluster) {
    client = new Cluster(target.cluster, {
      ...CLUSTER_OPTIONS,
      ...target.clientOptions,
    });
  } else {
    client = new Redis(target.url, { ...CLIENT_OPTIONS, ...target.clientOptions });
  }
  await client.connect();
  return client;
}

/** Builds the function one case calls per decision: (identity) => Promise<allowed>. */
function makeHit(kase, client, prefix) {
  if (kase.kind === 'ours') {
    const store = createRedisStore({ client, prefix: `${prefix}ours:`, ...kase.storeOptions });
    const rules = rulesFor(kase.algorithm, kase.limits, kase.sources);
    if (!kase.sources) return async (identity) => (await store.hit(identity, rules)).allowed;
    // one identity per rule (as per-email and per-IP limits): the second drawn on its own
    const others = Array.from({ length: config.identities }, (_, i) => `10.0.${i >> 8}.${i & 255}`);
    return async (identity) => {
      const other = others[(Math.random() * others.length) | 0];
      return (await store.hit([identity, other], rules)).allowed;
    };
  }
  if (kase.kind === 'rlf') {
    const limiter = new RateLimiterRedis({
      storeClient: client,
      // rate-limiter-flexible drives node-redis through its own calls when told so
      useRedisPackage: kase.client?.startsWith('node-redis') ?? false,
      keyPrefix: `${prefix}rlf`,
      points: HIGH,
      duration: 60,
    });
    return async (identity) => {
      try {
        await limiter.consume(identity, 1);
        return true;
      } catch (error) {
        if (error instanceof Error) throw error;
        return false;
      }
    };
  }
  if (kase.kind === 'ping') {
    return async () => (await client.ping()) === 'PONG';
  }
  throw new Error(`unknown case kind ${kase.kind}`);
}

/** Keeps `inFlight` calls in flight until `durationMs` passes; optionally records latencies. */
async function drive(hit, { inFlight, identities, durationMs, latencies }) {
  const ids = Array.from({ length: identities }, (_, i) => `team-${i + 1}`);
  let done = 0;
  let blocked = 0;
  let failed = 0;
  let firstError;
  const started = performance.now();
  const deadline = started + durationMs;
  const worker = async () => {
    while (performance.now() < deadline) {
      const identity = ids[(Math.random() * identities) | 0];
      const t0 = latencies ? performance.now() : 0;
      try {
        if (!(await hit(identity))) blocked++;
      } catch (error) {
        failed++;
        firstError ??= error;
      }
      if (latencies) latencies.push(performance.now() - t0);
      done++;
    }
  };
  await Promise.all(Array.from({ length: inFlight }, worker));
  const elapsed = (performance.now() - started) / 1000;
  if (failed > done / 100) throw firstError;
  return { decisions: done, elapsed, blocked, failed };
}

async function throughput() {
  const { cases, rounds, durationMs, warmupMs, inFlight, identities } = config;
  const prefix = `bench-${randomUUID().slice(0, 8)}:`;
  const admin = {};
  const runners = [];
  for (const kase of cases) {
    const target = config.targets[kase.target ?? 'single'];
    admin[kase.target ?? 'single'] ??= await connect(target);
    // one connection per case, as an application would have one client per limiter
    const client = await connect(target, kase.client);
    runners.push({ kase, client, hit: makeHit(kase, client, prefix), runs: [] });
  }
  for (const r of runners) {
    await drive(r.hit, { inFlight, identities, durationMs: warmupMs });
  }
  for (let round = 0; round < rounds; round++) {
    for (const r of runners) {
      const adminClient = admin[r.kase.target ?? 'single'];
      await sleep(100);
      const cpu0 = await totalRedisCpu(adminClient);
      const s0 = await scriptStats(adminClient);
      const node0 = process.cpuUsage();
      const res = await drive(r.hit, { inFlight, identities, durationMs });
      const node = process.cpuUsage(node0);
      const cpu1 = await totalRedisCpu(adminClient);
      const s1 = await scriptStats(adminClient);
      const scripts = s1.calls - s0.calls;
      r.runs.push({
        decisionsPerSecond: res.decisions / res.elapsed,
        blockedRatio: res.blocked / res.decisions,
        failed: res.failed,
        redisCpuUsPerDecision: ((cpu1 - cpu0) * 1e6) / res.decisions,
        nodeCpuUsPerDecision: (node.user + node.system) / res.decisions,
        scriptUsPerDecision: scripts > 0 ? (s1.usec - s0.usec) / res.decisions : null,
        scriptsPerDecision: scripts / res.decisions,
      });
    }
  }
  await deleteKeysUnder(Object.values(admin)[0], prefix);
  for (const r of runners) r.client.disconnect();
  for (const c of Object.values(admin)) c.disconnect();
  return runners.map((r) => ({ ...r.kase, runs: r.runs }));
}

async function latency() {
  const { cases, rounds, durationMs, warmupMs, inFlights, identities } = config;
  const prefix = `bench-${randomUUID().slice(0, 8)}:`;
  const target = config.targets.single;
  const runners = [];
  for (const kase of cases) {
    const client = await connect(target);
    runners.push({ kase, client, hit: makeHit(kase, client, prefix), runs: {} });
  }
  for (const r of runners) await drive(r.hit, { inFlight: 1, identities, durationMs: warmupMs });
  for (let round = 0; round < rounds; round++) {
    for (const inFlight of inFlights) {
      for (const r of runners) {
        const latencies = [];
        await drive(r.hit, { inFlight, identities, durationMs, latencies });
        latencies.sort((a, b) => a - b);
        (r.runs[inFlight] ??= []).push({
          samples: latencies.length,
          p50Ms: quantile(latencies, 0.5),
          p99Ms: quantile(latencies, 0.99),
        });
      }
    }
  }
  await deleteKeysUnder(runners[0].client, prefix);
  for (const r of runners) r.client.disconnect();
  return runners.map((r) => ({ ...r.kase, runs: r.runs }));
}

/** used_memory growth per key as `identities` identities take `hits` hits each. */
async function memory() {
  if (!config.owned)
    throw new Error('memory mode flushes its Redis: run it only on one it started');
  const admin = await connect(config.targets.single);
  const usedMemory = async () => parseInfo(await admin.info('memory')).used_memory;
  const results = [];
  for (const kase of config.cases) {
    // Hits go through a client of their own, closed before the second reading, so that its
    // query and reply buffers are not counted; one hit first loads the script (also counted
    // in used_memory) before the first reading.
    const client = await connect(config.targets.single);
    let hit;
    if (kase.kind === 'rlf') {
      const limiter = new RateLimiterRedis({
        storeClient: client,
        keyPrefix: 'rlf',
        points: kase.limit,
        duration: kase.window,
      });
      hit = (identity) => limiter.consume(identity, 1).then(() => true);
    } else {
      const store = createRedisStore({ client });
      const rules = [
        {
          action: 'submit',
          algorithm: kase.algorithm,
          windowSeconds: kase.window,
          limit: kase.limit,
          cost: 1,
        },
      ];
      hit = async (identity) => (await store.hit(identity, rules)).allowed;
    }
    await hit('warm-up');
    await admin.flushall('SYNC');
    await admin.call('MEMORY', 'PURGE').catch(() => undefined);
    const before = await usedMemory();
    // every identity takes `hits` hits: the outer loop over hits keeps the work interleaved
    let blocked = 0;
    const ids = Array.from({ length: kase.identities }, (_, i) => `team-${i + 1}`);
    for (let h = 0; h < kase.hits; h++) {
      let next = 0;
      const worker = async () => {
        while (next < ids.length) {
          const identity = ids[next++];
          if (!(await hit(identity))) blocked++;
        }
      };
      await Promise.all(Array.from({ length: 256 }, worker));
    }
    await client.quit();
    await sleep(100);
    const after = await usedMemory();
    const keys = await admin.dbsize();
    const sampleKey = await admin.randomkey();
    const usage = sampleKey ? await admin.call('MEMORY', 'USAGE', sampleKey, 'SAMPLES', '0') : null;
    results.push({
      ...kase,
      keys,
      blocked,
      bytes: after - before,
      bytesPerKey: (after - before) / keys,
      memoryUsageSample: Number(usage),
      sampleKey,
    });
  }
  await admin.flushall('SYNC');
  admin.disconnect();
  return results;
}

const modes = { throughput, latency, memory };

answerJson(modes[config.mode]());
