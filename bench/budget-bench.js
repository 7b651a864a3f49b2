'use strict';
/*
 * What a budget adds per operation (`node bench/budget-bench.js <redisUrl>`, after `npm run
 * build`): Apollo Server's executeOperation of one query, 64 in flight, on the Redis store,
 * with the library's plugin and no budget, then with a budget of a million points a minute (it
 * never refuses; every operation takes its estimate and gives back the difference). Rounds
 * alternate; prints one JSON object: ops/s and Node CPU us per operation, median of 5 each.
 */

const { performance } = require('node:perf_hooks');

const { ApolloServer } = require('@apollo/server');
const { makeExecutableSchema } = require('@graphql-tools/schema');
const { Redis } = require('ioredis');

const { createRedisStore, rateLimitDirective } = require('../dist');

const SDL = /* GraphQL */ `
  type Query {
    challenges(first: Int = 20): [Challenge!]! @listSize(slicingArguments: ["first"])
  }
  type Challenge {
    id: ID!
    title: String!
  }
`;
const QUERY = '{ challenges(first: 20) { id title } }';
const list = Array.from({ length: 5 }, (_, i) => ({ id: String(i), title: 't' })); // actual < estimate

async function server(redis, budget) {
  const prefix = `bench-budget-${process.pid}-${budget ? 'on' : 'off'}:`;
  const { typeDefs, transformer, plugin } = rateLimitDirective({
    store: createRedisStore({ client: redis, prefix }),
    ...(budget ? { budget: { limit: 1_000_000, window: 60 } } : {}),
  });
  const schema = transformer(
    makeExecutableSchema({
      typeDefs: [typeDefs, SDL],
      resolvers: { Query: { challenges: () => list } },
    }),
  );
  const apollo = new ApolloServer({ schema, plugins: [plugin] });
  await apollo.start();
  return apollo;
}

async function run(apollo, ms) {
  let done = 0;
  const cpu = process.cpuUsage();
  const started = performance.now();
  const deadline = started + ms;
  await Promise.all(
    Array.from({ length: 64 }, async (_, w) => {
      while (performance.now() < deadline) {
        const r = await apollo.executeOperation(
          { query: QUERY },
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
  const redis = new Redis(process.argv[2] ?? 'redis://127.0.0.1:6379');
  const off = await server(redis, false);
  const on = await server(redis, true);
  await run(off, 500);
  await run(on, 500);
  const results = { off: [], on: [] };
  for (let round = 0; round < 5; round++) {
    results.off.push(await run(off, 1500));
    results.on.push(await run(on, 1500));
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
  process.stdout.write(`${JSON.stringify(summary)}\n`);
  await off.stop();
  await on.stop();
  redis.disconnect();
}

main().catch((error) => {
  process.stderr.write(`${error.stack}\n`);
  process.exit(1);
});
