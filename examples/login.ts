import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';

import { makeExecutableSchema } from '@graphql-tools/schema';
import { createYoga } from 'graphql-yoga';
import { Redis } from 'ioredis';
import { createRedisStore, rateLimitDirective } from 'graphql-atomic-rate-limit';

// Without Redis (one process only): store: createMemoryStore(), and no client to close.
const redis = new Redis(process.env.REDIS_URL ?? 'redis://localhost:6379');
const { typeDefs, transformer, envelopPlugin } = rateLimitDirective<{ req: IncomingMessage }>({
  store: createRedisStore({ client: redis }),
  identities: {
    // One counter per account, however the address is spelt: " Ann@Example.COM" and
    // "ann@example.com" log into one account, so as `by: "args.email"` they would be two
    // counters, and every spelling would get 5 more guesses at the same password.
    email: (_context, _info, args) => String(args.email).trim().toLowerCase(),
    // The peer of the socket: right when clients connect directly. Behind a proxy, read
    // docs/directive.md "The `ip` source behind a proxy" before trusting X-Forwarded-For.
    ip: ({ req }) => req.socket.remoteAddress,
  },
});
const appTypeDefs = `
  type Query { ok: Boolean }
  type Mutation {
    login(email: String!, password: String!): Boolean!
      @rateLimit(action: "login-email", window: 900, limit: 5, by: "email")
      @rateLimit(action: "login-ip", window: 3600, limit: 100, by: "ip")
  }
`;
const resolvers = { Mutation: { login: () => false } }; // check the password here
const schema = transformer(makeExecutableSchema({ typeDefs: [typeDefs, appTypeDefs], resolvers }));
const yoga = createYoga({ schema, plugins: [envelopPlugin] });

const server = createServer(yoga.requestListener);
server.listen(Number(process.env.PORT ?? 4000), () => {
  console.log(`Ready at http://localhost:${(server.address() as AddressInfo).port}/graphql`);
});
process.once('SIGTERM', () => server.close(() => void redis.quit()));
