'use strict';
/*
 * What a budget adds per operation (`node bench/budget-bench.js <redisUrl>`, or `memory` for the
 * memory store, after `npm run build`): Apollo Server's executeOperation of one query, 64 in
 * flight, with the library's plugin and no budget, then with a budget of a million points a
 * minute (it never refuses; every operation takes its estimate). Two queries: one whose list returns 5 of
 * its 20 (15 points go back), one whose list returns all 20 (nothing goes back). Rounds
 * alternate; prints one JSON object: ops/s and Node CPU us per operation, median of 5 each, and
 * each budgeted case against the same query without a budget. `secondary` is the first query with
 * the budget's secondary limits too (`inFlight` and `time`, never refusing), against the budget
 * alone.
 */

const { performance } = require('node:perf_hooks');

const { ApolloServer } = require('@apollo/server');
const { makeExecutableSchema } = require('@graphql-tools/schema');
const { Redis } = require('ioredis');

const { createMemoryStore, createRedisStore, rateLimitDirective } = require('../dist');

const SDL = /* GraphQL */ `
  type Query {
    challenges(first: Int = 20): [Challenge!]! @listSize(slicingArguments: ["first"])
    all(first: Int = 20): [Challenge!]! @listSize(slicingArguments: ["first"])
  }
  type Challenge {
    id: ID!
    title: String!
  }
`;
const QUERIES = {
  refund: '{ challenges(first: 20) { id title } }',
  nothingBack: '{ all(first: 20) { id title } }',
};
const list = (n) => Array.from({ length: n }, (_, i) => ({ id: String(i), title: 't' }));
const five = list(5); // actual < estimate
const twenty = list(20); // actual = estimate

const SECONDARY = { inFlight: { limit: 1000 }, time: { seconds: 1_000_000, window: 60 } };

async function server(redis, budget, secondary = false) {
  const prefix = `bench-budget-${process.pid}-${budget ? 'on' : 'off'}${secondary ? '-2nd' : ''}:`;
  const { typeDefs, transformer, plugin } = rateLimitDirective({
    store: redis ? createRedisStore({ client: redis, prefix }) : createMemoryStore(),
    ...(budget ? { budget: { limit: 1_000_000, window: 60, ...(secondary && SECONDARY) } } : {}),
  });
  const schema = transformer(
    makeExecutableSchema({
      typeDefs: [typeDefs, SDL],
      resolvers: { Query: { challenges: () => five, all: () => twenty } },
    }),
  );
  const apollo = new ApolloServer({ schema, plugins: [plugin] });
  await apollo.start();
  return apollo;
}

async function run(apollo, ms, query) {
  let done = 0;
  const cpu = process.cpuUsage();
  const started = performance.now();
  const deadline = started + ms;
  await Promise.all(
    Array.from({ length: 64 }, async (_, w) => {
      while (performance.now() < deadline) {
        const r = await apollo.executeOperation(
          { query },
          { contextValue: { team: { id: `team-${(w * 7919 + done) % 1000}` } } },
        );
        if (r.body.kind !== 'single' || r.body.singleResult.errors) throw new Error('failed');
        done++;
      }
    }),
  );
  const elapsed = performance.now() - started;
  const used = process.cpuUsage(cpu);
  return {
    opsPerSecond: (done / elapsed) * 1000,
    nodeCpuUsPerOp: (used.user + used.system) / done,
  };
}

const median = (v) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)];

async function main() {
  // `memory`: the memory store, to tell what the budget costs from what its store calls cost
  const target = process.argv[2] ?? 'redis://127.0.0.1:6379';
  const redis = target === 'memory' ? undefined : new Redis(target);
  const off = await server(redis, false);
  const on = await server(redis, true);
  const both = await server(redis, true, true);
  const cases = {
    off: [off, QUERIES.refund],
    refund: [on, QUERIES.refund],
    offNothingBack: [off, QUERIES.nothingBack],
    nothingBack: [on, QUERIES.nothingBack],
    secondary: [both, QUERIES.refund],
  };
  for (const [apollo, query] of Object.values(cases)) await run(apollo, 500, query);
  const results = Object.fromEntries(Object.keys(cases).map((k) => [k, []]));
  for (let round = 0; round < 5; round++) {
    for (const [k, [apollo, query]] of Object.entries(cases)) {
      results[k].push(await run(apollo, 1500, query));
    }
  }
  const summary = Object.fromEntries(
    Object.entries(results).map(([k, runs]) => [
      k,
      {
        opsPerSecond: Math.round(median(runs.map((r) => r.opsPerSecond))),
        nodeCpuUsPerOp: Number(median(runs.map((r) => r.nodeCpuUsPerOp)).toFixed(1)),
      },
    ]),
  );
  const against = (k, base) => ({
    opsRatio: Number((summary[k].opsPerSecond / summary[base].opsPerSecond).toFixed(2)),
    addedCpuUsPerOp: Number((summary[k].nodeCpuUsPerOp - summary[base].nodeCpuUsPerOp).toFixed(1)),
  });
  summary.ratios = {
    refund: against('refund', 'off'),
    nothingBack: against('nothingBack', 'offNothingBack'),
    secondary: against('secondary', 'refund'),
  };
  process.stdout.write(`${JSON.stringify(summary)}\n`);
  await off.stop();
  await on.stop();
  await both.stop();
  redis?.disconnect();
}

main().catch((error) => {
  process.stderr.write(`${error.stack}\n`);
  process.exit(1);
});
