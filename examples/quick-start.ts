import { ApolloServer } from '@apollo/server';
import { startStandaloneServer } from '@apollo/server/standalone';
import { makeExecutableSchema } from '@graphql-tools/schema';
import { Redis } from 'ioredis';
import { createRedisStore, rateLimitDirective } from 'graphql-atomic-rate-limit';

type Context = { team?: { id: string } };

// No Redis? `store: createMemoryStore()` counts in this process alone, with no client at all.
const redis = new Redis(process.env.REDIS_URL ?? 'redis://localhost:6379');
// Without a listener, ioredis prints "[ioredis] Unhandled error event" on every reconnect.
redis.on('error', (error) => console.error(`Redis: ${error.message}`));

const { typeDefs, transformer, plugin } = rateLimitDirective<Context>({
  store: createRedisStore({ client: redis }),
  // who a hit counts against; say it for your context (the default reads context.team?.id)
  identify: (context) => context.team?.id,
});
const appTypeDefs = `
  type Query { ok: Boolean }
  type Mutation {
    submitFlag(challengeId: ID!, flag: String!): Submission!
      @rateLimit(action: "submit", window: 60, limit: 3)
  }
  type Submission { correct: Boolean! }
`;
const resolvers = {
  Mutation: {
    submitFlag: (_: unknown, args: { flag: string }) => ({ correct: args.flag === 'CTF{hi}' }),
  },
};
const schema = transformer(makeExecutableSchema({ typeDefs: [typeDefs, appTypeDefs], resolvers }));
const server = new ApolloServer<Context>({ schema, plugins: [plugin] }); // headers + start-up guard

void startStandaloneServer(server, {
  listen: { port: Number(process.env.PORT ?? 4000) },
  // A real app looks the team up by its token; here the token is the team's id.
  context: async ({ req }) => {
    const token = req.headers.authorization?.replace(/^Bearer /, '');
    return { team: token ? { id: token } : undefined };
  },
}).then(({ url }) => console.log(`Ready at ${url}`));
process.once('SIGTERM', () => void server.stop().then(() => redis.quit()));
