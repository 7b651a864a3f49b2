'use strict';
/*
 * Apollo Server's `executeOperation`, every variant in one Node process, run as a child of
 * bench/run.js (after `npm run build`):
 *   node bench/apollo-bench.js '<json config: url, variants, rounds, durationMs, warmupMs, inFlight, teams>'
 * Each operation gets a context of its own with one of `teams` teams, and `inFlight` operations
 * are always in flight. Variants, in interleaved rounds:
 *   mutation-await   no limiter: `submitFlag` whose resolver awaits once
 *   mutation-incr    no limiter: the resolver awaits one INCR of its team's key (ioredis, auto-
 *                    pipelined), a round trip with no decision: the floor of a limiter on Redis
 *   mutation-ours    the same field with @rateLimit (transformer and plugin), synchronous resolver
 *   query-none       no limiter: `items(first: 20)` with @listSize, the resolver returns 5
 *   query-plugin     the library's plugin without a budget
 *   query-budget     the plugin with a budget: takes 20, refunds 15
 *   query-budget-full  the same with a resolver that returns all 20: nothing to refund
 *   query-plugin-full  the plugin without a budget, the resolver returning all 20 (its baseline)
 *   query-incr2      query-plugin and one INCR before execution and one after: a take and a
 *                    refund with no decision, the floor of a budget on Redis
 *   query-incr1-full query-plugin-full and one INCR before execution (nothing to refund)
 * Prints one JSON line: per variant, every run's ops/s and CPU per operation (Node and Redis).
 */

const { randomUUID } = require('node:crypto');
const { performance } = require('node:perf_hooks');

const { ApolloServer } = require('@apollo/server');
const { makeExecutableSchema } = require('@graphql-tools/schema');
const { Redis } = require('ioredis');

const { sleep } = require('../kit/processes');
const { CLIENT_OPTIONS } = require('../server/dist/redis-client');
const { deleteKeysUnder, keysUnder } = require('../kit/redis-server');
const { answerJson } = require('./children');
const { redisCpuSeconds } = require('./redis-info');

const config = JSON.parse(process.argv[2] || '{}');
const LIMIT = 1_000_000; // per team per window: far above what a run sends, so nothing blocks

const MUTATION = {
  query:
    'mutation Submit($c: ID!, $f: String!) { submitFlag(challengeId: $c, flag: $f) { correct } }',
  variables: { c: 'warmup', f: 'CTF{guess}' },
  check: (data) => data?.submitFlag?.correct === false,
};
const QUERY = {
  query: '{ items(first: 20) { id title } }',
  check: (data) => Array.isArray(data?.items),
};

const mutationSdl = (directive) => `
  type Query { ok: Boolean }
  type Mutation { submitFlag(challengeId: ID!, flag: String!): Submission! ${directive} }
  type Submission { correct: Boolean! }
`;
const QUERY_SDL = `
  type Query { items(first: Int = 20): [Item!]! @listSize(slicingArguments: ["first"]) }
  type Item { id: ID! title: String! }
`;

const submitFlag = (_source, { challengeId, flag }) => ({ correct: challengeId === flag });
const itemsOf = (n) => Array.from({ length: n }, (_, i) => ({ id: String(i), title: 't' }));
const FIVE = itemsOf(5);
const TWENTY = itemsOf(20);

/**
 * One variant's Apollo Server, started, and the operation it runs. `floor` is a client of its
 * own with ioredis' auto-pipelining, for the floor variants' INCRs.
 */
async function build(variant, client, floor, prefix) {
  const { createRedisStore, rateLimitDirective } = require('../dist');
  const directive = (options = {}) =>
    rateLimitDirective({ store: createRedisStore({ client, prefix }), ...options });
  let schema;
  let plugins = [];
  let operation = QUERY;
  if (variant === 'mutation-await') {
    operation = MUTATION;
    const resolvers = {
      Mutation: {
        submitFlag: async (...args) => {
          await null;
          return submitFlag(...args);
        },
      },
    };
    schema = makeExecutableSchema({ typeDefs: mutationSdl(''), resolvers });
  } else if (variant === 'mutation-incr') {
    operation = MUTATION;
    const resolvers = {
      Mutation: {
        submitFlag: async (source, args, { team }) => {
          await floor.incr(`${prefix}${team.id}`);
          return submitFlag(source, args);
        },
      },
    };
    schema = makeExecutableSchema({ typeDefs: mutationSdl(''), resolvers });
  } else if (variant === 'mutation-ours') {
    operation = MUTATION;
    const d = directive();
    const typeDefs = mutationSdl(`@rateLimit(action: "submit", window: 60, limit: ${LIMIT})`);
    const resolvers = { Mutation: { submitFlag } };
    schema = d.transformer(makeExecutableSchema({ typeDefs: [d.typeDefs, typeDefs], resolvers }));
    plugins = [d.plugin];
  } else {
    const items = variant.endsWith('-full') ? TWENTY : FIVE;
    const resolvers = { Query: { items: () => items } };
    if (variant === 'query-none') {
      const { costTypeDefs } = require('../dist/cost');
      schema = makeExecutableSchema({ typeDefs: [costTypeDefs(), QUERY_SDL], resolvers });
    } else {
      const budget = variant.startsWith('query-budget')
        ? { budget: { limit: LIMIT, window: 60 } }
        : {};
      const d = directive(budget);
      schema = d.transformer(
        makeExecutableSchema({ typeDefs: [d.typeDefs, QUERY_SDL], resolvers }),
      );
      plugins = [d.plugin];
      if (variant.startsWith('query-incr')) plugins.push(incrPlugin(floor, prefix, variant));
    }
  }
  // what must have written counters (a budget's bucket refills within a millisecond here, and
  // its keys expire as soon: each budgeted result must carry its cost instead)
  const limited = variant === 'mutation-ours' || variant.includes('-incr');
  const budgeted = variant.startsWith('query-budget');
  const apollo = new ApolloServer({ schema, plugins });
  await apollo.start();
  return { variant, apollo, operation, limited, budgeted, prefix, runs: [] };
}

/**
 * The floor of a budget kept in Redis: one auto-pipelined INCR of the team's key before the
 * operation executes and, for `query-incr2`, a second once it answered (a take and a refund
 * with no decision at all).
 */
function incrPlugin(floor, prefix, variant) {
  const twice = variant.startsWith('query-incr2');
  return {
    async requestDidStart({ contextValue }) {
      const key = `${prefix}${contextValue.team.id}`;
      return {
        async didResolveOperation() {
          await floor.incr(key);
        },
        async willSendResponse() {
          if (twice) await floor.incr(key);
        },
      };
    },
  };
}

/** Keeps `inFlight` operations in flight until `durationMs` passes. */
async function drive(v, teams, durationMs) {
  let ops = 0;
  const started = performance.now();
  const deadline = started + durationMs;
  const { query, variables, check } = v.operation;
  const worker = async () => {
    while (performance.now() < deadline) {
      const team = teams[(Math.random() * teams.length) | 0];
      const response = await v.apollo.executeOperation(
        { query, variables },
        { contextValue: { team } },
      );
      const result = response.body.kind === 'single' ? response.body.singleResult : undefined;
      const priced = !v.budgeted || result?.extensions?.cost?.requestedQueryCost === 20;
      if (!result || result.errors || !check(result.data) || !priced) {
        throw new Error(`${v.variant}: ${JSON.stringify(result ?? response.body.kind)}`);
      }
      ops++;
    }
  };
  await Promise.all(Array.from({ length: config.inFlight }, worker));
  return { ops, elapsed: (performance.now() - started) / 1000 };
}

async function main() {
  const client = new Redis(config.url, CLIENT_OPTIONS);
  await client.connect();
  const floor = client.duplicate({ enableAutoPipelining: true, lazyConnect: true });
  await floor.connect();
  const prefix = `bench-apollo-${randomUUID().slice(0, 8)}:`;
  const teams = Array.from({ length: config.teams }, (_, i) => ({ id: `team-${i + 1}` }));
  const variants = [];
  for (const id of config.variants)
    variants.push(await build(id, client, floor, `${prefix}${id}:`));
  for (const v of variants) await drive(v, teams, config.warmupMs);
  // a limiter that silently did nothing would look fast: each limited variant must have counted
  for (const v of variants.filter((x) => x.limited)) {
    if ((await keysUnder(client, v.prefix)).length === 0) {
      throw new Error(`${v.variant} wrote no counter to Redis during the warm-up`);
    }
  }
  for (let round = 0; round < config.rounds; round++) {
    for (const v of variants) {
      await sleep(100);
      const redis0 = await redisCpuSeconds(client);
      const node0 = process.cpuUsage();
      const { ops, elapsed } = await drive(v, teams, config.durationMs);
      const node = process.cpuUsage(node0);
      const redis1 = await redisCpuSeconds(client);
      v.runs.push({
        opsPerSecond: ops / elapsed,
        nodeCpuUsPerOp: (node.user + node.system) / ops,
        redisCpuUsPerOp: ((redis1 - redis0) * 1e6) / ops,
      });
    }
  }
  for (const v of variants) await v.apollo.stop();
  await deleteKeysUnder(client, prefix);
  floor.disconnect();
  client.disconnect();
  return variants.map((v) => ({ id: v.variant, runs: v.runs }));
}

answerJson(main());
