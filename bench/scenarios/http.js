'use strict';
/* 3. HTTP: autocannon against each server variant, each server and each load in its own process. */

const { spawnSync } = require('node:child_process');
const { randomBytes } = require('node:crypto');
const { existsSync, writeFileSync } = require('node:fs');
const { join } = require('node:path');

const { freePort, sleep, startProcess } = require('../../kit/processes');
const { deleteKeysUnder } = require('../../kit/redis-server');
const { nodeArgs, processCpuSeconds, runJson } = require('../children');
const { redisCpuSeconds } = require('../redis-info');
const { HTTP_CONNECTIONS, HTTP_S, MANY, TEAMS, log } = require('../settings');
const { summary } = require('../stats');
const { versions } = require('../versions');

const BENCH = join(__dirname, '..');

const VARIANTS = [
  { id: 'none', name: 'without (sync resolver)' },
  { id: 'none-await', name: 'without, awaits once (baseline)' },
  { id: 'ours', name: 'graphql-atomic-rate-limit' },
  { id: 'ours-plugin', name: 'graphql-atomic-rate-limit + plugin (headers)' },
  { id: 'grld', name: 'graphql-rate-limit-directive (RateLimiterRedis)' },
];

/** A variant's name in the report, with the versions of the compared packages it ran. */
const variantName = (v) => {
  if (v.id !== 'grld') return v.name;
  const { grld, peersRlf } = versions();
  return `graphql-rate-limit-directive ${grld} (RateLimiterRedis, rate-limiter-flexible ${peersRlf})`;
};

/** `npm ci` of the comparison package, when its node_modules is missing. */
function ensurePeers() {
  const dir = join(BENCH, 'peers');
  if (existsSync(join(dir, 'node_modules', 'graphql-rate-limit-directive'))) return;
  log('installing bench/peers (npm ci --prefix bench/peers)');
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
  const result = spawnSync(npm, ['ci', '--prefix', dir, '--no-audit', '--no-fund'], {
    stdio: ['ignore', 'inherit', 'inherit'],
    timeout: 180_000,
  });
  if (result.status !== 0) throw new Error('npm ci --prefix bench/peers failed');
}

/** TEAMS teams with random tokens and one challenge, as a data file and a list of tokens. */
function writeData(tmp) {
  const teams = Array.from({ length: TEAMS }, (_, i) => ({
    id: `team-${i + 1}`,
    name: `Team ${i + 1}`,
    token: randomBytes(16).toString('hex'),
  }));
  const dataPath = join(tmp, 'ctf-bench.json');
  const tokensPath = join(tmp, 'tokens.json');
  const challenges = [{ id: 'warmup', title: 'Warm-up', points: 50, flag: 'CTF{welcome_aboard}' }];
  writeFileSync(dataPath, JSON.stringify({ teams, challenges }));
  writeFileSync(tokensPath, JSON.stringify(teams.map((t) => t.token)));
  return { dataPath, tokensPath };
}

async function http(redis, client, tmp) {
  const { dataPath, tokensPath } = writeData(tmp);
  log(`HTTP: starting ${VARIANTS.length} server variants`);
  const servers = [];
  for (const v of VARIANTS) {
    const port = await freePort();
    const child = startProcess(
      process.execPath,
      [...nodeArgs(`http-${v.id}`), join(BENCH, 'http-server.js'), v.id, String(port), redis.url],
      { env: { ...process.env, CTF_DATA: dataPath, NODE_ENV: 'production' } },
    );
    servers.push({ ...v, port, child, runs: [] });
  }
  for (const s of servers) await s.child.waitForOutput(/listening \d+/, 30_000);

  const load = (s, durationS) =>
    runJson(
      join(BENCH, 'load.js'),
      [
        JSON.stringify({
          url: `http://127.0.0.1:${s.port}/graphql`,
          tokens: tokensPath,
          connections: HTTP_CONNECTIONS,
          durationS,
        }),
      ],
      { timeoutMs: (durationS + 30) * 1000 },
    );

  log(`HTTP: warm-up, then ${MANY} rounds x ${VARIANTS.length} variants x ${HTTP_S} s`);
  for (const s of servers) await load(s, 1);
  for (let round = 0; round < MANY; round++) {
    for (const s of servers) {
      await sleep(200);
      const serverCpu0 = processCpuSeconds(s.child.pid);
      const redisCpu0 = await redisCpuSeconds(client);
      const r = await load(s, HTTP_S);
      const serverCpu1 = processCpuSeconds(s.child.pid);
      const redisCpu1 = await redisCpuSeconds(client);
      s.runs.push({
        ...r,
        serverCpuUsPerRequest: ((serverCpu1 - serverCpu0) * 1e6) / r.total,
        redisCpuUsPerRequest: ((redisCpu1 - redisCpu0) * 1e6) / r.total,
      });
    }
  }
  for (const s of servers) await s.child.stop();
  await deleteKeysUnder(client, 'bench-http-');
  return servers.map((s) => ({
    id: s.id,
    name: variantName(s),
    runs: s.runs,
    requestsPerSecond: summary(s.runs.map((r) => r.requestsPerSecond)),
    p50Ms: summary(s.runs.map((r) => r.p50Ms)),
    p99Ms: summary(s.runs.map((r) => r.p99Ms)),
    serverCpuUsPerRequest: summary(s.runs.map((r) => r.serverCpuUsPerRequest)),
    redisCpuUsPerRequest: summary(s.runs.map((r) => r.redisCpuUsPerRequest)),
    failures: s.runs.reduce((a, r) => a + r.errors + r.timeouts + r.non2xx + r.mismatches, 0),
  }));
}

module.exports = { ensurePeers, http };
