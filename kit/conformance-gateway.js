// @ts-check
'use strict';
/*
 * The conformance app (./conformance-app.js) behind Hive Gateway, as its own process (the
 * gateway loads its transports with import(), which Jest cannot run): the app as an Apollo
 * subgraph deciding its fields' @rateLimit, composed into a supergraph, and the gateway in
 * front charging the budget (envelopPlugin), the identity (`x-identity`) passed to the
 * subgraph. `CONFORMANCE` (JSON): `prefix` (the stores' keys), `replace` (put another resolver
 * in Query.replaced's place after the transform); Redis from `REDIS_URL`. Serves `GET /runs`
 * (the subgraph's resolver runs) and prints `listening <url>`.
 */

const { createServer } = require('node:http');

const { composeServices } = require('@apollo/composition');
const { ApolloServer } = require('@apollo/server');
const { startStandaloneServer } = require('@apollo/server/standalone');
const { buildSubgraphSchema } = require('@apollo/subgraph');
const { createGatewayRuntime } = require('@graphql-hive/gateway-runtime');
const { addResolversToSchema } = require('@graphql-tools/schema');
const { parse } = require('graphql');
const { Redis } = require('ioredis');
const { fetch } = require('undici');
const { createRedisStore, rateLimitDirective } = require('../dist');
const { BUDGET, SDL, replacementFor, resolversFor } = require('./conformance-app');

const FEDERATION = `
  extend schema
    @link(url: "https://specs.apollo.dev/federation/v2.9", import: ["@inaccessible", "@cost", "@listSize"])
  extend enum RateLimitAlgorithm @inaccessible
`;

async function main() {
  const { prefix, replace } = JSON.parse(process.env.CONFORMANCE ?? '{}');
  const client = new Redis(process.env.REDIS_URL ?? '');
  /** @type {Record<string, number>} */
  const runs = {};
  const store = createRedisStore({ client, prefix });
  const fields = rateLimitDirective({
    store,
    identify: (/** @type {{ identity?: string }} */ context) => context.identity,
    timeoutMs: 2_000,
  });
  // the subscription is not federated here: the gateway serves none in this set-up
  const served = SDL.replace(/type Subscription \{[^}]*\}/, '');
  const transformed = fields.transformer(
    buildSubgraphSchema({
      typeDefs: parse(`${fields.typeDefs}\n${FEDERATION}\n${served}`),
      resolvers: /** @type {never} */ (resolversFor(runs)),
    }),
  );
  const schema = replace
    ? addResolversToSchema({ schema: transformed, resolvers: replacementFor(runs) })
    : transformed;
  const subgraph = new ApolloServer({ schema, plugins: [fields.plugin] });
  const { url: subgraphUrl } = await startStandaloneServer(subgraph, {
    listen: { port: 0, host: '127.0.0.1' },
    context: async ({ req }) => ({ identity: req.headers['x-identity'] }),
  });
  // composed from the SDL the subgraph serves, as a registry does
  const response = await fetch(subgraphUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ query: '{ _service { sdl } }' }),
  });
  const { data } = /** @type {{ data: { _service: { sdl: string } } }} */ (await response.json());
  const { supergraphSdl, errors } = composeServices([
    { name: 'conformance', url: subgraphUrl, typeDefs: parse(data._service.sdl) },
  ]);
  if (!supergraphSdl) throw new Error(errors?.map((e) => e.message).join('\n'));

  const budget = rateLimitDirective({
    store,
    identify: (/** @type {{ request: Request }} */ { request }) =>
      request.headers.get('x-identity') ?? undefined,
    budget: BUDGET,
    timeoutMs: 2_000,
  });
  const gateway = createGatewayRuntime({
    supergraph: supergraphSdl,
    plugins: () => [/** @type {never} */ (budget.envelopPlugin)],
    batching: true,
    logging: false,
    // The contract counts each client's operation. With its default, the gateway sends identical
    // queries in flight at once (same headers, same identity) to a subgraph as one request, whose
    // field is then decided once for all of them (docs/gateways.md says so).
    transportEntries: { '*': { options: { deduplicateInflightRequests: false } } },
    propagateHeaders: {
      fromClientToSubgraphs: ({ request }) => ({ 'x-identity': request.headers.get('x-identity') }),
    },
  });
  await gateway.getSchema();
  const server = createServer((req, res) => {
    if (req.url === '/runs') return void res.end(JSON.stringify(runs));
    return gateway.requestListener(req, res);
  });
  process.once('SIGTERM', () => {
    server.close();
    void Promise.all([gateway.dispose(), subgraph.stop()]).then(() => client.quit());
  });
  server.listen(0, '127.0.0.1', () => {
    const address = /** @type {import('node:net').AddressInfo} */ (server.address());
    console.log(`listening http://127.0.0.1:${address.port}/graphql`);
  });
}

main().catch((error) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
