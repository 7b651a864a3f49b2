import Fastify from 'fastify';
import mercurius, { type MercuriusContext } from 'mercurius';
import { Redis } from 'ioredis';
import { createRedisStore, rateLimitDirective } from 'graphql-atomic-rate-limit';
import { mercuriusRateLimit } from 'graphql-atomic-rate-limit/mercurius';

// without Redis (one process only): store: createMemoryStore()
const redis = new Redis(process.env.REDIS_URL ?? 'redis://localhost:6379');
const directive = rateLimitDirective<MercuriusContext>({
  store: createRedisStore({ client: redis }),
  // Mercurius puts Fastify's reply in the context; here the bearer token is the team's id.
  identify: ({ reply }) => reply.request.headers.authorization?.replace(/^Bearer /, ''),
  budget: { limit: 100, window: 60 }, // points per team; a mutation costs 10
});
const schema = `
  type Query { hint: String @cost(weight: 40) }
  type Mutation {
    submitFlag(flag: String!): Boolean! @rateLimit(action: "submit", window: 60, limit: 3)
  }
`;
const resolvers = {
  Query: { hint: () => 'Look closer' },
  Mutation: { submitFlag: (_: unknown, args: { flag: string }) => args.flag === 'CTF{hi}' },
};

const app = Fastify();
app.register(mercurius, {
  schema: [directive.typeDefs, schema],
  resolvers,
  jit: Number(process.env.JIT ?? 0), // 1: graphql-jit compiles each query; limits hold either way
});
app.register(mercuriusRateLimit, { directive }); // after mercurius: transform, budget, headers
app.addHook('onClose', () => redis.quit());
process.once('SIGTERM', () => void app.close());

void app.listen({ port: Number(process.env.PORT ?? 4000) }).then((address) => {
  console.log(`Ready at ${address}/graphql`);
});
