// @ts-check
'use strict';
/*
 * A bare GraphQL-over-HTTP process for multi-process and cluster tests of the library itself:
 * the SDL from `LIMITED_SDL` with the built library's directive (../dist), every root field
 * resolving to true, and who a hit counts against from headers: `x-team` for `identify`,
 * `x-ip` for `by: "ip"`, and 'all' for `by: "global"`. Redis from `REDIS_URL` or
 * `REDIS_CLUSTER_NODES`, keys under `RATE_LIMIT_PREFIX`, through a client of the family
 * `REDIS_CLIENT` names (./clients.js; ioredis when unset). Prints `listening <url>` once ready.
 */

const { createServer } = require('node:http');

const { makeExecutableSchema } = require('@graphql-tools/schema');
const { graphql } = require('graphql');
const { createRedisStore, rateLimitDirective } = require('../dist');
const { clusterNodes } = require('../server/dist/redis-client');
const { closeClient, connectClient } = require('./clients');

const family = /** @type {import('./clients').ClientFamily} */ (
  process.env.REDIS_CLIENT ?? 'ioredis'
);
const given = process.env.REDIS_CLUSTER_NODES;
const nodes = given ? clusterNodes(given) : undefined;

async function main() {
  const client = await connectClient(family, { url: process.env.REDIS_URL, nodes });
  const { typeDefs, transformer } = rateLimitDirective({
    store: createRedisStore({ client, prefix: process.env.RATE_LIMIT_PREFIX }),
    identify: (/** @type {Record<string, string | undefined>} */ ctx) => ctx.team,
    identities: {
      ip: (/** @type {Record<string, string | undefined>} */ ctx) => ctx.ip,
      global: () => 'all',
    },
    timeoutMs: 2_000,
  });
  const schema = transformer(
    makeExecutableSchema({ typeDefs: [typeDefs, process.env.LIMITED_SDL ?? ''] }),
  );
  const rootValue = new Proxy({}, { get: () => true });
  const server = serve(schema, rootValue);
  process.on('SIGTERM', () => {
    server.close();
    void closeClient(family, client);
  });
}

/**
 * @param {import('graphql').GraphQLSchema} schema
 * @param {object} rootValue
 */
function serve(schema, rootValue) {
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => (body += chunk));
    req.on('end', () => {
      const { query, variables } = JSON.parse(body);
      const contextValue = { team: req.headers['x-team'], ip: req.headers['x-ip'] };
      graphql({ schema, source: query, variableValues: variables, rootValue, contextValue }).then(
        (result) => {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(JSON.stringify(result));
        },
      );
    });
  });
  server.listen(0, '127.0.0.1', () => {
    const address = server.address();
    const port = typeof address === 'object' && address ? address.port : 0;
    console.log(`listening http://127.0.0.1:${port}/`);
  });
  return server;
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
