// @ts-check
'use strict';
/*
 * A forked process for the multi-process and Cluster tests of CONCURRENCY limits, on the built
 * library (../dist). One field, `slow`, limited to LIMIT calls in flight per team under leases of
 * LEASE seconds; its resolver counts itself in Redis (INCR of RUNNING_KEY when it starts, DECR
 * before it returns), so the most calls running at once across every process is read from the
 * counter's replies, in Redis' own order. Redis from REDIS_URL or REDIS_CLUSTER_NODES, keys under
 * RATE_LIMIT_PREFIX. Talks over IPC: sends `{ ready }` once its store is open; on
 * `{ go: n, hang? }` starts n calls at once (that never end, with `hang`) and answers
 * `{ done: codes }` (`'ok'`, or each error's code); sends `{ started: running }` as each call
 * starts.
 */

const { makeExecutableSchema } = require('@graphql-tools/schema');
const { graphql } = require('graphql');
const { createRedisStore, rateLimitDirective } = require('../dist');
const { clusterNodes } = require('../server/dist/redis-client');
const { connectClient } = require('./clients');

const env = process.env;
const nodes = env.REDIS_CLUSTER_NODES ? clusterNodes(env.REDIS_CLUSTER_NODES) : undefined;
const send = (/** @type {object} */ message) => process.send?.(message);
const sleep = (/** @type {number} */ ms) => new Promise((r) => setTimeout(r, ms));

async function main() {
  const client = await connectClient('ioredis', { url: env.REDIS_URL, nodes });
  const store = createRedisStore({ client, prefix: env.RATE_LIMIT_PREFIX });
  const { typeDefs, transformer } = rateLimitDirective({
    store,
    identify: (/** @type {{ team: string }} */ ctx) => ctx.team,
    timeoutMs: 2_000,
  });
  const key = env.RUNNING_KEY ?? 'running';
  let hang = false;
  const schema = transformer(
    makeExecutableSchema({
      typeDefs: [
        typeDefs,
        `type Query { slow: Boolean @rateLimit(action: "slow", window: ${env.LEASE}, ` +
          `limit: ${env.LIMIT}, algorithm: CONCURRENCY) }`,
      ],
      resolvers: {
        Query: {
          slow: async () => {
            const running = Number(await client.incr(key));
            send({ started: running });
            if (hang) await new Promise(() => undefined);
            await sleep(Number(env.HOLD_MS ?? 300));
            await client.decr(key);
            return true;
          },
        },
      },
    }),
  );
  /** @type {import('../dist').RateLimitRule} */
  const rule = {
    action: 'slow',
    algorithm: 'CONCURRENCY',
    windowSeconds: Number(env.LEASE),
    limit: Number(env.LIMIT),
    cost: 1,
  };
  // the store is open, its scripts loaded, before the barrier: no call pays for set-up. 64
  // identities, so that each master of a Cluster is read (each misses with odds of (2/3)^64)
  const identities = Array.from({ length: 64 }, (_, i) => `warm-up-${i}`);
  for (;;) {
    const read = await Promise.all(
      identities.map((id) => store.peek?.(id, [rule]).catch(() => undefined)),
    );
    if (read.every(Boolean)) break;
    await sleep(50);
  }
  process.on('message', (/** @type {{ go: number, hang?: boolean, team?: string }} */ m) => {
    hang = m.hang === true;
    const contextValue = { team: m.team ?? 'team-1' };
    const calls = Array.from({ length: m.go }, () =>
      graphql({ schema, source: '{ slow }', contextValue }).then((r) =>
        r.errors?.length ? String(r.errors[0]?.extensions?.code) : 'ok',
      ),
    );
    void Promise.all(calls).then((done) => send({ done }));
  });
  send({ ready: true });
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
