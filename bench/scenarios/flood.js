'use strict';
/* 8. A flood of blocked hits from one identity, with and without the Redis store's blockCache. */

const { join } = require('node:path');

const { runJson } = require('../children');
const {
  IDENTITIES,
  IN_FLIGHT,
  MANY,
  QUICK,
  ROUNDS,
  STORE_MS,
  WARMUP_MS,
  log,
} = require('../settings');
const { range, ratio, summary, table, times } = require('../stats');

const FLOOD_MS = QUICK ? 1500 : 3000;
const FLOOD_WINDOW_S = 1;
const FLOOD_LIMIT = 10;
const OTHERS_IN_FLIGHT = 16;

const FIELDS = [
  'scriptCallsPerSecond',
  'redisBlockedPerBlockPeriod',
  'blockedPerSecond',
  'cachedShare',
  'allowedPerSecond',
  'redisCpuShare',
  'othersPerSecond',
  'othersP50Ms',
  'othersP99Ms',
  'decisionsPerSecond',
  'nodeCpuUsPerDecision',
  'redisCpuUsPerDecision',
];

/** Every numeric field of `runs` summarized over the runs. */
function summarize(runs) {
  const out = { runs };
  for (const field of FIELDS) {
    if (runs.some((r) => field in r)) out[field] = summary(runs.map((r) => r[field]));
  }
  return out;
}

async function floodScenario(redis) {
  log(
    `flood: blockCache on/off x 4 phases x ${ROUNDS} rounds x ${FLOOD_MS} ms, then the allowed path`,
  );
  const raw = await runJson(
    join(__dirname, '..', 'flood-bench.js'),
    [
      JSON.stringify({
        url: redis.url,
        rounds: ROUNDS,
        allowedRounds: MANY,
        floodMs: FLOOD_MS,
        allowedMs: STORE_MS,
        warmupMs: WARMUP_MS,
        floodInFlight: IN_FLIGHT,
        othersInFlight: OTHERS_IN_FLIGHT,
        inFlight: IN_FLIGHT,
        identities: IDENTITIES,
        floodWindowS: FLOOD_WINDOW_S,
        floodLimit: FLOOD_LIMIT,
      }),
    ],
    { profile: 'flood', timeoutMs: 300_000 },
  );
  return {
    flood: raw.flood.map((v) => ({
      blockCache: v.blockCache,
      phases: Object.fromEntries(Object.entries(v.runs).map(([k, runs]) => [k, summarize(runs)])),
    })),
    allowed: raw.allowed.map((a) => ({ id: a.id, ...summarize(a.runs) })),
  };
}

const onOff = (v) => (v.blockCache ? 'on' : 'off');

/** The report's section for the flood. */
function floodSection({ flood, allowed }) {
  const off = allowed.find((a) => a.id === 'off');
  return [
    `### 8. Flood of blocked hits and blockCache (one identity, FIXED_WINDOW ${FLOOD_LIMIT} per ${FLOOD_WINDOW_S} s, ${FLOOD_MS / 1000} s runs, one process; median (min-max) of ${ROUNDS})`,
    '',
    table(
      [
        'blockCache',
        'flood in flight',
        'script calls/s',
        'blocked hits sent to Redis per block period',
        'blocked decisions/s in process',
        'answered by the cache',
        'Redis CPU (share of a core)',
        'allowed flood hits/s',
      ],
      flood.flatMap((v) =>
        [1, IN_FLIGHT].map((n) => {
          const p = v.phases[`flood@${n}`];
          return [
            onOff(v),
            String(n),
            range(p.scriptCallsPerSecond),
            range(p.redisBlockedPerBlockPeriod),
            range(p.blockedPerSecond),
            range(p.cachedShare, 4),
            range(p.redisCpuShare),
            range(p.allowedPerSecond),
          ];
        }),
      ),
    ),
    '',
    `Other identities' allowed hits (${OTHERS_IN_FLIGHT} in flight, same store) alone and during the flood at ${IN_FLIGHT} in flight:`,
    '',
    table(
      [
        'blockCache',
        'others/s alone',
        'p50 ms alone',
        'p99 ms alone',
        'others/s in the flood',
        'p50 ms in the flood',
        'p99 ms in the flood',
        'flood blocked/s meanwhile',
        'script calls/s meanwhile',
      ],
      flood.map((v) => {
        const alone = v.phases.others;
        const both = v.phases['flood+others'];
        return [
          onOff(v),
          range(alone.othersPerSecond),
          range(alone.othersP50Ms),
          range(alone.othersP99Ms),
          range(both.othersPerSecond),
          range(both.othersP50Ms),
          range(both.othersP99Ms),
          range(both.blockedPerSecond),
          range(both.scriptCallsPerSecond),
        ];
      }),
    ),
    '',
    `The allowed path (hits that never block, ${IN_FLIGHT} in flight, ${IDENTITIES} identities, interleaved; median (min-max) of ${MANY}):`,
    '',
    table(
      ['blockCache', 'decisions/s', 'vs off', 'Node CPU us/decision', 'Redis CPU us/decision'],
      allowed.map((a) => [
        a.id,
        range(a.decisionsPerSecond),
        times(ratio(a.decisionsPerSecond.median, off.decisionsPerSecond.median)),
        range(a.nodeCpuUsPerDecision),
        range(a.redisCpuUsPerDecision),
      ]),
    ),
    '',
  ];
}

/** The flood's targets: [target, value, met, unit]. */
function floodTargets({ flood, allowed }) {
  const on = flood.find((v) => v.blockCache).phases;
  const off = allowed.find((a) => a.id === 'off').decisionsPerSecond.median;
  const list = [1, IN_FLIGHT].map((n) => {
    const value = on[`flood@${n}`].redisBlockedPerBlockPeriod.median;
    return [
      `blockCache: about one blocked hit sent to Redis per block period (<= 2; flood ${n} in flight)`,
      value,
      value <= 2,
      '',
    ];
  });
  for (const a of allowed.filter((x) => x.id !== 'off')) {
    const r = ratio(a.decisionsPerSecond.median, off);
    list.push([
      `allowed path, blockCache ${a.id}: within noise of off (>= 0.95x)`,
      r,
      r >= 0.95,
      'x',
    ]);
  }
  return list;
}

module.exports = { floodScenario, floodSection, floodTargets };
