// @ts-check
'use strict';
/*
 * The conformance app (./conformance-app.js) on Mercurius as its own process: Jest cannot load
 * the cache Mercurius compiles graphql-jit queries into (an ES module it imports), so graphql-jit
 * runs only out of Jest. `CONFORMANCE` (JSON) says `jit` (Mercurius' option), `prefix` (the
 * store's keys) and `replace` (define Query.replaced's resolver again after the plugin); Redis
 * from `REDIS_URL`. Identity: the `x-identity` header, or `identity` in a websocket's
 * connection_init. Serves `GET /runs` (the resolvers' runs) and prints `listening <url>`.
 */

const Fastify = require('fastify');
const mercurius = require('mercurius');
const { Redis } = require('ioredis');
const { createRedisStore, rateLimitDirective } = require('../dist');
const { mercuriusRateLimit } = require('../dist/mercurius');
const { BUDGET, SDL, replacementFor, resolversFor } = require('./conformance-app');

async function main() {
  const { jit, prefix, replace } = JSON.parse(process.env.CONFORMANCE ?? '{}');
  const client = new Redis(process.env.REDIS_URL ?? '');
  /** @type {Record<string, number>} */
  const runs = {};
  const directive = rateLimitDirective({
    store: createRedisStore({ client, prefix }),
    identify: (/** @type {{ identity?: string }} */ context) => context.identity,
    budget: BUDGET,
    timeoutMs: 2_000,
  });
  const app = Fastify();
  await app.register(mercurius, {
    schema: [directive.typeDefs, SDL],
    resolvers: /** @type {never} */ (resolversFor(runs)),
    jit,
    allowBatchedQueries: true,
    context: (request) => ({ identity: request.headers['x-identity'] }),
    subscription: {
      onConnect: ({ payload }) => ({ identity: payload?.identity }),
    },
  });
  await app.register(mercuriusRateLimit, { directive });
  if (replace) app.graphql.defineResolvers(/** @type {never} */ (replacementFor(runs)));
  app.get('/runs', async () => runs);
  app.addHook('onClose', async () => void (await client.quit()));
  process.once('SIGTERM', () => void app.close());
  const address = await app.listen({ port: 0, host: '127.0.0.1' });
  console.log(`listening ${address}/graphql`);
}

main().catch((error) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
