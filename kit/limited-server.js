// @ts-check
'use strict';
/*
 * A bare GraphQL-over-HTTP process for multi-process and cluster tests of the library itself:
 * the SDL from `LIMITED_SDL` with the built library's directive (../dist), every root field
 * resolving to true, and who a hit counts against from headers: `x-team` for `identify`,
 * `x-ip` for `by: "ip"`, and 'all' for `by: "global"`. Redis from `REDIS_URL` or
 * `REDIS_CLUSTER_NODES`, keys under `RATE_LIMIT_PREFIX`. Prints `listening <url>` once ready.
 */

const { createServer } = require('node:http');

const { makeExecutableSchema } = require('@graphql-tools/schema');
const { graphql } = require('graphql');
const { Cluster, Redis } = require('ioredis');

const { createRedisStore, rateLimitDirective } = require('../dist');

const nodes = process.env.REDIS_CLUSTER_NODES;
const client = nodes
  ? new Cluster(
      nodes.split(',').map((n) => {
        const [host, port] = n.split(':');
        return { host, port: Number(port) };
      }),
    )
  : new Redis(process.env.REDIS_URL ?? '');

const { typeDefs, transformer } = rateLimitDirective({
  store: createRedisStore({ client, prefix: process.env.RATE_LIMIT_PREFIX }),
  identify: (/** @type {Record<string, string | undefined>} */ ctx) => ctx.team,
  identities: { ip: (ctx) => ctx.ip, global: () => 'all' },
  timeoutMs: 2_000,
});
const schema = transformer(
  makeExecutableSchema({ typeDefs: [typeDefs, process.env.LIMITED_SDL ?? ''] }),
);
const rootValue = new Proxy({}, { get: () => true });

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
process.on('SIGTERM', () => {
  server.close();
  client.disconnect();
});
