// @ts-check
'use strict';
/*
 * A GraphQL Yoga process with an operation cost budget, for multi-process tests of the budget:
 * the built library's directive (../dist) and envelop plugin, `budget` from the JSON in
 * `BUDGET`, who an operation counts against from the `x-team` header. Its one field,
 * `items(first, returned)`, is priced at `first` and returns `returned` items (`first` when
 * absent). Redis from `REDIS_URL`, keys under `RATE_LIMIT_PREFIX`. Prints `listening <url>`
 * once ready.
 */

const { createServer } = require('node:http');

const { makeExecutableSchema } = require('@graphql-tools/schema');
const { createYoga } = require('graphql-yoga');
const { Redis } = require('ioredis');

const { createRedisStore, rateLimitDirective } = require('../dist');

const client = new Redis(process.env.REDIS_URL ?? '');
const directive = rateLimitDirective({
  store: createRedisStore({ client, prefix: process.env.RATE_LIMIT_PREFIX }),
  identify: (/** @type {{ team?: string }} */ ctx) => ctx.team,
  budget: JSON.parse(process.env.BUDGET ?? '{}'),
  timeoutMs: 2_000,
});
const sdl = `type Query {
  items(first: Int!, returned: Int): [Item!]! @listSize(slicingArguments: ["first"])
}
type Item { id: ID! }`;
const items = (/** @type {unknown} */ _, /** @type {{ first: number, returned?: number }} */ a) =>
  Array.from({ length: a.returned ?? a.first }, (_, i) => ({ id: String(i) }));
const schema = directive.transformer(
  makeExecutableSchema({ typeDefs: [directive.typeDefs, sdl], resolvers: { Query: { items } } }),
);
const yoga = createYoga({
  schema,
  plugins: [directive.envelopPlugin],
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
