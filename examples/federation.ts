import { ApolloServer } from '@apollo/server';
import { startStandaloneServer } from '@apollo/server/standalone';
import { buildSubgraphSchema } from '@apollo/subgraph';
import { parse } from 'graphql';
import { Redis } from 'ioredis';
import { createRedisStore, rateLimitDirective } from 'graphql-atomic-rate-limit';

type Context = { team?: { id: string } };

const { typeDefs, transformer, plugin } = rateLimitDirective<Context>({
  store: createRedisStore({ client: new Redis(process.env.REDIS_URL ?? 'redis://localhost:6379') }),
});
// The directive stays in this subgraph: composition leaves it out of the supergraph, and
// @inaccessible keeps its enum out of the API that clients see through the router.
const subgraphTypeDefs = `
  extend schema
    @link(url: "https://specs.apollo.dev/federation/v2.3", import: ["@key", "@inaccessible"])
  extend enum RateLimitAlgorithm @inaccessible

  type Query { ok: Boolean }
  type Mutation {
    submitFlag(flag: String!): Boolean! @rateLimit(action: "submit", window: 60, limit: 3)
  }
  type Challenge @key(fields: "id") {
    id: ID!
    hint: String @rateLimit(action: "hint", window: 60, limit: 2)
  }
`;
const resolvers = {
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
