// @ts-check
'use strict';
/*
 * A forked process for the test of fresh processes under load, on the built library (../dist):
 * it connects to Redis (REDIS_URL or REDIS_CLUSTER_NODES), makes a store with its default options
 * (keys under RATE_LIMIT_PREFIX) and says `{ ready }` at once, without awaiting the store's
 * `ready()`: its first hits come while the store sets itself up. One field, `hit`, limited to
 * LIMIT per minute for every caller. On `{ go: n }` it starts n calls at once and answers
 * `{ done: codes }` ('ok', or each error's code). TIMEOUT_MS, when set, is the directive's
 * `timeoutMs` (its default otherwise).
 */

const { makeExecutableSchema } = require('@graphql-tools/schema');
const { graphql } = require('graphql');
const { createRedisStore, rateLimitDirective } = require('../dist');
const { connectClient } = require('./clients');

const env = process.env;
const nodes = env.REDIS_CLUSTER_NODES?.split(',').map((n) => {
  const [host, port] = n.split(':');
  return { host: host ?? '127.0.0.1', port: Number(port) };
});
const send = (/** @type {object} */ message) => process.send?.(message);

async function main() {
  const client = await connectClient('ioredis', { url: env.REDIS_URL, nodes });
  const store = createRedisStore({ client, prefix: env.RATE_LIMIT_PREFIX });
  const { typeDefs, transformer } = rateLimitDirective({
    store,
    identify: () => 'everyone',
    timeoutMs: env.TIMEOUT_MS === undefined ? undefined : Number(env.TIMEOUT_MS),
  });
  const schema = transformer(
    makeExecutableSchema({
      typeDefs: [
        typeDefs,
        `type Query { a: Int } type Mutation { hit: Boolean ` +
          `@rateLimit(action: "burst", window: 60, limit: ${Number(env.LIMIT)}) }`,
      ],
      resolvers: { Mutation: { hit: () => true } },
    }),
  );
  process.on('message', (/** @type {{ go: number }} */ m) => {
    const calls = Array.from({ length: m.go }, () =>
      graphql({ schema, source: 'mutation { hit }' }).then((r) =>
        r.errors?.length ? String(r.errors[0]?.extensions?.code) : 'ok',
      ),
    );
    void Promise.all(calls).then(async (done) => {
      send({ done });
      await store.close();
      await client.quit();
    });
  });
  send({ ready: true });
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
