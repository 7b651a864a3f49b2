'use strict';
/* The tables of BENCHMARKS.md and the targets they are held to, from one run's results. */

const {
  HTTP_CONNECTIONS,
  HTTP_S,
  IDENTITIES,
  IN_FLIGHT,
  MANY,
  QUICK,
  ROUNDS,
  TEAMS,
} = require('./settings');
const { apolloSections, apolloTargets } = require('./scenarios/apollo');
const { executeSection, executeTargets } = require('./scenarios/execute');
const { floodSection, floodTargets } = require('./scenarios/flood');
const { clientsSection } = require('./scenarios/clients');
const { pricingSection } = require('./scenarios/pricing');
const { twoIdentitiesSection, twoIdentitiesTargets } = require('./scenarios/two-identities');
const { fmt, range, ratio, table, times } = require('./stats');
const { versions } = require('./versions');

/**
 * Every measurement of the run as Markdown tables, then the targets. A run of some scenarios
 * (BENCH_ONLY) has only their sections and targets.
 */
function report(results) {
  const out = results.throughput ? coreSections(results) : [];
  const sections = [
    [results.execute, executeSection],
    [results.twoIdentities, twoIdentitiesSection],
    [results.flood, floodSection],
    [results.apollo, apolloSections],
    [results.pricing, pricingSection],
    [results.clients, clientsSection],
  ];
  for (const [result, section] of sections) if (result) out.push(...section(result));

  out.push(
    `### Targets${QUICK ? ' (quick: not comparable; no verdict from quick numbers)' : ''}`,
    '',
    table(
      ['target', 'measured', 'met'],
      results.targets.map((t) => [t.target, t.measured, t.met]),
    ),
    '',
  );
  // a quick run's numbers say whether the bench runs, not where the library stands
  const text = out.join('\n');
  return QUICK
    ? text.replace(/^### .*$/gm, (h) => (h.includes('quick') ? h : `${h} — quick: not comparable`))
    : text;
}

/** Sections 1 to 6: the store, latency, HTTP, memory and scale-out. */
function coreSections(results) {
  const out = [];
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
          times(ratio(c.decisionsPerSecond.median, rlf.decisionsPerSecond.median)),
          times(ratio(c.decisionsPerSecond.median, ceilingRate)),
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
              times(ratio(ceilingRate, rlf.decisionsPerSecond.median)),
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
        times(ratio(v.requestsPerSecond.median, byId.none.requestsPerSecond.median)),
        times(ratio(v.requestsPerSecond.median, baseline.requestsPerSecond.median)),
        range(v.p50Ms),
        range(v.p99Ms),
        times(ratio(v.p99Ms.median, baseline.p99Ms.median)),
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
          m.kind === 'rlf' ? `rate-limiter-flexible ${versions().rlf}` : 'ours',
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
          'cluster Redis CPU / one',
          'script calls/decision one / cluster',
        ],
        [1, 2].map((limits) => {
          const one = pick('single', limits);
          const cl = pick('cluster', limits);
          return [
            String(limits),
            range(one.decisionsPerSecond),
            range(cl.decisionsPerSecond),
            times(ratio(cl.decisionsPerSecond.median, one.decisionsPerSecond.median)),
            `${range(one.redisCpuUsPerDecision)} / ${range(cl.redisCpuUsPerDecision)}`,
            times(ratio(cl.redisCpuUsPerDecision.median, one.redisCpuUsPerDecision.median)),
            `${range(one.scriptsPerDecision, 4)} / ${range(cl.scriptsPerDecision, 4)}`,
          ];
        }),
      ),
      '',
    );
  }

  return out;
}

/** Each target of BENCHMARKS.md: what was measured, and whether it was met. */
function targets(results) {
  const list = [];
  const add = (target, value, ok, unit = '') =>
    list.push({
      target,
      measured: `${fmt(value)}${unit}`,
      value,
      met: QUICK ? 'not judged (quick)' : !Number.isFinite(value) ? 'n/a' : ok ? 'yes' : 'no',
    });
  if (results.throughput) coreTargets(results, add);
  const scenarios = [
    [results.execute, executeTargets],
    [results.twoIdentities, twoIdentitiesTargets],
    [results.flood, floodTargets],
    [results.apollo, apolloTargets],
  ];
  for (const [result, of] of scenarios) if (result) for (const t of of(result)) add(...t);
  return list;
}

/** The targets of sections 1 to 6, through `add(target, value, met, unit)`. */
function coreTargets(results, add) {
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
  if (!results.scaleOut.skipped) {
    const at = (target) =>
      results.scaleOut.cases.find((c) => c.target === target && c.limits === 1);
    const c = ratio(
      at('cluster').redisCpuUsPerDecision.median,
      at('single').redisCpuUsPerDecision.median,
    );
    add(
      '3-master cluster Redis CPU per decision <= 1.3x one Redis (FIXED_WINDOW, 1 limit)',
      c,
      c <= 1.3,
      'x',
    );
  }
}

module.exports = { report, targets };
