import { ApolloServer } from '@apollo/server';
import { startStandaloneServer } from '@apollo/server/standalone';
import { buildSubgraphSchema } from '@apollo/subgraph';
import { parse } from 'graphql';
import { Redis } from 'ioredis';
import { createRedisStore, rateLimitDirective } from 'graphql-atomic-rate-limit';

type Context = { team?: { id: string } };

// Without Redis (one process only): store: createMemoryStore(), and no client to close.
const redis = new Redis(process.env.REDIS_URL ?? 'redis://localhost:6379');
const { typeDefs, transformer, plugin } = rateLimitDirective<Context>({
  store: createRedisStore({ client: redis }),
});
// The directive stays in this subgraph: composition leaves it out of the supergraph, and
// @inaccessible keeps its enum out of the API that clients see through the router. @cost and
// @listSize imported from federation v2.9 reach the supergraph, for a gateway's budget.
const subgraphTypeDefs = `
  extend schema
    @link(
      url: "https://specs.apollo.dev/federation/v2.9"
      import: ["@key", "@inaccessible", "@cost", "@listSize"]
    )
  extend enum RateLimitAlgorithm @inaccessible

  type Query {
    challenges(first: Int = 10): [Challenge!]! @listSize(slicingArguments: ["first"])
  }
  type Mutation {
    submitFlag(flag: String!): Boolean! @rateLimit(action: "submit", window: 60, limit: 3)
  }
  type Challenge @key(fields: "id") {
    id: ID!
    hint: String @cost(weight: 5) @rateLimit(action: "hint", window: 60, limit: 2)
  }
`;
const resolvers = {
  Query: {
    challenges: (_: unknown, args: { first: number }) =>
      ['a', 'b', 'c'].slice(0, args.first).map((id) => ({ id })),
  },
  Mutation: { submitFlag: (_: unknown, args: { flag: string }) => args.flag === 'CTF{hi}' },
  Challenge: {
    __resolveReference: (ref: { id: string }) => ref,
    hint: (challenge: { id: string }) => `Look closer at ${challenge.id}`,
  },
};
const schema = transformer(
  buildSubgraphSchema({ typeDefs: parse(`${typeDefs}\n${subgraphTypeDefs}`), resolvers }),
);
const server = new ApolloServer<Context>({ schema, plugins: [plugin] });

void startStandaloneServer(server, {
  listen: { port: Number(process.env.PORT ?? 4000) },
  context: async ({ req }) => {
    const token = req.headers.authorization?.replace(/^Bearer /, '');
    return { team: token ? { id: token } : undefined };
  },
}).then(({ url }) => console.log(`Ready at ${url}`));
process.once('SIGTERM', () => void server.stop().then(() => redis.quit()));
