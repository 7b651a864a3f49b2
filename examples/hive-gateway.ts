import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

import { createGatewayRuntime } from '@graphql-hive/gateway-runtime';
import { Redis } from 'ioredis';
import { createRedisStore, rateLimitDirective } from 'graphql-atomic-rate-limit';

// Without Redis (one process only): store: createMemoryStore(), and no client to close.
const redis = new Redis(process.env.REDIS_URL ?? 'redis://localhost:6379');
// Only the budget lives here: each @rateLimit is decided in the subgraph that resolves its field.
const store = createRedisStore({ client: redis });
const { envelopPlugin } = rateLimitDirective<{ request: Request }>({
  store,
  identify: ({ request }) => request.headers.get('authorization')?.replace(/^Bearer /, ''),
  budget: { limit: 1_000, window: 60 }, // priced from the supergraph's @cost and @listSize
});
const gateway = createGatewayRuntime({
  supergraph: process.env.SUPERGRAPH ?? 'supergraph.graphql', // composed from the subgraphs
  plugins: () => [envelopPlugin],
  propagateHeaders: {
    // the subgraphs count the same team as the gateway's budget
    fromClientToSubgraphs: ({ request }) => ({
      authorization: request.headers.get('authorization'),
    }),
    // their RateLimit headers reach the client, merged by envelopPlugin with the budget's
    fromSubgraphsToClient: ({ response }) => ({
      ratelimit: response.headers.get('ratelimit'),
      'ratelimit-policy': response.headers.get('ratelimit-policy'),
      'retry-after': response.headers.get('retry-after'),
    }),
  },
});

const server = createServer(gateway.requestListener);
// loads the supergraph now, not at the first request: a bad one fails at start, and the budget
// warns at start if composition dropped @cost and @listSize; listens once the store is set up
void Promise.all([gateway.getSchema(), store.ready()]).then(() => {
  server.listen(Number(process.env.PORT ?? 4000), () => {
    console.log(`Ready at http://localhost:${(server.address() as AddressInfo).port}/graphql`);
  });
});
process.once('SIGTERM', () => {
  server.close(() => void Promise.all([gateway.dispose(), store.close()]).then(() => redis.quit()));
});
