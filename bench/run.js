'use strict';
/*
 * `npm run bench` (after `npm run build`): every measurement of BENCHMARKS.md in one bounded
 * run. It starts its own redis-server on a free port of 127.0.0.1 (or uses REDIS_URL, which it
 * never flushes), its own Redis for the memory test and its own 3-master cluster, one process
 * per HTTP server variant and per load generator, and stops every one of them by pid.
 * Prints the tables and writes bench/results.json.
 *
 * Environment: REDIS_URL (use this Redis for tests 1-3), BENCH_QUICK=1 (short smoke run),
 * BENCH_PROFILE=<dir> (CPU profiles of the store and HTTP child processes into <dir>).
 */

const { execFileSync, spawnSync } = require('node:child_process');
const { randomBytes } = require('node:crypto');
const { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } = require('node:fs');
const os = require('node:os');
const { join } = require('node:path');
const { performance } = require('node:perf_hooks');

const { Redis } = require('ioredis');

const {
  fmt,
  freePort,
  has,
  parseInfo,
  range,
  redisCpuSeconds,
  runJson,
  sleep,
  startProcess,
  startRedisServer,
  stopAll,
  summary,
  table,
  waitFor,
} = require('./lib');

const QUICK = process.env.BENCH_QUICK === '1';
const PROFILE_DIR = process.env.BENCH_PROFILE || '';
const ROUNDS = QUICK ? 1 : 3; // latency, ceiling, scale-out
const MANY = QUICK ? 1 : 5; // store throughput and HTTP, the noisiest
const IN_FLIGHT = 256;
const IDENTITIES = 1000;
const STORE_MS = QUICK ? 600 : 1500;
const HTTP_S = QUICK ? 2 : 3;
const HTTP_CONNECTIONS = 50;
const TEAMS = 1000;
const MEMORY_IDENTITIES = QUICK ? 10_000 : 100_000;
const RB_REQUESTS = QUICK ? 100_000 : 300_000;

const ALGORITHMS = ['FIXED_WINDOW', 'SLIDING_WINDOW', 'TOKEN_BUCKET'];
const here = __dirname;
const started = performance.now();
const log = (line) =>
  process.stderr.write(`[bench ${((performance.now() - started) / 1000).toFixed(0)}s] ${line}\n`);
const nodeArgs = (name) =>
  PROFILE_DIR
    ? [
        '--cpu-prof',
        `--cpu-prof-dir=${PROFILE_DIR}`,
        `--cpu-prof-name=${name}-${Date.now()}.cpuprofile`,
      ]
    : [];

/** `npm ci` of the comparison package, when its node_modules is missing. */
function ensurePeers() {
  const dir = join(here, 'peers');
  if (existsSync(join(dir, 'node_modules', 'graphql-rate-limit-directive'))) return;
  log('installing bench/peers (npm ci --prefix bench/peers)');
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
  const result = spawnSync(npm, ['ci', '--prefix', dir, '--no-audit', '--no-fund'], {
    stdio: ['ignore', 'inherit', 'inherit'],
    timeout: 180_000,
  });
  if (result.status !== 0) throw new Error('npm ci --prefix bench/peers failed');
}

function machine() {
  const cpuinfo = existsSync('/proc/cpuinfo') ? readFileSync('/proc/cpuinfo', 'utf8') : '';
  const model = /^model name\s*:\s*(.+)$/m.exec(cpuinfo)?.[1] ?? os.cpus()[0]?.model ?? 'unknown';
  let nproc = os.availableParallelism?.() ?? os.cpus().length;
  try {
    nproc = Number(execFileSync('nproc', { encoding: 'utf8' }).trim());
  } catch {
    // keep os' count
  }
  let redisVersion = 'n/a';
  try {
    redisVersion = execFileSync('redis-server', ['--version'], { encoding: 'utf8' }).trim();
  } catch {
    // no redis-server on PATH
  }
  let commit = 'n/a';
  try {
    const git = (args) =>
      execFileSync('git', args, { cwd: join(here, '..'), encoding: 'utf8' }).trim();
    commit = git(['rev-parse', '--short', 'HEAD']);
    if (git(['status', '--porcelain', '--', 'src', 'lua']))
      commit += ' + uncommitted changes in src/ or lua/';
  } catch {
    // not a git checkout
  }
  return {
    commit,
    nproc,
    node: process.version,
    redisServer: redisVersion,
    cpu: model,
    loadAverage: os.loadavg(),
  };
}

/** The CPU seconds a process has used, from /proc (Linux); NaN elsewhere. */
const CLK_TCK = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();
function processCpuSeconds(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / CLK_TCK;
  } catch {
    return NaN;
  }
}

// ---------------------------------------------------------------------------------------------
// 1. Store decisions/s, Redis CPU per decision, and the redis-benchmark ceiling

const storeCases = [
  ...ALGORITHMS.flatMap((algorithm) => [
    { kind: 'ours', algorithm, limits: 1 },
    { kind: 'ours', algorithm, limits: 2 },
  ]),
  { kind: 'rlf' },
];

const caseName = (c) =>
  c.kind === 'rlf'
    ? 'rate-limiter-flexible RateLimiterRedis.consume'
    : c.kind === 'ping'
      ? 'ioredis PING (floor)'
      : `${c.algorithm}, ${c.limits} limit${c.limits > 1 ? 's' : ''}`;

async function storeThroughput(redis) {
  log(`store throughput: ${storeCases.length} cases x ${MANY} rounds x ${STORE_MS} ms`);
  const raw = await runJson(
    join(here, 'store-bench.js'),
    [
      JSON.stringify({
        mode: 'throughput',
        targets: { single: { url: redis.url } },
        cases: storeCases,
        rounds: MANY,
        durationMs: STORE_MS,
        warmupMs: QUICK ? 300 : 500,
        inFlight: IN_FLIGHT,
        identities: IDENTITIES,
      }),
    ],
    { nodeArgs: nodeArgs('store'), timeoutMs: 180_000 },
  );
  return raw.map((c) => ({
    ...c,
    name: caseName(c),
    decisionsPerSecond: summary(c.runs.map((r) => r.decisionsPerSecond)),
    redisCpuUsPerDecision: summary(c.runs.map((r) => r.redisCpuUsPerDecision)),
    nodeCpuUsPerDecision: summary(c.runs.map((r) => r.nodeCpuUsPerDecision)),
    scriptUsPerDecision: summary(c.runs.map((r) => r.scriptUsPerDecision)),
    blockedRatio: Math.max(...c.runs.map((r) => r.blockedRatio)),
  }));
}

/** The minimal fixed-window script redis-benchmark runs as the ceiling. */
const MINIMAL_SCRIPT =
  "local n = redis.call('INCR', KEYS[1]) " +
  "if n == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end return n";

async function ceiling(redis, client) {
  if (!has('redis-benchmark')) {
    log('redis-benchmark not on PATH: ceiling skipped');
    return { skipped: 'redis-benchmark is not on PATH' };
  }
  const sha = await client.script('LOAD', MINIMAL_SCRIPT);
  const u = new URL(redis.url);
  const args = ['-h', u.hostname, '-p', u.port || '6379'];
  if (u.password) args.push('-a', decodeURIComponent(u.password), '--no-auth-warning');
  args.push(
    '-c',
    String(IN_FLIGHT),
    '-P',
    '16',
    '-n',
    String(RB_REQUESTS),
    '-r',
    String(IDENTITIES),
  );
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
    const rps = Number(JSON.parse(`[${last}]`)[1]);
    runs.push({
      decisionsPerSecond: rps,
      redisCpuUsPerDecision: ((cpu1 - cpu0) * 1e6) / RB_REQUESTS,
    });
  }
  await deleteKeys(client, 'bench-rb:');
  return {
    command: `redis-benchmark ${args.join(' ')}`,
    runs,
    decisionsPerSecond: summary(runs.map((r) => r.decisionsPerSecond)),
    redisCpuUsPerDecision: summary(runs.map((r) => r.redisCpuUsPerDecision)),
  };
}

async function deleteKeys(client, prefix) {
  let cursor = '0';
  do {
    const [next, keys] = await client.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
    cursor = next;
    if (keys.length) await client.unlink(...keys);
  } while (cursor !== '0');
}

// ---------------------------------------------------------------------------------------------
// 2. Latency per decision

async function latency(redis) {
  const cases = [
    { kind: 'ping' },
    { kind: 'ours', algorithm: 'FIXED_WINDOW', limits: 1 },
    { kind: 'ours', algorithm: 'FIXED_WINDOW', limits: 2 },
    { kind: 'rlf' },
  ];
  const durationMs = QUICK ? 300 : 700;
  log(`latency: ${cases.length} cases x 2 in-flight levels x ${ROUNDS} rounds x ${durationMs} ms`);
  const raw = await runJson(
    join(here, 'store-bench.js'),
    [
      JSON.stringify({
        mode: 'latency',
        targets: { single: { url: redis.url } },
        cases,
        rounds: ROUNDS,
        durationMs,
        warmupMs: 300,
        inFlights: [1, 16],
        identities: IDENTITIES,
      }),
    ],
    { timeoutMs: 120_000 },
  );
  return raw.map((c) => ({
    ...c,
    name: caseName(c),
    byInFlight: Object.fromEntries(
      Object.entries(c.runs).map(([n, runs]) => [
        n,
        {
          p50Ms: summary(runs.map((r) => r.p50Ms)),
          p99Ms: summary(runs.map((r) => r.p99Ms)),
          samples: runs.reduce((a, r) => a + r.samples, 0),
        },
      ]),
    ),
  }));
}

// ---------------------------------------------------------------------------------------------
// 3. HTTP: autocannon against each server variant

const HTTP_VARIANTS = [
  { id: 'none', name: 'without (sync resolver)' },
  { id: 'none-await', name: 'without, awaits once (baseline)' },
  { id: 'ours', name: 'graphql-atomic-rate-limit' },
  { id: 'ours-plugin', name: 'graphql-atomic-rate-limit + plugin (headers)' },
  { id: 'grld', name: 'graphql-rate-limit-directive (RateLimiterRedis)' },
];

async function http(redis, client, tmp) {
  const teams = Array.from({ length: TEAMS }, (_, i) => ({
    id: `team-${i + 1}`,
    name: `Team ${i + 1}`,
    token: randomBytes(16).toString('hex'),
  }));
  const dataPath = join(tmp, 'ctf-bench.json');
  const tokensPath = join(tmp, 'tokens.json');
  writeFileSync(
    dataPath,
    JSON.stringify({
      teams,
      challenges: [{ id: 'warmup', title: 'Warm-up', points: 50, flag: 'CTF{welcome_aboard}' }],
    }),
  );
  writeFileSync(tokensPath, JSON.stringify(teams.map((t) => t.token)));

  log(`HTTP: starting ${HTTP_VARIANTS.length} server variants`);
  const servers = [];
  for (const v of HTTP_VARIANTS) {
    const port = await freePort();
    const child = startProcess(
      process.execPath,
      [...nodeArgs(`http-${v.id}`), join(here, 'http-server.js'), v.id, String(port), redis.url],
      { env: { ...process.env, CTF_DATA: dataPath, NODE_ENV: 'production' } },
    );
    servers.push({ ...v, port, child, runs: [] });
  }
  for (const s of servers) await s.child.waitForOutput(/listening \d+/, 30_000);

  const load = (s, durationS) =>
    runJson(
      join(here, 'load.js'),
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

  log(`HTTP: warm-up, then ${MANY} rounds x ${HTTP_VARIANTS.length} variants x ${HTTP_S} s`);
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
  await deleteKeys(client, 'bench-http-');
  return servers.map((s) => ({
    id: s.id,
    name: s.name,
    runs: s.runs,
    requestsPerSecond: summary(s.runs.map((r) => r.requestsPerSecond)),
    p50Ms: summary(s.runs.map((r) => r.p50Ms)),
    p99Ms: summary(s.runs.map((r) => r.p99Ms)),
    serverCpuUsPerRequest: summary(s.runs.map((r) => r.serverCpuUsPerRequest)),
    redisCpuUsPerRequest: summary(s.runs.map((r) => r.redisCpuUsPerRequest)),
    failures: s.runs.reduce((a, r) => a + r.errors + r.timeouts + r.non2xx + r.mismatches, 0),
  }));
}

// ---------------------------------------------------------------------------------------------
// 4. Redis memory per key (a fresh redis-server of its own)

async function memory(tmp) {
  if (!has('redis-server')) return { skipped: 'redis-server is not on PATH' };
  const n = MEMORY_IDENTITIES;
  const cases = [
    {
      kind: 'ours',
      algorithm: 'FIXED_WINDOW',
      limit: 1_000_000,
      window: 60,
      identities: n,
      hits: 1,
    },
    // one hit empties a bucket of 1, so its key lives the whole window
    { kind: 'ours', algorithm: 'TOKEN_BUCKET', limit: 1, window: 60, identities: n, hits: 1 },
    { kind: 'ours', algorithm: 'SLIDING_WINDOW', limit: 1, window: 60, identities: n, hits: 1 },
    {
      kind: 'ours',
      algorithm: 'SLIDING_WINDOW',
      limit: 10,
      window: 60,
      identities: n / 10,
      hits: 10,
    },
    {
      kind: 'ours',
      algorithm: 'SLIDING_WINDOW',
      limit: 100,
      window: 60,
      identities: n / 100,
      hits: 100,
    },
    { kind: 'rlf', limit: 1_000_000, window: 60, identities: n, hits: 1 },
  ];
  const redis = await startRedisServer([], { dir: tmp });
  try {
    log(`memory: ${cases.length} cases on a fresh redis-server (port ${redis.port})`);
    const raw = await runJson(
      join(here, 'store-bench.js'),
      [
        JSON.stringify({
          mode: 'memory',
          owned: true,
          targets: { single: { url: redis.url } },
          cases,
        }),
      ],
      { timeoutMs: 180_000 },
    );
    return raw;
  } finally {
    await redis.stop();
  }
}

// ---------------------------------------------------------------------------------------------
// 5. Scale-out: a local 3-master Redis Cluster against one Redis

/** A free port whose cluster bus port (+10000) is free too. */
async function freeClusterPort(taken) {
  for (;;) {
    const p = await freePort();
    if (p + 10000 > 65535 || taken.has(p) || taken.has(p + 10000)) continue;
    const busFree = await new Promise((resolve) => {
      const server = require('node:net').createServer();
      server.once('error', () => resolve(false));
      server.listen(p + 10000, '127.0.0.1', () => server.close(() => resolve(true)));
    });
    if (busFree) {
      taken.add(p);
      taken.add(p + 10000);
      return p;
    }
  }
}

async function scaleOut(redis, tmp) {
  if (!has('redis-server') || !has('redis-cli')) {
    return { skipped: 'redis-server or redis-cli is not on PATH' };
  }
  const taken = new Set();
  const nodes = [];
  try {
    for (let i = 0; i < 3; i++) {
      const port = await freeClusterPort(taken);
      nodes.push(
        await startRedisServer(
          [
            '--cluster-enabled',
            'yes',
            '--cluster-config-file',
            `nodes-${port}.conf`,
            '--cluster-node-timeout',
            '5000',
          ],
          { dir: tmp, port },
        ),
      );
    }
    const create = startProcess('redis-cli', [
      '--cluster',
      'create',
      ...nodes.map((n) => `127.0.0.1:${n.port}`),
      '--cluster-replicas',
      '0',
      '--cluster-yes',
    ]);
    const { code } = await create.exited;
    await create.stop();
    if (code !== 0) throw new Error(`redis-cli --cluster create failed:\n${create.output()}`);
    await waitFor(
      'cluster_state:ok on every node',
      async () => {
        for (const n of nodes) {
          const c = new Redis(n.url, { lazyConnect: true, maxRetriesPerRequest: 0 });
          try {
            await c.connect();
            const info = parseInfo(await c.cluster('INFO'));
            if (info.cluster_state !== 'ok') return false;
          } finally {
            c.disconnect();
          }
        }
        return true;
      },
      30_000,
      200,
    );
    const cases = [
      { target: 'single', kind: 'ours', algorithm: 'FIXED_WINDOW', limits: 1 },
      { target: 'cluster', kind: 'ours', algorithm: 'FIXED_WINDOW', limits: 1 },
      { target: 'single', kind: 'ours', algorithm: 'FIXED_WINDOW', limits: 2 },
      { target: 'cluster', kind: 'ours', algorithm: 'FIXED_WINDOW', limits: 2 },
    ];
    log(`scale-out: 3-master cluster on ports ${nodes.map((n) => n.port).join(', ')}`);
    const raw = await runJson(
      join(here, 'store-bench.js'),
      [
        JSON.stringify({
          mode: 'throughput',
          targets: {
            single: { url: redis.url },
            cluster: { cluster: nodes.map((n) => ({ host: '127.0.0.1', port: n.port })) },
          },
          cases,
          rounds: ROUNDS,
          durationMs: STORE_MS,
          warmupMs: QUICK ? 300 : 500,
          inFlight: IN_FLIGHT,
          identities: IDENTITIES,
        }),
      ],
      { timeoutMs: 120_000 },
    );
    return {
      ports: nodes.map((n) => n.port),
      cases: raw.map((c) => ({
        ...c,
        name: `${c.target === 'cluster' ? '3-master cluster' : 'one Redis'}: ${caseName(c)}`,
        decisionsPerSecond: summary(c.runs.map((r) => r.decisionsPerSecond)),
        redisCpuUsPerDecision: summary(c.runs.map((r) => r.redisCpuUsPerDecision)),
      })),
    };
  } finally {
    for (const n of nodes) await n.stop();
  }
}

// ---------------------------------------------------------------------------------------------
// Report

function ratio(a, b) {
  return Number.isFinite(a) && Number.isFinite(b) && b !== 0 ? a / b : NaN;
}

function report(results) {
  const out = [];
  const x = (v) => (Number.isFinite(v) ? `${v.toFixed(2)}x` : 'n/a');
  const { throughput, ceiling: ceil, latency: lat, http: web, memory: mem, scaleOut: so } = results;

  const rlf = throughput.find((c) => c.kind === 'rlf');
  const ceilingRate = ceil.skipped ? NaN : ceil.decisionsPerSecond.median;
  out.push(
    `### 1. Store decisions/s (one Node process, ${IN_FLIGHT} in flight, ${IDENTITIES} identities; median (min-max) of ${MANY})`,
    '',
    table(
      [
        'case',
        'decisions/s',
        'vs r-l-flexible',
        'vs ceiling',
        'Node CPU us/decision',
        'Redis CPU us/decision',
        'Redis us in script/decision',
        'blocked',
      ],
      [
        ...throughput.map((c) => [
          c.name,
          range(c.decisionsPerSecond),
          x(ratio(c.decisionsPerSecond.median, rlf.decisionsPerSecond.median)),
          x(ratio(c.decisionsPerSecond.median, ceilingRate)),
          range(c.nodeCpuUsPerDecision),
          range(c.redisCpuUsPerDecision),
          range(c.scriptUsPerDecision),
          fmt(c.blockedRatio),
        ]),
        ceil.skipped
          ? ['redis-benchmark ceiling', `skipped: ${ceil.skipped}`, '', '', '', '', '', '']
          : [
              'ceiling: redis-benchmark EVALSHA minimal fixed window, -c 256 -P 16',
              range(ceil.decisionsPerSecond),
              x(ratio(ceilingRate, rlf.decisionsPerSecond.median)),
              '1.00x',
              '',
              range(ceil.redisCpuUsPerDecision),
              '',
              '',
            ],
      ],
    ),
    '',
  );

  out.push(
    `### 2. Latency per decision (ms; median (min-max) of ${ROUNDS} runs' percentiles)`,
    '',
    table(
      ['case', 'p50 @1', 'p99 @1', 'p50 @16', 'p99 @16'],
      lat.map((c) => [
        c.name,
        range(c.byInFlight[1].p50Ms),
        range(c.byInFlight[1].p99Ms),
        range(c.byInFlight[16].p50Ms),
        range(c.byInFlight[16].p99Ms),
      ]),
    ),
    '',
  );

  const byId = Object.fromEntries(web.map((v) => [v.id, v]));
  const baseline = byId['none-await'];
  out.push(
    `### 3. HTTP (autocannon, ${HTTP_CONNECTIONS} connections, ${TEAMS} teams, ${HTTP_S} s runs; median (min-max) of ${MANY})`,
    '',
    table(
      [
        'server',
        'req/s',
        'vs without',
        'vs awaits once',
        'p50 ms',
        'p99 ms',
        'p99 vs awaits once',
        'server CPU us/req',
        'Redis CPU us/req',
        'failed',
      ],
      web.map((v) => [
        v.name,
        range(v.requestsPerSecond),
        x(ratio(v.requestsPerSecond.median, byId.none.requestsPerSecond.median)),
        x(ratio(v.requestsPerSecond.median, baseline.requestsPerSecond.median)),
        range(v.p50Ms),
        range(v.p99Ms),
        x(ratio(v.p99Ms.median, baseline.p99Ms.median)),
        range(v.serverCpuUsPerRequest),
        range(v.redisCpuUsPerRequest),
        String(v.failures),
      ]),
    ),
    '',
  );

  if (mem.skipped) out.push(`### 4. Redis memory per key: skipped (${mem.skipped})`, '');
  else {
    out.push(
      '### 4. Redis memory per key (INFO used_memory delta / keys, fresh redis-server)',
      '',
      table(
        [
          'store',
          'algorithm',
          'limit',
          'identities x hits',
          'keys',
          'bytes/key',
          'MEMORY USAGE of one key',
        ],
        mem.map((m) => [
          m.kind === 'rlf' ? 'rate-limiter-flexible' : 'ours',
          m.kind === 'rlf' ? 'fixed window' : m.algorithm,
          fmt(m.limit),
          `${fmt(m.identities)} x ${m.hits}`,
          fmt(m.keys),
          fmt(m.bytesPerKey, 4),
          `${m.memoryUsageSample} (${m.sampleKey})`,
        ]),
      ),
      '',
    );
  }

  if (so.skipped) out.push(`### 5. Scale-out: skipped (${so.skipped})`, '');
  else {
    const pick = (target, limits) =>
      so.cases.find((c) => c.target === target && c.limits === limits);
    out.push(
      `### 5. Scale-out (FIXED_WINDOW, ${IN_FLIGHT} in flight, one Node process)`,
      '',
      table(
        [
          'limits',
          'one Redis decisions/s',
          '3-master cluster decisions/s',
          'cluster / one',
          'Redis CPU us/decision one / cluster (sum of masters)',
        ],
        [1, 2].map((limits) => {
          const one = pick('single', limits);
          const cl = pick('cluster', limits);
          return [
            String(limits),
            range(one.decisionsPerSecond),
            range(cl.decisionsPerSecond),
            x(ratio(cl.decisionsPerSecond.median, one.decisionsPerSecond.median)),
            `${range(one.redisCpuUsPerDecision)} / ${range(cl.redisCpuUsPerDecision)}`,
          ];
        }),
      ),
      '',
    );
  }

  out.push(
    '### Targets',
    '',
    table(
      ['target', 'measured', 'met'],
      results.targets.map((t) => [t.target, t.measured, t.met]),
    ),
    '',
  );
  return out.join('\n');
}

function targets(results) {
  const { throughput, latency: lat, http: web, memory: mem } = results;
  const get = (algorithm, limits) =>
    throughput.find((c) => c.algorithm === algorithm && c.limits === limits);
  const rlf = throughput.find((c) => c.kind === 'rlf');
  const fixed1 = get('FIXED_WINDOW', 1);
  const fixed2 = get('FIXED_WINDOW', 2);
  const byId = Object.fromEntries(web.map((v) => [v.id, v]));
  const ours = byId.ours;
  const base = byId['none-await'];
  const fixedMem = mem.skipped
    ? undefined
    : mem.find((m) => m.kind === 'ours' && m.algorithm === 'FIXED_WINDOW');
  const latFixed = lat.find((c) => c.algorithm === 'FIXED_WINDOW' && c.limits === 1);
  const list = [];
  const add = (target, value, ok, unit = '') =>
    list.push({
      target,
      measured: `${fmt(value)}${unit}`,
      value,
      met: !Number.isFinite(value) ? 'n/a' : ok ? 'yes' : 'no',
    });
  const r1 = ratio(fixed1.decisionsPerSecond.median, rlf.decisionsPerSecond.median);
  add('fixed-window decisions/s >= 1.5x rate-limiter-flexible', r1, r1 >= 1.5, 'x');
  const cpu = fixed1.redisCpuUsPerDecision.median;
  add('Redis CPU per decision <= 3 us (FIXED_WINDOW, 1 limit)', cpu, cpu <= 3, ' us');
  const cost2 = ratio(fixed1.decisionsPerSecond.median, fixed2.decisionsPerSecond.median);
  add('two limits < 1.3x the cost of one (FIXED_WINDOW, 1/throughput)', cost2, cost2 < 1.3, 'x');
  const cost2cpu = ratio(fixed2.redisCpuUsPerDecision.median, fixed1.redisCpuUsPerDecision.median);
  add('two limits < 1.3x the cost of one (FIXED_WINDOW, Redis CPU)', cost2cpu, cost2cpu < 1.3, 'x');
  const p99 = latFixed.byInFlight[1].p99Ms.median;
  add('latency p99 at 1 in flight <= 0.2 ms', p99, p99 <= 0.2, ' ms');
  const h1 = ratio(ours.requestsPerSecond.median, byId.grld.requestsPerSecond.median);
  add('HTTP req/s >= 1.5x graphql-rate-limit-directive', h1, h1 >= 1.5, 'x');
  const h2 = ratio(ours.requestsPerSecond.median, base.requestsPerSecond.median);
  add('HTTP req/s >= 0.9x "without, awaits once"', h2, h2 >= 0.9, 'x');
  const h3 = ratio(ours.p99Ms.median, base.p99Ms.median);
  add('HTTP p99 <= 1.2x "without, awaits once"', h3, h3 <= 1.2, 'x');
  const m = fixedMem ? fixedMem.bytesPerKey : NaN;
  add('Redis memory per FIXED_WINDOW key <= 117 B', m, m <= 117, ' B');
  return list;
}

// ---------------------------------------------------------------------------------------------

let tmpDir;

async function main() {
  ensurePeers();
  const tmp = mkdtempSync(join(os.tmpdir(), 'gqlarl-bench-'));
  tmpDir = tmp;
  const results = { startedAt: new Date().toISOString(), quick: QUICK, machine: machine() };
  log(`machine: ${results.machine.nproc} cpu, ${results.machine.cpu}, node ${process.version}`);
  let redis;
  let client;
  try {
    if (process.env.REDIS_URL) {
      redis = { url: process.env.REDIS_URL, owned: false };
      log('tests 1-3 use REDIS_URL (never flushed; keys under bench-* are deleted)');
    } else {
      if (!has('redis-server'))
        throw new Error('npm run bench needs redis-server on PATH or REDIS_URL');
      const server = await startRedisServer([], { dir: tmp });
      redis = { url: server.url, owned: true, stop: server.stop };
      log(`redis-server on port ${server.port}`);
    }
    client = new Redis(redis.url, { lazyConnect: true, maxRetriesPerRequest: 1 });
    await client.connect();
    results.redis = { url: redis.owned ? redis.url : '(REDIS_URL)', owned: redis.owned };

    results.throughput = await storeThroughput(redis);
    results.ceiling = await ceiling(redis, client);
    results.latency = await latency(redis);
    results.http = await http(redis, client, tmp);
    results.memory = await memory(tmp);
    results.scaleOut = await scaleOut(redis, tmp);
    results.targets = targets(results);
    results.seconds = (performance.now() - started) / 1000;
    results.machine.loadAverageEnd = os.loadavg();

    const m = results.machine;
    const text = [
      `Code: ${m.commit}`,
      `Machine: ${m.nproc} CPUs (${m.cpu}), Node ${m.node}, ${m.redisServer.split(' sha=')[0]}; ` +
        `load average at start ${m.loadAverage.map((v) => v.toFixed(2)).join(' ')}, at end ${m.loadAverageEnd.map((v) => v.toFixed(2)).join(' ')}`,
      '',
      report(results),
    ].join('\n');
    process.stdout.write(`\n${text}\nTotal: ${results.seconds.toFixed(0)} s\n`);
    writeFileSync(
      join(here, 'results.json'),
      `${JSON.stringify({ ...results, table: text }, null, 2)}\n`,
    );
    log('wrote bench/results.json');
  } finally {
    client?.disconnect();
    await stopAll();
    if (redis?.stop) await redis.stop();
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
