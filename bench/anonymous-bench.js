'use strict';
/* global fetch */
/*
 * A victim's latency while callers without an identity send documents built to be slow to
 * price, on Apollo Server 5 with a budget (after `npm run build`):
 *   node bench/anonymous-bench.js ['<json config>']
 * config: `url` (a Redis; else a redis-server of its own on a free port), `durationMs` of each
 * phase (3,000), `attackers` (4), `rounds` (5), `libs` (builds to compare by name, such as
 * `{ "before": "<a build of an earlier commit>/dist" }`; else this build's dist).
 * Per build, one Apollo Server process (startStandaloneServer, this file with `serve`) with the
 * library's plugin and a budget of 1,000,000 points a minute on Redis, identity from the
 * `x-team` header. The victim sends `{ items(first: 5) { id } }` as its team, one request at a
 * time; phases, in interleaved rounds:
 *   idle        the victim alone
 *   anonymous   and `attackers` clients without an identity, one request in flight each,
 *               sending the hostile documents of kit/hostile-documents.js that took longest
 *               to refuse (spreads under their own `@include`, 12, 13 and 60 levels), each
 *               with a comment of its own so that no server cache answers it
 *   identified  the same documents from `attackers` clients that each send a team of their own
 *               (they reach the estimator, and are refused by its bound on work)
 * Prints one JSON line: per build and phase, every round's victim median and p90 (ms), the
 * victim's and the attackers' requests, the attackers' answers, and the server's CPU seconds.
 */

const { join } = require('node:path');
const { performance } = require('node:perf_hooks');

const { processCpuSeconds, answerJson } = require('./children');
const { freePort, sleep, startProcess, stopAll } = require('../kit/processes');
const { startRedisServer } = require('../kit/redis-server');
const hostile = require('../kit/hostile-documents');
const { quantile } = require('./stats');

const SDL = /* GraphQL */ `
  type Query {
    items(first: Int!): [Item!]! @listSize(slicingArguments: ["first"])
  }
  type Item {
    id: ID!
    children(first: Int): [Item!] @listSize(slicingArguments: ["first"])
  }
`;
const VICTIM = '{ items(first: 5) { id } }';
const ATTACKS = [12, 13, 60].map((n) => hostile.conditionedFragments(n));

async function serve(port, url, lib) {
  const { ApolloServer } = require('@apollo/server');
  const { startStandaloneServer } = require('@apollo/server/standalone');
  const { makeExecutableSchema } = require('@graphql-tools/schema');
  const { Redis } = require('ioredis');
  const { createRedisStore, rateLimitDirective } = require(lib);
  const client = new Redis(url);
  const prefix = `bench-anonymous-${process.pid}:`;
  const store = createRedisStore({ client, prefix });
  // the store opens its connection and loads its script before the first request is timed
  const probe = {
    action: 'opened',
    algorithm: 'FIXED_WINDOW',
    windowSeconds: 1,
    limit: 1,
    cost: 1,
  };
  while (!Array.isArray(await store.peek('opened', [probe]).catch(() => null))) await sleep(50);
  const directive = rateLimitDirective({
    store,
    identify: (context) => context.team,
    budget: { limit: 1_000_000, window: 60 },
    // a loaded 2-core machine: a slow answer is a latency to measure, not a store failure
    timeoutMs: 5_000,
  });
  const items = (_, { first }) => Array.from({ length: first }, (_x, i) => ({ id: String(i) }));
  const schema = directive.transformer(
    makeExecutableSchema({ typeDefs: [directive.typeDefs, SDL], resolvers: { Query: { items } } }),
  );
  const apollo = new ApolloServer({ schema, plugins: [directive.plugin] });
  await startStandaloneServer(apollo, {
    listen: { port, host: '127.0.0.1' },
    context: async ({ req }) => ({ team: req.headers['x-team'] || undefined }),
  });
  process.stdout.write(`listening ${port}\n`);
  process.once('SIGTERM', () => {
    void apollo.stop().finally(() => {
      client.disconnect();
      process.exit(0);
    });
  });
}

async function post(endpoint, query, team) {
  const response = await fetch(endpoint, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(team && { 'x-team': team }) },
    body: JSON.stringify({ query }),
  });
  return response.json();
}

/** The victim alone, or beside `attackers` loops, for `durationMs`. */
async function phase(endpoint, serverPid, { durationMs, attackers }, attack) {
  const deadline = performance.now() + durationMs;
  const latencies = [];
  const codes = {};
  let attacks = 0;
  const victim = async () => {
    while (performance.now() < deadline) {
      const started = performance.now();
      const body = await post(endpoint, VICTIM, 'victim');
      latencies.push(performance.now() - started);
      if (body.errors || body.data?.items?.length !== 5) {
        throw new Error(`victim: ${JSON.stringify(body)}`);
      }
    }
  };
  const attacker = async (i) => {
    for (let k = i; performance.now() < deadline; k++) {
      const team = attack === 'identified' ? `attacker-${i}` : undefined;
      // a text of its own each time: Apollo would hand back the document it parsed before,
      // and the estimator the refusal it kept for that document
      const body = await post(endpoint, `${ATTACKS[k % ATTACKS.length]}\n# ${i} ${k}`, team);
      const code = body.errors?.[0]?.extensions?.code ?? 'none';
      codes[code] = (codes[code] ?? 0) + 1;
      attacks++;
    }
  };
  const cpu0 = processCpuSeconds(serverPid);
  await Promise.all([
    victim(),
    ...(attack ? Array.from({ length: attackers }, (_, i) => attacker(i)) : []),
  ]);
  const serverCpuS = processCpuSeconds(serverPid) - cpu0;
  latencies.sort((a, b) => a - b);
  return {
    victimP50Ms: quantile(latencies, 0.5),
    victimP90Ms: quantile(latencies, 0.9),
    victimRequests: latencies.length,
    attacks,
    codes,
    serverCpuS,
  };
}

/** A server of the library built at `lib`, listening. */
async function start(url, lib) {
  const port = await freePort();
  const server = startProcess(
    process.execPath,
    [join(__dirname, 'anonymous-bench.js'), 'serve', String(port), url, lib],
    {
      env: { ...process.env, NODE_ENV: 'production' },
    },
  );
  await server.waitForOutput(/listening/, 30_000);
  return { server, endpoint: `http://127.0.0.1:${port}/` };
}

async function main() {
  const config = {
    durationMs: 3_000,
    attackers: 4,
    rounds: 5,
    ...JSON.parse(process.argv[2] || '{}'),
  };
  if (!config.url) {
    const redis = await startRedisServer();
    config.url = redis.url;
  }
  // `libs`: builds to compare, by name (a release before this one, say); else this build
  const libs = config.libs ?? { current: join(__dirname, '..', 'dist') };
  const servers = {};
  try {
    for (const [name, lib] of Object.entries(libs)) servers[name] = await start(config.url, lib);
    const results = {};
    for (const [name, { server, endpoint }] of Object.entries(servers)) {
      results[name] = { idle: [], anonymous: [], identified: [] };
      // warm-up
      await phase(endpoint, server.pid, { ...config, durationMs: 1_000 }, 'identified');
    }
    for (let round = 0; round < config.rounds; round++) {
      for (const [name, { server, endpoint }] of Object.entries(servers)) {
        for (const [attack, runs] of Object.entries(results[name])) {
          const kind = attack === 'idle' ? undefined : attack;
          runs.push(await phase(endpoint, server.pid, config, kind));
        }
      }
    }
    return results;
  } finally {
    await stopAll();
  }
}

if (process.argv[2] === 'serve') {
  serve(Number(process.argv[3]), process.argv[4], process.argv[5]).catch((error) => {
    process.stderr.write(`${error.stack}\n`);
    process.exit(1);
  });
} else {
  answerJson(main());
}
