'use strict';
/* 6. graphql-js execute() of a limited mutation, without HTTP: what the directive costs a field. */

const { join } = require('node:path');

const { runJson } = require('../children');
const { IN_FLIGHT, MANY, QUICK, TEAMS, WARMUP_MS, log } = require('../settings');
const { range, ratio, summary, table, times } = require('../stats');
const { versions } = require('../versions');

const EXECUTE_MS = QUICK ? 600 : 2000;

function variants() {
  const v = versions();
  return [
    { id: 'none', name: 'without (sync resolver)' },
    { id: 'none-await', name: 'without, awaits once (baseline)' },
    { id: 'incr', name: 'without, awaits one ioredis INCR (auto-pipelined; floor of Redis)' },
    { id: 'ours', name: 'graphql-atomic-rate-limit (@rateLimit via transformer)' },
    {
      id: 'grld',
      name: `graphql-rate-limit-directive ${v.grld} (RateLimiterRedis, rate-limiter-flexible ${v.peersRlf})`,
    },
  ];
}

async function execute(redis) {
  const list = variants();
  log(`execute(): ${list.length} variants x ${MANY} rounds x ${EXECUTE_MS} ms, one process`);
  const raw = await runJson(
    join(__dirname, '..', 'execute-bench.js'),
    [
      JSON.stringify({
        url: redis.url,
        variants: list.map((v) => v.id),
        rounds: MANY,
        durationMs: EXECUTE_MS,
        warmupMs: WARMUP_MS * 2,
        inFlight: IN_FLIGHT,
        teams: TEAMS,
      }),
    ],
    { profile: 'execute', timeoutMs: 180_000, env: { NODE_ENV: 'production' } },
  );
  return raw.map((r) => ({
    ...list.find((v) => v.id === r.id),
    runs: r.runs,
    opsPerSecond: summary(r.runs.map((x) => x.opsPerSecond)),
    nodeCpuUsPerOp: summary(r.runs.map((x) => x.nodeCpuUsPerOp)),
    redisCpuUsPerOp: summary(r.runs.map((x) => x.redisCpuUsPerOp)),
  }));
}

const byId = (rows) => Object.fromEntries(rows.map((v) => [v.id, v]));

/** The report's section for execute(). */
function executeSection(rows) {
  const { 'none-await': base, grld } = byId(rows);
  return [
    `### 6. execute() (graphql-js, one Node process, ${IN_FLIGHT} operations in flight, ${TEAMS} teams, parse/validate once; median (min-max) of ${MANY})`,
    '',
    table(
      [
        'variant',
        'ops/s',
        'vs awaits once',
        'vs graphql-rate-limit-directive',
        'Node CPU us/op',
        'Node CPU vs awaits once',
        'Redis CPU us/op',
      ],
      rows.map((v) => [
        v.name,
        range(v.opsPerSecond),
        times(ratio(v.opsPerSecond.median, base.opsPerSecond.median)),
        times(ratio(v.opsPerSecond.median, grld.opsPerSecond.median)),
        range(v.nodeCpuUsPerOp),
        times(ratio(v.nodeCpuUsPerOp.median, base.nodeCpuUsPerOp.median)),
        range(v.redisCpuUsPerOp),
      ]),
    ),
    '',
  ];
}

/** execute()'s targets: [target, value, met, unit]. */
function executeTargets(rows) {
  const { 'none-await': base, grld, ours } = byId(rows);
  const a = ratio(ours.opsPerSecond.median, base.opsPerSecond.median);
  const b = ratio(ours.opsPerSecond.median, grld.opsPerSecond.median);
  return [
    ['execute() ops/s >= 0.8x "without, awaits once"', a, a >= 0.8, 'x'],
    ['execute() ops/s, transformer alone, >= 2x graphql-rate-limit-directive', b, b >= 2, 'x'],
  ];
}

module.exports = { execute, executeSection, executeTargets };
