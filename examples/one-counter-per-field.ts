import { makeExecutableSchema } from '@graphql-tools/schema';
import { rateLimitDirective, type RateLimitStore } from 'graphql-atomic-rate-limit';

/**
 * graphql-rate-limit-directive's default key is the field alone: one counter per field, shared
 * by every caller, signed in or not. Here whom a limit counts against is `identify`, whose
 * default (`context.team?.id`) is nobody for an anonymous caller, answered `UNAUTHENTICATED`.
 * To keep the old behaviour while moving, count every hit against one identity.
 */
export function migratedSchema(store: RateLimitStore) {
  const { typeDefs, transformer } = rateLimitDirective({
    store,
    identify: () => 'all',
  });
  return transformer(
    makeExecutableSchema({
      typeDefs: [
        typeDefs,
        /* GraphQL */ `
          type Query {
            ok: Boolean
          }
          type Mutation {
            submitFlag(flag: String!): Boolean @rateLimit(action: "submit", window: 60, limit: 3)
          }
        `,
      ],
      resolvers: { Mutation: { submitFlag: () => false } },
    }),
  );
}
