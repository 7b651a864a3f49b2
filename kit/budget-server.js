// @ts-check
'use strict';
/*
 * A GraphQL Yoga process with an operation cost budget, for multi-process tests of the budget:
 * the built library's directive (../dist) and envelop plugin, `budget` from the JSON in
 * `BUDGET`, who an operation counts against from the `x-team` header. Its one field,
 * `items(first, returned)`, is priced at `first` and returns `returned` items (`first` when
 * absent); `filtered(first, where)` is the same with an input object argument, and `runs` (free)
 * says how many times those two resolvers ran. `slow(ms)` (free) waits `ms` and answers when it
 * ran, `[start, end]` in ms since the epoch on this machine's monotonic clock, for tests that
 * count operations running at once across processes. Redis from `REDIS_URL`, keys under
 * `RATE_LIMIT_PREFIX`; the directive's `timeoutMs` from `TIMEOUT_MS` (2000 ms when absent).
 * `HOST=mercurius` serves it with Mercurius instead (`JIT` its `jit` option); `JIT=1` on Yoga adds
 * envelop's graphql-jit plugin. Prints `listening <url>` once ready.
 */

const { createServer } = require('node:http');
const { performance } = require('node:perf_hooks');

const { makeExecutableSchema } = require('@graphql-tools/schema');
const { createYoga } = require('graphql-yoga');
const { Redis } = require('ioredis');

const { createRedisStore, rateLimitDirective } = require('../dist');

const client = new Redis(process.env.REDIS_URL ?? '');
const directive = rateLimitDirective({
  store: createRedisStore({ client, prefix: process.env.RATE_LIMIT_PREFIX }),
  identify: (/** @type {{ team?: string }} */ ctx) => ctx.team,
  budget: JSON.parse(process.env.BUDGET ?? '{}'),
  timeoutMs: Number(process.env.TIMEOUT_MS ?? 2_000),
});
const sdl = `type Query {
  items(first: Int!, returned: Int): [Item!]! @listSize(slicingArguments: ["first"])
  filtered(first: Int!, where: Where!): [Item!]! @listSize(slicingArguments: ["first"])
  runs: Int! @cost(weight: 0)
  slow(ms: Int!): [Float!]! @cost(weight: 0)
}
input Where { min: Int }
type Item { id: ID! }`;
let runs = 0;
const items = (/** @type {unknown} */ _, /** @type {{ first: number, returned?: number }} */ a) => (
  runs++,
  Array.from({ length: a.returned ?? a.first }, (_, i) => ({ id: String(i) }))
);
const clock = () => performance.timeOrigin + performance.now();
const slow = async (/** @type {unknown} */ _, /** @type {{ ms: number }} */ a) => {
  runs++;
  const start = clock();
  await new Promise((resolve) => setTimeout(resolve, a.ms));
  return [start, clock()];
};
const resolvers = { Query: { items, filtered: items, runs: () => runs, slow } };
const jit = Number(process.env.JIT ?? 0);

if (process.env.HOST === 'mercurius') {
  const Fastify = require('fastify');
  const mercurius = require('mercurius');
  const { mercuriusRateLimit } = require('../dist/mercurius');
  const app = Fastify();
  const schema = makeExecutableSchema({ typeDefs: [directive.typeDefs, sdl], resolvers });
  void app
    .register(mercurius, {
      schema,
      jit,
      path: '/',
      context: (/** @type {import('fastify').FastifyRequest} */ request) => ({
        team: [request.headers['x-team']].flat()[0],
      }),
    })
    .register(mercuriusRateLimit, { directive })
    .listen({ port: 0, host: '127.0.0.1' })
    .then((/** @type {string} */ url) => console.log(`listening ${url}/`));
  process.on('SIGTERM', () => {
    void app.close().then(() => client.disconnect());
  });
} else {
  const schema = directive.transformer(
    makeExecutableSchema({ typeDefs: [directive.typeDefs, sdl], resolvers }),
  );
  const { useGraphQlJit } = require('@envelop/graphql-jit');
  const yoga = createYoga({
    schema,
    plugins: jit ? [useGraphQlJit(), directive.envelopPlugin] : [directive.envelopPlugin],
    logging: false,
    graphqlEndpoint: '/',
    context: ({ request }) => ({ team: request.headers.get('x-team') ?? undefined }),
  });

  const server = createServer(yoga);
  server.listen(0, '127.0.0.1', () => {
    const address = server.address();
    const port = typeof address === 'object' && address ? address.port : 0;
    console.log(`listening http://127.0.0.1:${port}/`);
  });
  process.on('SIGTERM', () => {
    server.close();
    client.disconnect();
  });
}
