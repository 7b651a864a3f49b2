'use strict';
/*
 * graphql-js `execute()` of a limited submitFlag mutation, every variant in one Node process,
 * run as a child of bench/run.js:
 *   node bench/execute-bench.js '<json config: url, rounds, durationMs, warmupMs, inFlight, teams>'
 * The document is parsed and validated once per variant; each operation gets a context of its
 * own with one of `teams` teams, and `inFlight` operations are always in flight. Variants, in
 * interleaved rounds:
 *   none        no directive, synchronous resolver
 *   none-await  no directive, the resolver awaits once (as a limited field does)
 *   ours        @rateLimit of this library (../dist) through `transformer`, on a Redis store
 *   incr        no directive, the resolver awaits one INCR of its team's key (ioredis, auto-
 *               pipelined): a round trip to Redis with no decision, the floor of any limiter
 *               that asks Redis once per hit
 *   grld        graphql-rate-limit-directive (bench/peers) on rate-limiter-flexible RateLimiterRedis
 * Prints one JSON line: per variant, every run's ops/s and CPU per operation (Node and Redis).
 */

const { randomUUID } = require('node:crypto');
const { createRequire } = require('node:module');
const { join } = require('node:path');
const { performance } = require('node:perf_hooks');

const { sleep } = require('../kit/processes');
const { deleteKeysUnder, keysUnder } = require('../kit/redis-server');
const { redisCpuSeconds } = require('./redis-info');
const { answerJson } = require('./children');

const config = JSON.parse(process.argv[2] || '{}');
const LIMIT = 1_000_000; // per team per window: far above what a run sends, so nothing blocks
const FLAG = 'CTF{welcome_aboard}';
const OPERATION =
  'mutation Submit($c: ID!, $f: String!) { submitFlag(challengeId: $c, flag: $f) { correct } }';
const VARIABLES = { c: 'warmup', f: 'CTF{guess}' };

/** The client options the reference server uses (fail fast, never resend a command). */
const { CLIENT_OPTIONS } = require('../server/dist/redis-client');

const sdl = (directive) => `
  type Query { ok: Boolean }
  type Mutation { submitFlag(challengeId: ID!, flag: String!): Submission! ${directive} }
  type Submission { correct: Boolean! }
`;

const flags = new Map([['warmup', FLAG]]);
const submitFlag = (_source, { challengeId, flag }) => ({
  correct: flags.get(challengeId) === flag,
});
const resolversFor = (variant) => ({
  Mutation: {
    submitFlag:
      variant === 'none-await'
        ? async (...args) => {
            await null;
            return submitFlag(...args);
          }
        : submitFlag,
  },
});

/**
 * One variant's executable schema and its parsed, validated document, with the graphql it was
 * built by (graphql-rate-limit-directive's comes from bench/peers).
 */
async function build(variant, prefix) {
  const load =
    variant === 'grld' ? createRequire(join(__dirname, 'peers', 'package.json')) : require;
  const graphql = load('graphql');
  const { makeExecutableSchema } = load('@graphql-tools/schema');
  const { Redis } = load('ioredis');
  const resolvers = resolversFor(variant);
  let schema;
  let client;
  if (variant === 'none' || variant === 'none-await') {
    schema = makeExecutableSchema({ typeDefs: sdl(''), resolvers });
  } else if (variant === 'incr') {
    client = new Redis(config.url, { ...CLIENT_OPTIONS, enableAutoPipelining: true });
    await client.connect();
    const submit = async (source, args, { team }) => {
      await client.incr(`${prefix}${team.id}`);
      return submitFlag(source, args);
    };
    schema = makeExecutableSchema({
      typeDefs: sdl(''),
      resolvers: { Mutation: { submitFlag: submit } },
    });
  } else {
    client = new Redis(config.url, CLIENT_OPTIONS);
    await client.connect();
    if (variant === 'ours') {
      const { createRedisStore, rateLimitDirective } = require('../dist');
      const directive = rateLimitDirective({ store: createRedisStore({ client, prefix }) });
      const typeDefs = sdl(`@rateLimit(action: "submit", window: 60, limit: ${LIMIT})`);
      schema = directive.transformer(
        makeExecutableSchema({ typeDefs: [directive.typeDefs, typeDefs], resolvers }),
      );
    } else {
      const { rateLimitDirective } = load('graphql-rate-limit-directive');
      const { RateLimiterRedis } = load('rate-limiter-flexible');
      const { rateLimitDirectiveTypeDefs, rateLimitDirectiveTransformer } = rateLimitDirective({
        // per team, as ours counts per identity (its default key is the field coordinate alone)
        keyGenerator: (_args, _source, _fieldArgs, context, info) =>
          `${context.team.id}:${info.parentType.name}.${info.fieldName}`,
        limiterClass: RateLimiterRedis,
        limiterOptions: { storeClient: client, keyPrefix: prefix },
      });
      const typeDefs = sdl(`@rateLimit(limit: ${LIMIT}, duration: 60)`);
      schema = rateLimitDirectiveTransformer(
        makeExecutableSchema({ typeDefs: [rateLimitDirectiveTypeDefs, typeDefs], resolvers }),
      );
    }
  }
  const document = graphql.parse(OPERATION);
  const invalid = graphql.validate(schema, document);
  if (invalid.length > 0) throw new Error(`${variant}: ${invalid[0].message}`);
  return { variant, execute: graphql.execute, schema, document, client, runs: [] };
}

/** Keeps `inFlight` operations in flight until `durationMs` passes. */
async function drive(v, teams, durationMs) {
  let ops = 0;
  let failed = 0;
  let firstError;
  const started = performance.now();
  const deadline = started + durationMs;
  const worker = async () => {
    while (performance.now() < deadline) {
      const result = await v.execute({
        schema: v.schema,
        document: v.document,
        variableValues: VARIABLES,
        contextValue: { team: teams[(Math.random() * teams.length) | 0] },
      });
      if (result.errors || result.data?.submitFlag?.correct !== false) {
        failed++;
        firstError ??= result.errors?.[0] ?? new Error(JSON.stringify(result));
      }
      ops++;
    }
  };
  await Promise.all(Array.from({ length: config.inFlight }, worker));
  if (failed > 0) throw new Error(`${v.variant}: ${failed} of ${ops} failed: ${firstError}`);
  return { ops, elapsed: (performance.now() - started) / 1000 };
}

async function main() {
  const { Redis } = require('ioredis');
  const admin = new Redis(config.url, CLIENT_OPTIONS);
  await admin.connect();
  const prefix = `bench-exec-${randomUUID().slice(0, 8)}:`;
  const teams = Array.from({ length: config.teams }, (_, i) => ({ id: `team-${i + 1}` }));
  const variants = [];
  for (const id of config.variants) variants.push(await build(id, `${prefix}${id}:`));
  for (const v of variants) await drive(v, teams, config.warmupMs);
  // a directive that silently did nothing would look fast: each limited variant must have counted
  for (const v of variants.filter((x) => x.client)) {
    if ((await keysUnder(admin, `${prefix}${v.variant}:`)).length === 0) {
      throw new Error(`${v.variant} wrote no counter to Redis during the warm-up`);
    }
  }
  for (let round = 0; round < config.rounds; round++) {
    for (const v of variants) {
      await sleep(100);
      const redis0 = await redisCpuSeconds(admin);
      const node0 = process.cpuUsage();
      const { ops, elapsed } = await drive(v, teams, config.durationMs);
      const node = process.cpuUsage(node0);
      const redis1 = await redisCpuSeconds(admin);
      v.runs.push({
        opsPerSecond: ops / elapsed,
        nodeCpuUsPerOp: (node.user + node.system) / ops,
        redisCpuUsPerOp: ((redis1 - redis0) * 1e6) / ops,
      });
    }
  }
  await deleteKeysUnder(admin, prefix);
  for (const v of variants) v.client?.disconnect();
  admin.disconnect();
  return variants.map((v) => ({ id: v.variant, runs: v.runs }));
}

answerJson(main());
