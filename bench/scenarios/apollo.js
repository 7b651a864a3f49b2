'use strict';
/*
 * 9. and 10. What a user of Apollo Server pays, from outside: `executeOperation`, 64 in flight,
 * 1,000 teams, every variant in one process and interleaved rounds (bench/apollo-bench.js).
 * 9: a limited root mutation against the same field awaiting once with no limiter. 10: an
 * operation budget (with a refund, and with nothing to refund) against the plugin without
 * a budget and Apollo Server with no limiter.
 */

const { join } = require('node:path');

const { runJson } = require('../children');
const { MANY, QUICK, TEAMS, WARMUP_MS, log } = require('../settings');
const { range, ratio, summary, table, times } = require('../stats');

const APOLLO_MS = QUICK ? 600 : 1500;
const APOLLO_IN_FLIGHT = 64;

const VARIANTS = [
  { id: 'mutation-await', name: 'mutation, no limiter, resolver awaits once (baseline)' },
  { id: 'mutation-incr', name: 'mutation, no limiter, resolver awaits one ioredis INCR (floor)' },
  { id: 'mutation-ours', name: 'mutation with @rateLimit (transformer + plugin)' },
  { id: 'query-none', name: 'query, Apollo Server with no limiter' },
  { id: 'query-plugin', name: 'query, the plugin without a budget (baseline)' },
  { id: 'query-incr2', name: 'query, the plugin and two ioredis INCRs, before and after (floor)' },
  { id: 'query-budget', name: 'query, budget: takes 20, refunds 15' },
  { id: 'query-plugin-full', name: 'query returning all 20, the plugin without a budget' },
  {
    id: 'query-incr1-full',
    name: 'query returning all 20, the plugin and one INCR before (floor)',
  },
  { id: 'query-budget-full', name: 'query returning all 20, budget: nothing to refund' },
];

async function apollo(redis) {
  log(`Apollo executeOperation: ${VARIANTS.length} variants x ${MANY} rounds x ${APOLLO_MS} ms`);
  const raw = await runJson(
    join(__dirname, '..', 'apollo-bench.js'),
    [
      JSON.stringify({
        url: redis.url,
        variants: VARIANTS.map((v) => v.id),
        rounds: MANY,
        durationMs: APOLLO_MS,
        warmupMs: WARMUP_MS * 2,
        inFlight: APOLLO_IN_FLIGHT,
        teams: TEAMS,
      }),
    ],
    { profile: 'apollo', timeoutMs: 300_000, env: { NODE_ENV: 'production' } },
  );
  return raw.map((r) => ({
    ...VARIANTS.find((v) => v.id === r.id),
    runs: r.runs,
    opsPerSecond: summary(r.runs.map((x) => x.opsPerSecond)),
    nodeCpuUsPerOp: summary(r.runs.map((x) => x.nodeCpuUsPerOp)),
    redisCpuUsPerOp: summary(r.runs.map((x) => x.redisCpuUsPerOp)),
  }));
}

const byId = (rows) => Object.fromEntries(rows.map((v) => [v.id, v]));

/** One table of `rows` against `base`: ops/s, and Node CPU per operation added. */
function versus(rows, base, baseName) {
  return table(
    [
      'variant',
      'ops/s',
      `vs ${baseName}`,
      'Node CPU us/op',
      `Node CPU added vs ${baseName}`,
      'Redis CPU us/op',
    ],
    rows.map((v) => [
      v.name,
      range(v.opsPerSecond),
      times(ratio(v.opsPerSecond.median, base.opsPerSecond.median)),
      range(v.nodeCpuUsPerOp),
      plusUs(v.nodeCpuUsPerOp.median - base.nodeCpuUsPerOp.median),
      range(v.redisCpuUsPerOp),
    ]),
  );
}

const plusUs = (us) => (Number.isFinite(us) ? `${us >= 0 ? '+' : ''}${us.toFixed(1)} us` : 'n/a');

const FLOOR = [
  "The floor rows ask Redis with no decision at all: one INCR of the team's key per round",
  'trip, on an ioredis client of their own with auto-pipelining. What a row costs beyond',
  'its baseline, the floor pays too: any limiter that asks Redis before the operation answers.',
].join('\n');

const HEADING = `Apollo Server executeOperation, ${APOLLO_IN_FLIGHT} in flight, ${TEAMS} teams, one process, interleaved; median (min-max) of ${MANY}`;

/** The report's sections for Apollo Server. */
function apolloSections(rows) {
  const v = byId(rows);
  return [
    `### 9. A limited root mutation (${HEADING})`,
    '',
    versus(
      [v['mutation-await'], v['mutation-incr'], v['mutation-ours']],
      v['mutation-await'],
      'baseline',
    ),
    '',
    FLOOR,
    '',
    `### 10. Operation budget (${HEADING})`,
    '',
    versus(
      [v['query-none'], v['query-plugin'], v['query-incr2'], v['query-budget']],
      v['query-plugin'],
      'plugin without a budget',
    ),
    '',
    'The same query when its list returns all 20 items (nothing to refund), against the',
    'plugin without a budget on that query (20 items cost Apollo more to resolve and answer):',
    '',
    versus(
      [v['query-plugin-full'], v['query-incr1-full'], v['query-budget-full']],
      v['query-plugin-full'],
      'plugin without a budget',
    ),
    '',
  ];
}

/** Apollo's targets: [target, value, met, unit]. */
function apolloTargets(rows) {
  const v = byId(rows);
  const against = (id, base) => ({
    x: ratio(v[id].opsPerSecond.median, v[base].opsPerSecond.median),
    us: v[id].nodeCpuUsPerOp.median - v[base].nodeCpuUsPerOp.median,
  });
  const root = against('mutation-ours', 'mutation-await');
  const budget = against('query-budget', 'query-plugin');
  const full = against('query-budget-full', 'query-plugin-full');
  return [
    ['Apollo limited root mutation ops/s >= 0.8x awaiting once', root.x, root.x >= 0.8, 'x'],
    ['Apollo limited root mutation <= +5 us Node CPU/op', root.us, root.us <= 5, ' us'],
    ['Apollo budget with refund ops/s >= 0.8x plugin alone', budget.x, budget.x >= 0.8, 'x'],
    ['Apollo budget with refund <= +10 us Node CPU/op', budget.us, budget.us <= 10, ' us'],
    ['Apollo budget, nothing back, ops/s >= 0.85x plugin alone', full.x, full.x >= 0.85, 'x'],
    ['Apollo budget, nothing back, <= +6 us Node CPU/op', full.us, full.us <= 6, ' us'],
  ];
}

module.exports = { apollo, apolloSections, apolloTargets };
