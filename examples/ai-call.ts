import { makeExecutableSchema } from '@graphql-tools/schema';
import type { GraphQLSchema } from 'graphql';
import { rateLimitDirective, type RateLimitStore } from 'graphql-atomic-rate-limit';

// A call to a paid AI model: at most 20 per team per minute, and at most 2 running at once
// however slowly each one answers. Both limits are decided by one store call: a call refused by
// either takes nothing of the other. A slot is held while `ask` runs (renewed every 10 s of its
// 30 s lease) and freed when it returns or throws, or 30 s after a server that died holding it.
export function aiSchema(
  store: RateLimitStore,
  ask: (prompt: string) => Promise<string>,
): GraphQLSchema {
  const { typeDefs, transformer } = rateLimitDirective({
    store,
    identify: (context: { team?: string }) => context.team,
  });
  const appTypeDefs = `
    type Query {
      summarize(text: String!): String!
        @rateLimit(action: "ai", window: 60, limit: 20)
        @rateLimit(action: "ai-in-flight", window: 30, limit: 2, algorithm: CONCURRENCY)
    }
  `;
  const resolvers = {
    Query: { summarize: (_: unknown, args: { text: string }) => ask(`Summarize: ${args.text}`) },
  };
  return transformer(makeExecutableSchema({ typeDefs: [typeDefs, appTypeDefs], resolvers }));
}
