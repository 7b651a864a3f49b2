import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

import { makeExecutableSchema } from '@graphql-tools/schema';
import { createYoga, type YogaInitialContext } from 'graphql-yoga';
import { Redis } from 'ioredis';
import { createRedisStore, rateLimitDirective } from 'graphql-atomic-rate-limit';

// Without Redis (one process only): store: createMemoryStore(), and no client to close.
const redis = new Redis(process.env.REDIS_URL ?? 'redis://localhost:6379');
const { typeDefs, transformer, envelopPlugin } = rateLimitDirective<YogaInitialContext>({
  store: createRedisStore({ client: redis }),
  // Yoga puts the Fetch API request in the context; here the bearer token is the team's id.
  identify: ({ request }) => request.headers.get('authorization')?.replace(/^Bearer /, ''),
});
const appTypeDefs = `
  type Query { ok: Boolean }
  type Mutation {
    submitFlag(flag: String!): Boolean! @rateLimit(action: "submit", window: 60, limit: 3)
  }
`;
const resolvers = {
  Mutation: { submitFlag: (_: unknown, args: { flag: string }) => args.flag === 'CTF{hi}' },
};
const schema = transformer(makeExecutableSchema({ typeDefs: [typeDefs, appTypeDefs], resolvers }));
const yoga = createYoga({ schema, plugins: [envelopPlugin] }); // headers + start-up guard

const server = createServer(yoga.requestListener);
server.listen(Number(process.env.PORT ?? 4000), () => {
  console.log(`Ready at http://localhost:${(server.address() as AddressInfo).port}/graphql`);
});
process.once('SIGTERM', () => server.close(() => void redis.quit()));
